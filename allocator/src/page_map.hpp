// Which pages of a paging region are mapped, and which of those are cached (no live chunk on them).
// Internal to allocator/src.
//
// Bitmaps, not interval sets, because the question the hot path asks — "is every page under this
// chunk mapped?" — is then one word test for any chunk that does not cross a 64-page boundary (128
// MiB at 2 MiB pages), with no pointer chasing. The whole map of a 320 GiB range is 20 KiB. Runs
// (for mapping and unmapping in as few backing calls as possible) are found a word at a time.
//
// PageBits is the bare bitmap over page indices; PageMap adds the region's geometry (address <->
// page), the count of set pages and the high-water page. The mapped pages need the count (it is
// `reserved`); the cached pages change on every Carve and Free, so they are a bare PageBits and are
// counted only on the slow path, when asked.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace fragscope::bfc {

class PageBits {
 public:
  void Reset(std::uint64_t pages) { words_.assign((pages + 63) / 64, 0); }
  std::uint64_t capacity() const { return words_.size() * 64; }

  bool Test(std::uint64_t page) const { return (words_[page >> 6] >> (page & 63)) & 1; }

  // Whether every page in [first, end) is set (true for an empty range).
  bool AllSet(std::uint64_t first, std::uint64_t end) const {
    return ForEachWord(first, end, [this](std::uint64_t w, std::uint64_t mask) {
      return (words_[w] & mask) == mask;
    });
  }

  std::uint64_t CountSet(std::uint64_t first, std::uint64_t end) const {
    std::uint64_t count = 0;
    for (; first < end; first = NextWordStart(first, end)) {
      count += static_cast<std::uint64_t>(std::popcount(words_[first >> 6] & WordMask(first, NextWordStart(first, end))));
    }
    return count;
  }

  // Sets [first, end); returns how many of those pages were not set before.
  std::uint64_t Set(std::uint64_t first, std::uint64_t end) {
    std::uint64_t added = 0;
    for (; first < end; first = NextWordStart(first, end)) {
      std::uint64_t& word = words_[first >> 6];
      const std::uint64_t add = WordMask(first, NextWordStart(first, end)) & ~word;
      added += static_cast<std::uint64_t>(std::popcount(add));
      word |= add;
    }
    return added;
  }

  // Sets [first, end), counting nothing: Free's path (a word, mostly).
  void Fill(std::uint64_t first, std::uint64_t end) {
    ForEachWord(first, end, [this](std::uint64_t w, std::uint64_t mask) {
      words_[w] |= mask;
      return true;
    });
  }

  // Clears [first, end), counting nothing.
  void Clear(std::uint64_t first, std::uint64_t end) {
    ForEachWord(first, end, [this](std::uint64_t w, std::uint64_t mask) {
      words_[w] &= ~mask;
      return true;
    });
  }

  // The hot path's forms, on an inclusive span [first, last] (never empty): one word, mostly.
  bool AllSetSpan(std::uint64_t first, std::uint64_t last) const {
    if ((first ^ last) < 64) [[likely]] {
      const std::uint64_t mask = WordMask(first, last + 1);
      return (words_[first >> 6] & mask) == mask;
    }
    return AllSet(first, last + 1);
  }
  void ClearSpan(std::uint64_t first, std::uint64_t last) {
    if ((first ^ last) < 64) [[likely]] {
      words_[first >> 6] &= ~WordMask(first, last + 1);
      return;
    }
    Clear(first, last + 1);
  }

  // Clears [first, end); returns how many of those pages were set before.
  std::uint64_t ClearCounted(std::uint64_t first, std::uint64_t end) {
    std::uint64_t removed = 0;
    for (; first < end; first = NextWordStart(first, end)) {
      std::uint64_t& word = words_[first >> 6];
      const std::uint64_t hit = word & WordMask(first, NextWordStart(first, end));
      if (hit != 0) {  // without -mpopcnt a popcount is a libgcc call
        removed += static_cast<std::uint64_t>(std::popcount(hit));
        word &= ~hit;
      }
    }
    return removed;
  }

  // Sets the pages of [first, end) that are set in `other` (a bitmap of the same range), counting
  // nothing.
  void SetWhere(const PageBits& other, std::uint64_t first, std::uint64_t end) {
    if (first >= end) return;
    if (SameWord(first, end)) [[likely]] {
      words_[first >> 6] |= other.words_[first >> 6] & WordMask(first, end);
      return;
    }
    ForEachWord(first, end, [this, &other](std::uint64_t w, std::uint64_t mask) {
      words_[w] |= other.words_[w] & mask;
      return true;
    });
  }

