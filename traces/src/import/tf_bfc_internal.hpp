// Internal to the TensorFlow BFC log reader.
#pragma once

#include <cstdint>
#include <string>

#include "fragscope/traces/tf_bfc_log.hpp"

namespace fragscope::traces {

// Builds the regions, totals, cross-checks (warnings) and OOM cause of a parsed dump.
void FinalizeTfBfcDump(TfBfcDump& d, const std::string& name);

// The counts of a dump that are still approximate (printed in human-readable units, nothing exact
// in the dump for them: XLA 2026's Stats block and pool line), as "Limit 96389803540 (give or
// take 5368709 bytes), InUse ..."; "" when none.
std::string ApproximateCounts(const TfBfcDump& d);

// Whether a figure known to within `margin` bytes (a human-readable size) agrees with an exact one.
inline bool Agrees(std::uint64_t approximate, std::uint64_t margin, std::uint64_t exact) {
  return (approximate > exact ? approximate - exact : exact - approximate) <= margin;
}

}  // namespace fragscope::traces
