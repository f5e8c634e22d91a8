// Replay: run a trace's allocation sequence through any allocator configuration on a simulated
// device, record what happens, find the first OOM, or find the smallest limit that fits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/stats.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/metrics.hpp"
#include "fragscope/analysis/oom_diagnosis.hpp"

namespace fragscope::analysis {

struct ReplayOptions {
  AllocConf conf;                          // the backing is always sim in a replay
  std::optional<std::uint64_t> capacity;   // sim device size; default: conf.capacity, else the
                                           // trace's device capacity, else 80 GiB
  bool continue_past_oom = false;          // false: stop at the first OOM
  traces::EventSink* record = nullptr;     // receives the replay's own events (a new trace)
  // With `record`: per recorded event, the seq of the sequence's op that caused it (set-up events
  // before the first op get the first op's), so a view can follow the original trace's cursor.
  std::vector<std::uint64_t>* record_source_seq = nullptr;
  Progress progress;                       // (ops done, ops total), every ~1M ops
  std::size_t max_diagnoses = 1000;        // per device: OOMs past this are counted, not diagnosed
};

struct DeviceReplay {
  DeviceMetrics metrics;          // peaks of the replay, by the one definition
  AllocatorStats final_stats;
  std::vector<OomDiagnosis> ooms; // nearest holes filled; min_limit not computed here
  std::uint64_t skipped_frees = 0;  // frees of allocations that failed with OOM
};

struct ReplayResult {
  std::uint64_t ops_replayed = 0;       // including the failing op when stopped at an OOM
  bool stopped_at_oom = false;
  double seconds = 0;
  std::vector<DeviceReplay> devices;  // one per device of the sequence, same order
  traces::TraceHeader header;         // of the replay as a trace: see ReplayTraceHeader
  std::vector<std::string> warnings;  // e.g. a backing other than sim replaced by sim
  const DeviceReplay* Device(std::uint32_t device) const {
    for (const auto& d : devices) if (d.metrics.device == device) return &d;
    return nullptr;
  }
};

// One simulated device per device of the sequence, each under `options.conf` (backing forced to
// sim, with a warning); with virtual_devices, one simulated device split in those, trace device i
// on virtual device i. Events recorded to options.record carry the trace's device numbers, the
// original events' timestamps and thread 1, so two replays record identical streams; the trace's
// markers (sequence.markers) are recorded too, each at its place among the ops.
// Throws ConfigError when the configuration does not fit the simulated device, or the trace has
// more devices than virtual_devices defines.
ReplayResult Replay(const AllocationSequence& sequence, const ReplayOptions& options);

// The configurations a comparison offers when the user gives none, in order: fragscope's default
// policy (the blank configuration), TensorFlow's BFC allocator with allow_growth and without it,
// PyTorch's caching allocator by default and with expandable segments.
// `fragscope compare` runs them all; the inspector's compare offers them by name.
struct ComparisonPreset {
  const char* label;  // for people: "TensorFlow, allow_growth"
  const char* conf;   // the configuration text ("" is the default policy)
};
const std::vector<ComparisonPreset>& ComparisonPresets();

// The header of the trace a replay records (what ReplayResult::header will be, up to the creation
// time), without replaying: producer "fragscope replay 0.1.0", the configuration in canonical form
// with backing=sim and the capacity used, one description per device. For writers that need the
// header before the first event. Throws as Replay does.
traces::TraceHeader ReplayTraceHeader(const AllocationSequence& sequence,
                                      const ReplayOptions& options);

struct MinLimitResult {
  std::uint64_t min_limit = 0;   // runs without OOM; min_limit - 1 MiB OOMs (or is below peak LOAD)
  std::uint64_t peak_load = 0;   // the lower bound any allocator needs (largest device)
  std::uint32_t replays = 0;     // how many replays the bisection took
  bool fits_at_all = true;       // false when even the capacity is not enough
};

// Bisects the limit to 1 MiB: the smallest limit at which `conf` runs the whole sequence, every
// device under the same limit, between max(peak LOAD rounded down to 1 MiB, 1 MiB) and the capacity
// (options.capacity, conf.capacity, the trace's, else 80 GiB) less external_use. Each probe is a
// Replay that stops at its first OOM. options.progress gets (replays done, replays expected).
// Throws ConfigError, also for virtual_devices. conf.limit is ignored: the search sets it.
MinLimitResult FindMinLimit(const AllocationSequence& sequence, const ReplayOptions& options);

}  // namespace fragscope::analysis
