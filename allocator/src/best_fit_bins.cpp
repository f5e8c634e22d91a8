#include "best_fit_bins.hpp"

namespace fragscope::bfc {

void BestFitBins::Clear() {
  for (auto& bin : trees_) {
    for (Tree& tree : bin) tree.clear();
  }
  subs_ = {};
  sub_mask_.fill(0);
  bin_mask_ = 0;
  count_ = 0;
}

}  // namespace fragscope::bfc
