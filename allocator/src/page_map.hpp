// Which pages of a paging region are mapped: one bit per page of the region's address range.
// Internal to allocator/src.
//
// A bitmap, not an interval set, because the question the hot path asks — "is every page under this
// chunk mapped?" — is then one or two word tests for any chunk up to 64 pages (128 MiB at 2 MiB
// pages), with no pointer chasing. The whole map of a 320 GiB range is 20 KiB. Runs (for mapping and
// unmapping in as few backing calls as possible) are found a word at a time.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace fragscope::bfc {

class PageMap {
 public:
  PageMap() = default;
  // `page_bytes` is a power of two; `range_bytes` a multiple of it.
  void Reset(std::uint64_t base, std::uint64_t range_bytes, std::uint64_t page_bytes) {
    base_ = base;
    page_shift_ = std::countr_zero(page_bytes);
    pages_ = range_bytes >> page_shift_;
    words_.assign((pages_ + 63) / 64, 0);
    mapped_pages_ = 0;
    high_water_ = 0;
  }

  std::uint64_t page_bytes() const { return std::uint64_t{1} << page_shift_; }
  std::uint64_t pages() const { return pages_; }
  std::uint64_t mapped_pages() const { return mapped_pages_; }
  std::uint64_t mapped_bytes() const { return mapped_pages_ << page_shift_; }
  // One past the highest page ever mapped: scans for mapped pages stop here.
  std::uint64_t high_water() const { return high_water_; }

  // Page index range [first, end) of the pages that bytes [address, address + bytes) touch.
  std::uint64_t FirstPage(std::uint64_t address) const { return (address - base_) >> page_shift_; }
  std::uint64_t EndPage(std::uint64_t address, std::uint64_t bytes) const {
    return (address - base_ + bytes + page_bytes() - 1) >> page_shift_;
  }
  // Page index range of the pages lying wholly inside [address, address + bytes) (may be empty).
  std::uint64_t FirstWholePage(std::uint64_t address) const {
    return (address - base_ + page_bytes() - 1) >> page_shift_;
  }
  std::uint64_t EndWholePage(std::uint64_t address, std::uint64_t bytes) const {
    return (address - base_ + bytes) >> page_shift_;
  }
  std::uint64_t AddressOf(std::uint64_t page) const { return base_ + (page << page_shift_); }

  bool IsMapped(std::uint64_t page) const { return (words_[page >> 6] >> (page & 63)) & 1; }

  // Whether every page that [address, address + bytes) touches is mapped. The hot path's one
  // question: most chunks lie in one word of the map.
  bool Covers(std::uint64_t address, std::uint64_t bytes) const {
    return AllSet(FirstPage(address), EndPage(address, bytes));
  }

  bool AllSet(std::uint64_t first, std::uint64_t end) const {
    while (first < end) {
      const std::uint64_t word = first >> 6;
      const std::uint64_t stop = std::min(end, (word + 1) * 64);
      const std::uint64_t mask = Mask(first & 63, stop - word * 64);
      if ((words_[word] & mask) != mask) return false;
      first = stop;
    }
    return true;
  }

  std::uint64_t CountSet(std::uint64_t first, std::uint64_t end) const {
    std::uint64_t count = 0;
    while (first < end) {
      const std::uint64_t word = first >> 6;
      const std::uint64_t stop = std::min(end, (word + 1) * 64);
      count += static_cast<std::uint64_t>(std::popcount(words_[word] & Mask(first & 63, stop - word * 64)));
      first = stop;
    }
    return count;
  }

  void Set(std::uint64_t first, std::uint64_t end) {
    mapped_pages_ += (end - first) - CountSet(first, end);
    Apply(first, end, true);
    high_water_ = std::max(high_water_, end);
  }
  // One pass, and a popcount only for words that held set bits: on Carve's path the pages being
  // cleared are usually not set (without -mpopcnt a popcount is a libgcc call).
  void Clear(std::uint64_t first, std::uint64_t end) {
    while (first < end) {
      const std::uint64_t word = first >> 6;
      const std::uint64_t stop = std::min(end, (word + 1) * 64);
      const std::uint64_t hit = words_[word] & Mask(first & 63, stop - word * 64);
      if (hit != 0) {
        words_[word] &= ~hit;
        mapped_pages_ -= static_cast<std::uint64_t>(std::popcount(hit));
      }
      first = stop;
    }
  }

