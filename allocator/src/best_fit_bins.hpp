// Free chunks by size, for best fit. The size classes are powers of two (docs/allocator.md, "How BFC works here"): class k
// holds free chunks of size [256 * 2^k, 256 * 2^(k+1)). Each class is split into 64 linear
// sub-classes (fewer for the smallest classes, which hold fewer distinct sizes). Each sub-class is
// ordered by (size, address): a sorted array of up to eight chunks, or an intrusive tree once more
// arrive. Sub-classes partition the sizes in order, so the first chunk at or above a size in its
// sub-class, or else the first chunk of the next non-empty sub-class, is still the exact best fit
// with the lowest address among equals — while each sub-class stays a handful of chunks, which is
// what keeps the hot path's cache misses down.
// Two levels of bitmaps find the next non-empty sub-class in two instructions. Nothing here
// allocates.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include <boost/intrusive/set.hpp>

#include "chunk.hpp"

namespace fragscope::bfc {

class BestFitBins {
 public:
  static constexpr int kBinCount = 56;  // 256 B << 55 = 8 EiB: every 64-bit size has a class
  static constexpr int kSubBits = 6;
  static constexpr int kSubCount = 1 << kSubBits;

  // The power-of-two class: floor(log2(size / 256)); `| 1` maps sizes below 256 to class 0.
  static int BinIndex(std::uint64_t size) {
    return static_cast<int>(std::bit_width((size >> 8) | 1)) - 1;
  }
  // The sub-class inside BinIndex(size): the next kSubBits bits after the leading one.
  static int SubIndex(std::uint64_t size, int bin) {
    const std::uint64_t units = (size >> 8) | 1;
    const int shift = bin > kSubBits ? bin - kSubBits : 0;
    return static_cast<int>((units >> shift) - (std::uint64_t{1} << (bin - shift)));
  }

  BestFitBins() = default;
  BestFitBins(const BestFitBins&) = delete;
  BestFitBins& operator=(const BestFitBins&) = delete;
  ~BestFitBins() { Clear(); }

  [[gnu::always_inline]] void Insert(Chunk* chunk) {
    const int bin = BinIndex(chunk->size);
    const int sub = SubIndex(chunk->size, bin);
    chunk->bin_class = static_cast<std::uint16_t>(bin);
    chunk->bin_sub = static_cast<std::uint16_t>(sub);
    SubClass& sc = subs_[bin][sub];
    if (!sc.in_tree) {
      if (sc.count < kSmall) [[likely]] {
        int i = sc.count;  // insertion sort from the top: a few pointer moves
        for (; i > 0 && Less(*chunk, *sc.items[i - 1]); --i) sc.items[i] = sc.items[i - 1];
        sc.items[i] = chunk;
        ++sc.count;
      } else {
        // The array is full: this sub-class moves to its tree until the tree empties.
        Tree& tree = trees_[bin][sub];
        for (int i = 0; i < sc.count; ++i) tree.insert(tree.end(), *sc.items[i]);
        sc.count = 0;
        sc.in_tree = true;
        tree.insert(*chunk);
      }
    } else {
      trees_[bin][sub].insert(*chunk);
    }
    sub_mask_[bin] |= std::uint64_t{1} << sub;
    bin_mask_ |= std::uint64_t{1} << bin;
    ++count_;
  }

  // `chunk` must be binned, with the size it was inserted with.
  [[gnu::always_inline]] void Erase(Chunk* chunk) {
    const int bin = chunk->bin_class;
    const int sub = chunk->bin_sub;
    SubClass& sc = subs_[bin][sub];
    bool now_empty;
    if (!sc.in_tree) [[likely]] {
      int i = 0;
      while (i < sc.count && sc.items[i] != chunk) ++i;
      if (i == sc.count) return;  // not binned here: a caller's bug, left for the invariant checker
      for (; i + 1 < sc.count; ++i) sc.items[i] = sc.items[i + 1];
      now_empty = --sc.count == 0;
    } else {
      Tree& tree = trees_[bin][sub];
      tree.erase(tree.iterator_to(*chunk));
      now_empty = tree.empty();
      if (now_empty) sc.in_tree = false;
    }
    if (now_empty) {
      sub_mask_[bin] &= ~(std::uint64_t{1} << sub);
      if (sub_mask_[bin] == 0) bin_mask_ &= ~(std::uint64_t{1} << bin);
    }
    --count_;
  }

  void Clear();

