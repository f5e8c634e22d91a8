// Internal to the TensorFlow BFC log reader.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fragscope/traces/tf_bfc_log.hpp"

namespace fragscope::traces {

// Builds the regions, totals, cross-checks (warnings) and OOM cause of a parsed dump.
void FinalizeTfBfcDump(TfBfcDump& d, const std::string& name);

// The counts of a dump that are still approximate (printed in human-readable units, nothing exact
// in the dump for them: XLA 2026's Stats block and pool line), as "Limit 96389803540 (give or
// take 6417285 bytes), InUse ..."; "" when none.
std::string ApproximateCounts(const TfBfcDump& d);

// A dump's warnings ("name:LINE: ...") and errors, as the state is built.
struct Warner {
  TfBfcDump& d;
  const std::string& name;
  void operator()(std::size_t line, const std::string& message) const {
    d.warnings.push_back(fmt::format("{}:{}: {}", name, line, message));
  }
  // What makes the state meaningless (ReadTfBfcLog refuses the log).
  void Error(std::size_t line, std::string message) const { d.errors.push_back({line, std::move(message)}); }
};

// TensorFlow's BinNumForSize: 21 bins, 256 B << index, the last one open-ended.
std::uint64_t TfBinSize(std::uint64_t bytes);

// Whether a figure known to within `margin` bytes (a human-readable size) agrees with an exact one.
inline bool Agrees(std::uint64_t approximate, std::uint64_t margin, std::uint64_t exact) {
  return (approximate > exact ? approximate - exact : exact - approximate) <= margin;
}

// Whether the dump's "Chunks of size" summary lines are whole: its "Sum Total of in-use chunks"
// agrees with their sum (within its 2 decimals). A paste may be cut: then they are a lower bound.
inline bool SizeSummaryWhole(const TfBfcDump& d) {
  return d.summary_lines > 0 && d.summary_total && Agrees(*d.summary_total, d.summary_total_margin, d.summary_in_use);
}

// tf_bfc_bins.cpp. The summary of in-use chunks by size against Stats InUse and the chunk list
// (warnings where they disagree; an error where its lines add up to more than 4 EiB).
void CheckSizeSummary(TfBfcDump& d, const Warner& warn);
// Each bin line against the chunks of its size class: a warning where a bin
// counts fewer chunks than the list holds, or other bytes for as many chunks.
void CheckBins(TfBfcDump& d, const Warner& warn);
// The chunks the bin lines and the Chunk State table count beyond the chunk list (TfBfcDump's
// unlisted_* and listed_free); after the regions are built and the listed totals added up.
void CountUnlistedChunks(TfBfcDump& d, const Warner& warn);

}  // namespace fragscope::traces
