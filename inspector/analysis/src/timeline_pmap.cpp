#include "timeline_pmap.hpp"

#include <algorithm>
#include <cstring>

namespace fragscope::analysis::timeline_detail {
namespace {

using Leaf = PersistentMap::Leaf;

const MapEntry* LowerBound(const Leaf& leaf, std::uint64_t key) {
  return std::lower_bound(leaf.entries, leaf.entries + leaf.count, key,
                          [](const MapEntry& e, std::uint64_t k) { return e.key < k; });
}
const MapEntry* UpperBound(const Leaf& leaf, std::uint64_t key) {
  return std::upper_bound(leaf.entries, leaf.entries + leaf.count, key,
                          [](std::uint64_t k, const MapEntry& e) { return k < e.key; });
}

}  // namespace

std::size_t PersistentMap::LeafFor(std::uint64_t key) const {
  auto it = std::upper_bound(firsts_.begin(), firsts_.end(), key);
  return it == firsts_.begin() ? 0 : static_cast<std::size_t>(it - firsts_.begin()) - 1;
}

std::shared_ptr<Leaf> PersistentMap::NewLeaf() {
  fresh_bytes_ += kLeafBytes;
  return std::make_shared<Leaf>();
}

Leaf& PersistentMap::Writable(std::size_t leaf) {
  if (leaves_[leaf].use_count() > 1) {
    auto copy = NewLeaf();
    *copy = *leaves_[leaf];
    leaves_[leaf] = std::move(copy);
  }
  return *leaves_[leaf];
}

void PersistentMap::RemoveLeaf(std::size_t leaf) {
  leaves_.erase(leaves_.begin() + static_cast<std::ptrdiff_t>(leaf));
  firsts_.erase(firsts_.begin() + static_cast<std::ptrdiff_t>(leaf));
}

const MapEntry* PersistentMap::Find(std::uint64_t key) const {
  if (leaves_.empty()) return nullptr;
  const Leaf& leaf = *leaves_[LeafFor(key)];
  const MapEntry* e = LowerBound(leaf, key);
  return e != leaf.entries + leaf.count && e->key == key ? e : nullptr;
}

const MapEntry* PersistentMap::Floor(std::uint64_t key) const {
  if (leaves_.empty() || key < firsts_.front()) return nullptr;
  const Leaf& leaf = *leaves_[LeafFor(key)];
  return UpperBound(leaf, key) - 1;  // the leaf's first key is <= key
}

const MapEntry* PersistentMap::Ceil(std::uint64_t key) const {
  if (leaves_.empty()) return nullptr;
  const std::size_t i = LeafFor(key);
  const Leaf& leaf = *leaves_[i];
  const MapEntry* e = LowerBound(leaf, key);
  if (e != leaf.entries + leaf.count) return e;
  return i + 1 < leaves_.size() ? &leaves_[i + 1]->entries[0] : nullptr;
}

PersistentMap::Position PersistentMap::Locate(std::uint64_t key) const {
  Position at;
  if (leaves_.empty()) return at;
  at.leaf = LeafFor(key);
  const Leaf& leaf = *leaves_[at.leaf];
  const MapEntry* e = LowerBound(leaf, key);
  at.index = static_cast<std::uint32_t>(e - leaf.entries);
  if (e != leaf.entries + leaf.count) {
    at.ceil = e;
  } else if (at.leaf + 1 < leaves_.size()) {
    at.ceil = &leaves_[at.leaf + 1]->entries[0];
  }
  if (at.ceil != nullptr && at.ceil->key == key) {
    at.floor = at.ceil;
  } else if (at.index > 0) {
    at.floor = e - 1;
  }  // else key is below the leaf's first, which only leaf 0 allows: nothing below it
  return at;
}

void PersistentMap::InsertAt(const Position& at, std::uint64_t key, std::uint64_t value) {
  if (leaves_.empty()) {
    auto leaf = NewLeaf();
    leaf->entries[0] = {key, value};
    leaf->count = 1;
    leaves_.push_back(std::move(leaf));
    firsts_.push_back(key);
    size_ = 1;
    return;
  }
  std::size_t i = at.leaf;
  std::uint32_t index = at.index;
  if (leaves_[i]->count == kLeafCapacity) {
    // Split in halves; the new leaf takes the upper half, and the key goes where it sorts (at the
    // lower half's end when it sorts just below the upper half's first).
    Leaf& full = Writable(i);
    auto upper = NewLeaf();
    constexpr std::uint32_t kHalf = kLeafCapacity / 2;
    std::memcpy(upper->entries, full.entries + kHalf, (kLeafCapacity - kHalf) * sizeof(MapEntry));
    upper->count = kLeafCapacity - kHalf;
    full.count = kHalf;
    const std::uint64_t upper_first = upper->entries[0].key;
    leaves_.insert(leaves_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(upper));
    firsts_.insert(firsts_.begin() + static_cast<std::ptrdiff_t>(i) + 1, upper_first);
    if (index > kHalf) {
      ++i;
      index -= kHalf;
    }
  }
  Leaf& leaf = Writable(i);
  MapEntry* pos = leaf.entries + index;
  std::memmove(pos + 1, pos, static_cast<std::size_t>(leaf.count - index) * sizeof(MapEntry));
  *pos = {key, value};
  ++leaf.count;
  firsts_[i] = leaf.entries[0].key;
  ++size_;
}

bool PersistentMap::Insert(std::uint64_t key, std::uint64_t value) {
  const Position at = Locate(key);
  if (at.floor != nullptr && at.floor->key == key) return false;
  InsertAt(at, key, value);
  return true;
}

bool PersistentMap::Erase(std::uint64_t key) {
  std::uint64_t value = 0;
  return Take(key, &value);
}

bool PersistentMap::Take(std::uint64_t key, std::uint64_t* value) {
  if (leaves_.empty()) return false;
  const std::size_t i = LeafFor(key);
  std::uint32_t index = 0;
  {
    const Leaf& leaf = *leaves_[i];
    const MapEntry* e = LowerBound(leaf, key);
    if (e == leaf.entries + leaf.count || e->key != key) return false;
    *value = e->value;
    index = static_cast<std::uint32_t>(e - leaf.entries);
  }
  Leaf& leaf = Writable(i);
  MapEntry* pos = leaf.entries + index;
  std::memmove(pos, pos + 1, static_cast<std::size_t>(leaf.count - index - 1) * sizeof(MapEntry));
  --leaf.count;
  --size_;
  if (leaf.count == 0) {
    RemoveLeaf(i);
    return true;
  }
  firsts_[i] = leaf.entries[0].key;
  // Keep leaves at least a quarter full: merge a thin leaf into a neighbour that has room.
  if (leaf.count <= kLeafCapacity / 4) {
    constexpr std::uint32_t kRoom = kLeafCapacity * 3 / 4;
    std::size_t left = leaves_.size();
    if (i + 1 < leaves_.size() && leaf.count + leaves_[i + 1]->count <= kRoom) left = i;
    else if (i > 0 && leaf.count + leaves_[i - 1]->count <= kRoom) left = i - 1;
    if (left != leaves_.size()) {
      Leaf& into = Writable(left);
      const Leaf& from = *leaves_[left + 1];
      std::memcpy(into.entries + into.count, from.entries, from.count * sizeof(MapEntry));
      into.count += from.count;
      RemoveLeaf(left + 1);
    }
  }
  return true;
}

PersistentMap::Frozen PersistentMap::Freeze() {
  fresh_bytes_ = 0;
  return Frozen(leaves_.begin(), leaves_.end());
}

}  // namespace fragscope::analysis::timeline_detail