  // Sets the bits of [first, end) that are set in `other` (a map of the same range).
  void SetWhere(const PageMap& other, std::uint64_t first, std::uint64_t end) {
    while (first < end) {
      const std::uint64_t word = first >> 6;
      const std::uint64_t stop = std::min(end, (word + 1) * 64);
      const std::uint64_t add = other.words_[word] & Mask(first & 63, stop - word * 64) & ~words_[word];
      if (add != 0) {
        words_[word] |= add;
        mapped_pages_ += static_cast<std::uint64_t>(std::popcount(add));
        high_water_ = std::max(high_water_, word * 64 + 64 - static_cast<std::uint64_t>(std::countl_zero(add)));
      }
      first = stop;
    }
  }

  // The first page below `end` whose bit differs from (a & ~b)'s (maps of the same range); `end`
  // if none. A word at a time: the invariant checker's comparison of whole maps.
  std::uint64_t FirstMismatch(const PageMap& a, const PageMap& b, std::uint64_t end) const {
    for (std::uint64_t word = 0; word * 64 < end; ++word) {
      const std::uint64_t diff = (words_[word] ^ (a.words_[word] & ~b.words_[word])) & Mask(0, std::min<std::uint64_t>(64, end - word * 64));
      if (diff != 0) return word * 64 + static_cast<std::uint64_t>(std::countr_zero(diff));
    }
    return end;
  }

  // Calls fn(first, end) for each maximal run of set pages in [first, end), from the top down,
  // while fn returns true.
  template <typename Fn>
  void ForEachSetRunDown(std::uint64_t first, std::uint64_t end, Fn&& fn) const {
    std::uint64_t page = end;
    while (page > first) {
      const std::uint64_t top = Prev(first, page, true);
      if (top == first) break;
      const std::uint64_t bottom = Prev(first, top, false);
      if (!fn(bottom, top)) return;
      page = bottom;
    }
  }

  // Calls fn(first, end) for each maximal run of pages in [first, end) whose bit is `mapped`.
  template <typename Fn>
  void ForEachRun(std::uint64_t first, std::uint64_t end, bool mapped, Fn&& fn) const {
    std::uint64_t page = first;
    while (page < end) {
      page = Next(page, end, mapped);
      if (page >= end) break;
      const std::uint64_t stop = Next(page, end, !mapped);
      fn(page, stop);
      page = stop;
    }
  }

 private:
  // Bits [from, to) of a word, 0 <= from < to <= 64.
  static std::uint64_t Mask(std::uint64_t from, std::uint64_t to) {
    const std::uint64_t upper = to == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << to) - 1;
    return upper & ~((std::uint64_t{1} << from) - 1);
  }

  // The first page at or after `page` (and before `end`) whose bit is `value`; `end` if none.
  std::uint64_t Next(std::uint64_t page, std::uint64_t end, bool value) const {
    while (page < end) {
      const std::uint64_t word = page >> 6;
      std::uint64_t bits = value ? words_[word] : ~words_[word];
      bits &= ~((std::uint64_t{1} << (page & 63)) - 1);
      if (bits != 0) return std::min(end, word * 64 + static_cast<std::uint64_t>(std::countr_zero(bits)));
      page = (word + 1) * 64;
    }
    return end;
  }

  // One past the highest page in [first, end) whose bit is `value`; `first` if none.
  std::uint64_t Prev(std::uint64_t first, std::uint64_t end, bool value) const {
    while (end > first) {
      const std::uint64_t last = end - 1;
      const std::uint64_t word = last >> 6;
      std::uint64_t bits = value ? words_[word] : ~words_[word];
      bits &= Mask(0, (last & 63) + 1);
      if (bits != 0) {
        const std::uint64_t hit = word * 64 + 63 - static_cast<std::uint64_t>(std::countl_zero(bits));
        return hit >= first ? hit + 1 : first;
      }
      end = word * 64;
    }
    return first;
  }

  void Apply(std::uint64_t first, std::uint64_t end, bool value) {
    while (first < end) {
      const std::uint64_t word = first >> 6;
      const std::uint64_t stop = std::min(end, (word + 1) * 64);
      const std::uint64_t mask = Mask(first & 63, stop - word * 64);
      if (value) words_[word] |= mask;
      else words_[word] &= ~mask;
      first = stop;
    }
  }

  std::uint64_t base_ = 0;
  int page_shift_ = 21;
  std::uint64_t pages_ = 0;
  std::vector<std::uint64_t> words_;
  std::uint64_t mapped_pages_ = 0;
  std::uint64_t high_water_ = 0;
};

}  // namespace fragscope::bfc