  // The first page below `end` whose bit differs from (a & ~b)'s (bitmaps of the same range); `end`
  // if none. A word at a time: the invariant checker's comparison of whole maps.
  std::uint64_t FirstMismatch(const PageBits& a, const PageBits& b, std::uint64_t end) const {
    for (std::uint64_t first = 0; first < end; first = NextWordStart(first, end)) {
      const std::uint64_t w = first >> 6;
      const std::uint64_t diff = (words_[w] ^ (a.words_[w] & ~b.words_[w])) & WordMask(first, NextWordStart(first, end));
      if (diff != 0) return w * 64 + static_cast<std::uint64_t>(std::countr_zero(diff));
    }
    return end;
  }

  // The first page at or after `page` (and before `end`) whose bit is `value`; `end` if none.
  std::uint64_t Next(std::uint64_t page, std::uint64_t end, bool value) const {
    while (page < end) {
      const std::uint64_t word = page >> 6;
      std::uint64_t bits = value ? words_[word] : ~words_[word];
      bits &= ~std::uint64_t{0} << (page & 63);
      if (bits != 0) return std::min(end, word * 64 + static_cast<std::uint64_t>(std::countr_zero(bits)));
      page = (word + 1) * 64;
    }
    return end;
  }

  // One past the highest page in [first, end) whose bit is `value`; `first` if none.
  // RecyclePages scans the cached pages down from the high water, past long stretches of words
  // with no cached page: those cost one load and one compare each.
  std::uint64_t Prev(std::uint64_t first, std::uint64_t end, bool value) const {
    if (end <= first) return first;
    const std::uint64_t flip = value ? 0 : ~std::uint64_t{0};  // makes the wanted bits ones
    const std::uint64_t first_word = first >> 6;
    std::uint64_t word = (end - 1) >> 6;
    std::uint64_t bits = (words_[word] ^ flip) & (~std::uint64_t{0} >> (63 - ((end - 1) & 63)));
    while (bits == 0 && word > first_word) bits = words_[--word] ^ flip;
    if (bits == 0) return first;
    // The highest wanted bit; below `first` (possible only in first's word) means none in range.
    const std::uint64_t hit = word * 64 + 63 - static_cast<std::uint64_t>(std::countl_zero(bits));
    return hit >= first ? hit + 1 : first;
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

  // Calls fn(first, end) for each maximal run of pages in [first, end) whose bit is `value`, in
  // order, while fn returns true.
  template <typename Fn>
  void ForEachRunWhile(std::uint64_t first, std::uint64_t end, bool value, Fn&& fn) const {
    std::uint64_t page = first;
    while (page < end) {
      page = Next(page, end, value);
      if (page >= end) break;
      const std::uint64_t stop = Next(page, end, !value);
      if (!fn(page, stop)) return;
      page = stop;
    }
  }
  // The same for every run.
  template <typename Fn>
  void ForEachRun(std::uint64_t first, std::uint64_t end, bool value, Fn&& fn) const {
    ForEachRunWhile(first, end, value, [&fn](std::uint64_t a, std::uint64_t b) {
      fn(a, b);
      return true;
    });
  }

 private:
  // Calls fn(word index, mask of the range's bits in it) for each word of [first, end), in order,
  // while fn returns true; returns false when fn stopped it. The first and last words get their
  // partial masks, the words between them all-ones masks with no arithmetic: a chunk of gigabytes
  // spans dozens of words.
  template <typename Fn>
  static bool ForEachWord(std::uint64_t first, std::uint64_t end, Fn&& fn) {
    if (first >= end) return true;
    const std::uint64_t w0 = first >> 6, w1 = (end - 1) >> 6;
    if (w0 == w1) return fn(w0, WordMask(first, end));
    if (!fn(w0, ~std::uint64_t{0} << (first & 63))) return false;
    for (std::uint64_t w = w0 + 1; w < w1; ++w) {
      if (!fn(w, ~std::uint64_t{0})) return false;
    }
    return fn(w1, ~std::uint64_t{0} >> (63 - ((end - 1) & 63)));
  }
  // Whether the non-empty range [first, end) lies in one word.
  static bool SameWord(std::uint64_t first, std::uint64_t end) { return (first >> 6) == ((end - 1) >> 6); }
  // Where the part of [first, end) in first's word stops.
  static std::uint64_t NextWordStart(std::uint64_t first, std::uint64_t end) {
    return std::min(end, (first | 63) + 1);
  }
  // The bits of first's word for pages [first, stop), where first < stop <= the word's end.
  // Branch-free: both shifts stay within 0..63.
  static std::uint64_t WordMask(std::uint64_t first, std::uint64_t stop) {
    return (~std::uint64_t{0} << (first & 63)) & (~std::uint64_t{0} >> (63 - ((stop - 1) & 63)));
  }

  std::vector<std::uint64_t> words_;
};

class PageMap {
 public:
  PageMap() = default;
  // `page_bytes` is a power of two; `range_bytes` a multiple of it.
  void Reset(std::uint64_t base, std::uint64_t range_bytes, std::uint64_t page_bytes) {
    base_ = base;
    page_shift_ = std::countr_zero(page_bytes);
    page_mask_ = page_bytes - 1;
    pages_ = range_bytes >> page_shift_;
    bits_.Reset(pages_);
    mapped_pages_ = 0;
    high_water_ = 0;
    SetPrefix(0);
  }

