// Free chunks in power-of-two size classes. Bin k holds free chunks of size [256 * 2^k,
// 256 * 2^(k+1)), ordered by (size, address), so the first chunk of a bin at or above a size is the
// best fit with the lowest address among equals. A bitmap of non-empty bins finds the next class up
// in one instruction. Nothing here allocates: the sets are intrusive.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include <boost/intrusive/set.hpp>

#include "chunk.hpp"

namespace fragscope::bfc {

class BestFitBins {
 public:
  static constexpr int kBinCount = 56;  // 256 B << 55 = 8 EiB: every 64-bit size has a bin

  // floor(log2(size / 256)); the `| 1` maps sizes below 256 to bin 0 without a branch.
  static int BinIndex(std::uint64_t size) {
    return static_cast<int>(std::bit_width((size >> 8) | 1)) - 1;
  }

  BestFitBins() = default;
  BestFitBins(const BestFitBins&) = delete;
  BestFitBins& operator=(const BestFitBins&) = delete;
  ~BestFitBins() { Clear(); }

  void Insert(Chunk* chunk);
  void Erase(Chunk* chunk);
  void Clear();

  // The smallest free chunk of at least `size` bytes, lowest address on ties; nullptr if none.
  Chunk* FindBestFit(std::uint64_t size) const;
  // The largest free chunk; nullptr if none.
  Chunk* Largest() const;

  std::uint64_t free_chunks() const { return count_; }
  std::uint64_t nonempty_mask() const { return nonempty_; }

  // For the invariant checker, the snapshot and histograms: visits bin by bin, ascending.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (int bin = 0; bin < kBinCount; ++bin) {
      for (const Chunk& chunk : bins_[bin]) fn(bin, chunk);
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
  using Bin = boost::intrusive::set<
      Chunk,
      boost::intrusive::member_hook<Chunk, Chunk::BinHook, &Chunk::bin_hook>,
      boost::intrusive::compare<BySizeThenAddress>,
      boost::intrusive::constant_time_size<false>>;

  std::array<Bin, kBinCount> bins_{};
  std::uint64_t nonempty_ = 0;  // bit k set <=> bins_[k] not empty
  std::uint64_t count_ = 0;
};

}  // namespace fragscope::bfc
