#include "best_fit_bins.hpp"

namespace fragscope::bfc {

void BestFitBins::Insert(Chunk* chunk) {
  const int bin = BinIndex(chunk->size);
  bins_[bin].insert(*chunk);
  nonempty_ |= std::uint64_t{1} << bin;
  ++count_;
}

void BestFitBins::Erase(Chunk* chunk) {
  const int bin = BinIndex(chunk->size);
  Bin& set = bins_[bin];
  set.erase(set.iterator_to(*chunk));
  if (set.empty()) nonempty_ &= ~(std::uint64_t{1} << bin);
  --count_;
}

void BestFitBins::Clear() {
  for (Bin& bin : bins_) bin.clear();
  nonempty_ = 0;
  count_ = 0;
}

Chunk* BestFitBins::FindBestFit(std::uint64_t size) const {
  const int bin = BinIndex(size);
  if (nonempty_ & (std::uint64_t{1} << bin)) {
    // Only this bin can hold chunks of the same class that are still too small.
    auto it = bins_[bin].lower_bound(size, SizeKey{});
    if (it != bins_[bin].end()) return const_cast<Chunk*>(&*it);
  }
  // Every chunk of a higher class fits; the smallest class's first chunk is the best fit.
  const std::uint64_t higher = bin + 1 < kBinCount ? nonempty_ & (~std::uint64_t{0} << (bin + 1)) : 0;
  if (higher == 0) return nullptr;
  return const_cast<Chunk*>(&*bins_[std::countr_zero(higher)].begin());
}

Chunk* BestFitBins::Largest() const {
  if (nonempty_ == 0) return nullptr;
  const int bin = 63 - std::countl_zero(nonempty_);
  return const_cast<Chunk*>(&*bins_[bin].rbegin());
}

}  // namespace fragscope::bfc
