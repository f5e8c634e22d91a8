// The metrics (docs/cli.md, "report"; docs/architecture.md), defined once. Every report, replay, comparison and panel uses these.
//   peak LOAD       max over time of live requested bytes: the lower bound any allocator needs
//   overhead        peak reserved / peak LOAD (1.00 is perfect)
//   utilization at peak   in use / reserved at the moment of peak reserved (when reserved stays at
//                   its peak a while, the moment of that stretch with the most in use)
//   external fragmentation   1 - largest free chunk / free bytes in regions
//   internal waste  in use - live requested
#pragma once

#include <cstdint>
#include <optional>

#include "fragscope/allocator/stats.hpp"  // ExternalFragmentation, Utilization
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

// Peak figures of one device over a whole trace or replay.
struct DeviceMetrics {
  std::uint32_t device = 0;
  std::uint64_t peak_load = 0;
  std::uint64_t peak_in_use = 0;
  std::uint64_t peak_reserved = 0;
  double utilization_at_peak = 1.0;      // in_use / reserved when reserved was at its peak
  // External fragmentation when reserved was at its peak; NaN where the evidence gives reserved
  // memory as a total only (traces::SourceFacts::reserved_without_layout: the holes are unknown),
  // which reports print as "-" and JSON as null.
  double fragmentation_at_peak = 0.0;
  std::uint64_t peak_internal_waste = 0;
  std::uint64_t allocations = 0;         // alloc events
  std::uint64_t ooms = 0;

  double overhead() const { return Overhead(peak_reserved, peak_load); }
  static double Overhead(std::uint64_t peak_reserved, std::uint64_t peak_load) {
    return peak_load == 0 ? 0.0 : static_cast<double>(peak_reserved) / static_cast<double>(peak_load);
  }
};

// Blocks that were live before recording started (an imported PyTorch snapshot rebuilds them from
// its final state and allocates them at event 0). The source allocator reserved memory for them
// before the window began, so a like-for-like overhead of the recorded window takes them out of
// both sides: (peak reserved - bytes) / (peak LOAD - requested).
struct BeforeRecording {
  std::uint64_t blocks = 0;
  std::uint64_t bytes = 0;      // rounded sizes
  std::uint64_t requested = 0;  // requested sizes
  bool blocks_known = true;     // false: `blocks` counts allocations that stand for more blocks

  double LikeForLikeOverhead(std::uint64_t peak_reserved, std::uint64_t peak_load) const {
    return DeviceMetrics::Overhead(peak_reserved > bytes ? peak_reserved - bytes : 0,
                                   peak_load > requested ? peak_load - requested : 0);
  }
};

// What the trace's header says was live on `device` before recording (the reader's typed source
// facts, traces::SourceFacts::before_recording); empty for traces that have no such notion.
std::optional<BeforeRecording> BeforeRecordingOf(const traces::TraceHeader& header, std::uint32_t device);

}  // namespace fragscope::analysis
