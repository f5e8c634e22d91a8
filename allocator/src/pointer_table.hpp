// Address -> live chunk, in O(1): an open-addressing hash table with linear probing and
// backward-shift deletion. Only in-use chunks are here (free chunks are found through their
// neighbours and the bins). Insert never allocates; the owner grows the table on its slow path when
// NeedsGrowth() says so, before inserting.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "chunk.hpp"

namespace fragscope::bfc {

class PointerTable {
 public:
  explicit PointerTable(std::size_t initial_capacity = 1024) { Rehash(initial_capacity); }

  // True when one more insert would push the load factor above 1/2.
  bool NeedsGrowth() const { return (size_ + 1) * 2 > slots_.size(); }
  void Grow() { Rehash(slots_.size() * 2); }

  void Insert(Chunk* chunk) {
    std::size_t i = Home(chunk->address);
    while (slots_[i].chunk != nullptr) i = (i + 1) & mask_;
    slots_[i] = Slot{chunk->address, chunk};
    ++size_;
  }

  Chunk* Find(std::uint64_t address) const {
    for (std::size_t i = Home(address);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.chunk == nullptr || slot.address == address) return slot.chunk;
    }
  }

  // Removes and returns the chunk at `address`; nullptr when absent.
  Chunk* Erase(std::uint64_t address) {
    std::size_t i = Home(address);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].chunk == nullptr) return nullptr;
      if (slots_[i].address == address) break;
    }
    Chunk* found = slots_[i].chunk;
    // Backward shift: pull later members of the probe run into the hole so lookups never need
    // tombstones.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; slots_[j].chunk != nullptr; j = (j + 1) & mask_) {
      const std::size_t home = Home(slots_[j].address);
      // Move slots_[j] into the hole when its home is not in the cyclic range (hole, j].
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return found;
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }

  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& slot : slots_) if (slot.chunk != nullptr) fn(*slot.chunk);
  }

 private:
  // The address sits beside the pointer so that probing never touches a chunk record: one cache
  // line per lookup, not one per probed slot.
  struct Slot {
    std::uint64_t address = 0;
    Chunk* chunk = nullptr;  // nullptr: empty slot
  };

  std::size_t Home(std::uint64_t address) const {
    // Fibonacci hashing of the address in 256-byte units (the low 8 bits are always zero).
    return static_cast<std::size_t>(((address >> 8) * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }

  void Rehash(std::size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(capacity));
    size_ = 0;
    for (const Slot& slot : old) if (slot.chunk != nullptr) Insert(slot.chunk);
  }

  std::vector<Slot> slots_;  // capacity is a power of two
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t size_ = 0;
};

// Chunk records come from slabs and return to a free list, so splitting and merging on the hot path
// never call the heap; the owner refills on its slow path when Empty().
class ChunkPool {
 public:
  bool Empty() const { return free_ == nullptr; }
  Chunk* Take() {
    Chunk* chunk = free_;
    free_ = chunk->next;
    *chunk = Chunk{};
    return chunk;
  }
  // A record as it was given back, for a caller that sets every field a free chunk needs
  // (SplitOff): zeroing 104 bytes it then overwrites cost a dozen stores a split.
  Chunk* TakeUninitialized() {
    Chunk* chunk = free_;
    free_ = chunk->next;
    return chunk;
  }
  void Give(Chunk* chunk) {
    chunk->next = free_;
    free_ = chunk;
  }
  void Refill() {
    const std::size_t count = slabs_.empty() ? 256 : 1024 << std::min<std::size_t>(slabs_.size(), 6);
    slabs_.push_back(std::make_unique<Chunk[]>(count));
    Chunk* slab = slabs_.back().get();
    for (std::size_t i = count; i-- > 0;) Give(&slab[i]);
  }

 private:
  std::vector<std::unique_ptr<Chunk[]>> slabs_;
  Chunk* free_ = nullptr;
};

}  // namespace fragscope::bfc