  // The smallest free chunk of at least `size` bytes, lowest address on ties; nullptr if none.
  Chunk* FindBestFit(std::uint64_t size) const {
    const int bin = BinIndex(size);
    const int sub = SubIndex(size, bin);
    const std::uint64_t subs = sub_mask_[bin];
    if (subs & (std::uint64_t{1} << sub)) {
      // Only this sub-class can hold chunks that are still too small.
      const SubClass& sc = subs_[bin][sub];
      if (!sc.in_tree) [[likely]] {
        for (int i = 0; i < sc.count; ++i) {
          if (sc.items[i]->size >= size) return sc.items[i];
        }
      } else {
        const Tree& tree = trees_[bin][sub];
        auto it = tree.lower_bound(size, SizeKey{});
        if (it != tree.end()) return const_cast<Chunk*>(&*it);
      }
    }
    // Every chunk of a higher sub-class fits; the first chunk of the lowest one is the best fit.
    const std::uint64_t higher_subs = sub + 1 < kSubCount ? subs & (~std::uint64_t{0} << (sub + 1)) : 0;
    if (higher_subs != 0) return First(bin, std::countr_zero(higher_subs));
    const std::uint64_t higher_bins = bin + 1 < kBinCount ? bin_mask_ & (~std::uint64_t{0} << (bin + 1)) : 0;
    if (higher_bins == 0) return nullptr;
    const int next = std::countr_zero(higher_bins);
    return First(next, std::countr_zero(sub_mask_[next]));
  }

  // The largest free chunk; nullptr if none.
  Chunk* Largest() const {
    if (bin_mask_ == 0) return nullptr;
    const int bin = 63 - std::countl_zero(bin_mask_);
    const int sub = 63 - std::countl_zero(sub_mask_[bin]);
    const SubClass& sc = subs_[bin][sub];
    return sc.in_tree ? const_cast<Chunk*>(&*trees_[bin][sub].rbegin()) : sc.items[sc.count - 1];
  }

  std::uint64_t free_chunks() const { return count_; }
  // Bit k set <=> power-of-two class k holds a free chunk.
  std::uint64_t nonempty_mask() const { return bin_mask_; }
  std::uint64_t nonempty_subs(int bin) const { return sub_mask_[bin]; }

  // For the invariant checker, the snapshot and histograms: visits class by class, sub-class by
  // sub-class, ascending: fn(bin, sub, chunk).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    // Only the sub-classes the bitmaps mark: 3,584 empty trees per call made the invariant checker
    // and LargestMappedFree (every Stats() under paging) slow. A chunk in an unmarked tree is still
    // caught: the invariant checker compares the chunks visited here with the free chunks of the
    // regions.
    for (std::uint64_t bins = bin_mask_; bins != 0; bins &= bins - 1) {
      const int bin = std::countr_zero(bins);
      for (std::uint64_t subs = sub_mask_[bin]; subs != 0; subs &= subs - 1) {
        const int sub = std::countr_zero(subs);
        const SubClass& sc = subs_[bin][sub];
        if (sc.in_tree) {
          for (const Chunk& chunk : trees_[bin][sub]) fn(bin, sub, chunk);
        } else {
          for (int i = 0; i < sc.count; ++i) fn(bin, sub, *sc.items[i]);
        }
      }
    }
  }

 private:
  struct BySizeThenAddress {
    bool operator()(const Chunk& a, const Chunk& b) const {
      return a.size < b.size || (a.size == b.size && a.address < b.address);
    }
  };
  struct SizeKey {
    bool operator()(const Chunk& a, std::uint64_t size) const { return a.size < size; }
    bool operator()(std::uint64_t size, const Chunk& a) const { return size < a.size; }
  };
  using Tree = boost::intrusive::set<
      Chunk,
      boost::intrusive::member_hook<Chunk, Chunk::BinHook, &Chunk::bin_hook>,
      boost::intrusive::compare<BySizeThenAddress>,
      boost::intrusive::constant_time_size<false>>;

  Chunk* First(int bin, int sub) const {
    const SubClass& sc = subs_[bin][sub];
    return sc.in_tree ? const_cast<Chunk*>(&*trees_[bin][sub].begin()) : sc.items[0];
  }
  static bool Less(const Chunk& a, const Chunk& b) { return BySizeThenAddress{}(a, b); }

  // A sub-class's first kSmall free chunks sit in a sorted array: inserting and erasing them is a few
  // pointer moves, where a tree insert or erase (with rebalancing) was a hundred instructions or
  // more, and real sequences keep a handful of free chunks per sub-class. Only when more arrive do
  // they all go into the sub-class's tree, which keeps many equal sizes at O(log n), until it empties.
  static constexpr int kSmall = 8;
  struct SubClass {
    std::array<Chunk*, kSmall> items{};  // sorted by (size, address), while !in_tree
    std::uint8_t count = 0;
    bool in_tree = false;
  };

  std::array<std::array<Tree, kSubCount>, kBinCount> trees_{};
  std::array<std::array<SubClass, kSubCount>, kBinCount> subs_{};
  std::array<std::uint64_t, kBinCount> sub_mask_{};  // bit s of [k]: sub-class (k, s) not empty
  std::uint64_t bin_mask_ = 0;                        // bit k: class k not empty
  std::uint64_t count_ = 0;
};

}  // namespace fragscope::bfc