  const PageBits& bits() const { return bits_; }
  std::uint64_t page_bytes() const { return page_mask_ + 1; }
  std::uint64_t pages() const { return pages_; }
  std::uint64_t mapped_pages() const { return mapped_pages_; }
  std::uint64_t mapped_bytes() const { return mapped_pages_ << page_shift_; }
  // One past the highest page ever mapped: scans for mapped pages stop here.
  std::uint64_t high_water() const { return high_water_; }

  // Page index range [first, end) of the pages that bytes [address, address + bytes) touch.
  std::uint64_t FirstPage(std::uint64_t address) const { return (address - base_) >> page_shift_; }
  std::uint64_t EndPage(std::uint64_t address, std::uint64_t bytes) const {
    return (address - base_ + bytes + page_mask_) >> page_shift_;
  }
  // Page index range of the pages lying wholly inside [address, address + bytes) (may be empty).
  std::uint64_t FirstWholePage(std::uint64_t address) const { return (address - base_ + page_mask_) >> page_shift_; }
  std::uint64_t EndWholePage(std::uint64_t address, std::uint64_t bytes) const {
    return (address - base_ + bytes) >> page_shift_;
  }
  std::uint64_t AddressOf(std::uint64_t page) const { return base_ + (page << page_shift_); }

  bool IsMapped(std::uint64_t page) const { return bits_.Test(page); }
  // The pages that bytes [address, address + bytes) touch, bytes > 0, as an inclusive span: what the
  // hot path computes (fewer instructions than FirstPage and EndPage).
  struct Span {
    std::uint64_t first, last;
  };
  Span SpanOf(std::uint64_t address, std::uint64_t bytes) const {
    const std::uint64_t offset = address - base_;
    return {offset >> page_shift_, (offset + bytes - 1) >> page_shift_};
  }
  // Whether every page that [address, address + bytes) touches is mapped (bytes > 0). A chunk that
  // ends inside the mapped prefix is covered by one compare (what a warm sequence sees: its pages
  // stay mapped); otherwise one word test for most chunks.
  bool Covers(std::uint64_t address, std::uint64_t bytes) const {
    if (address + bytes <= prefix_end_) [[likely]] return true;
    const Span span = SpanOf(address, bytes);
    return bits_.AllSetSpan(span.first, span.last);
  }
  // Every page below this one is mapped, and this one is not (or is the range's end).
  std::uint64_t mapped_prefix() const { return prefix_; }
  std::uint64_t CountSet(std::uint64_t first, std::uint64_t end) const { return bits_.CountSet(first, end); }

  // Mapping and unmapping are the slow path's: they keep the mapped prefix exact.
  void Set(std::uint64_t first, std::uint64_t end) {
    mapped_pages_ += bits_.Set(first, end);
    if (first < end) high_water_ = std::max(high_water_, end);
    if (first <= prefix_ && prefix_ < end) SetPrefix(bits_.Next(end, pages_, false));
  }
  void Clear(std::uint64_t first, std::uint64_t end) {
    mapped_pages_ -= bits_.ClearCounted(first, end);
    if (first < end && first < prefix_) SetPrefix(first);
  }

  template <typename Fn>
  void ForEachRun(std::uint64_t first, std::uint64_t end, bool mapped, Fn&& fn) const {
    bits_.ForEachRun(first, end, mapped, fn);
  }
  template <typename Fn>
  void ForEachRunWhile(std::uint64_t first, std::uint64_t end, bool mapped, Fn&& fn) const {
    bits_.ForEachRunWhile(first, end, mapped, fn);
  }

 private:
  std::uint64_t base_ = 0;
  int page_shift_ = 21;
  std::uint64_t page_mask_ = (std::uint64_t{1} << 21) - 1;
  std::uint64_t pages_ = 0;
  PageBits bits_;
  std::uint64_t mapped_pages_ = 0;
  std::uint64_t high_water_ = 0;
  void SetPrefix(std::uint64_t page) {
    prefix_ = page;
    prefix_end_ = base_ + (page << page_shift_);
  }
  std::uint64_t prefix_ = 0;      // pages [0, prefix_) are all mapped
  std::uint64_t prefix_end_ = 0;  // the address where the mapped prefix ends
};

}  // namespace fragscope::bfc
