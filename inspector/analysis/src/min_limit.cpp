// min-limit: the smallest limit (to 1 MiB) at which a policy runs a whole sequence without OOM.
//
// Bisection over the limit, every probe a full replay that stops at its first OOM. Invariant: `hi`
// runs, `lo` fails. Bisection assumes that a policy which runs under some limit also runs under any
// higher one; that holds for the common cases but not for every BFC layout (the region sizes depend
// on the headroom), so the result is checked only at its own neighbour: min_limit runs and
// min_limit - 1 MiB fails.
#include <algorithm>
#include <bit>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/replay.hpp"

namespace fragscope::analysis {
namespace {

constexpr std::uint64_t kDefaultCapacity = 80 * GiB;

// The largest limit every device accepts: capacity (as Replay resolves it) minus external use.
std::uint64_t UpperLimit(const AllocationSequence& sequence, const ReplayOptions& options) {
  const auto capacity_of = [&](const traces::DeviceDescription* description) {
    if (options.capacity) return *options.capacity;
    if (options.conf.capacity) return *options.conf.capacity;
    if (description != nullptr && description->capacity != 0) return description->capacity;
    return kDefaultCapacity;
  };
  std::uint64_t capacity = capacity_of(nullptr);
  for (std::uint32_t device : sequence.devices) {
    capacity = std::min(capacity, capacity_of(sequence.header.Device(device)));
  }
  return capacity > options.conf.external_use ? capacity - options.conf.external_use : 0;
}

std::uint32_t StepsLeft(std::uint64_t lo, std::uint64_t hi) {
  return hi > lo + MiB ? static_cast<std::uint32_t>(std::bit_width((hi - lo - 1) / MiB)) : 0;
}

}  // namespace

MinLimitResult FindMinLimit(const AllocationSequence& sequence, const ReplayOptions& options) {
  if (!options.conf.virtual_devices.empty()) {
    throw ConfigError("virtual_devices",
                      "min-limit searches one limit for every device: give the configuration "
                      "without virtual_devices");
  }
  MinLimitResult result;
  for (std::uint64_t load : PeakLoadByDevice(sequence)) {
    result.peak_load = std::max(result.peak_load, load);
  }

  std::uint64_t peak_reserved = 0;
  const auto runs = [&](std::uint64_t limit, std::uint32_t steps_left) {
    ReplayOptions probe;
    probe.conf = options.conf;
    probe.conf.limit = limit;
    probe.capacity = options.capacity;
    probe.continue_past_oom = false;
    probe.max_diagnoses = 0;  // the answer is yes or no: no snapshots
    ReplayResult replay;
    try {
      replay = Replay(sequence, probe);
    } catch (const ConfigError& error) {
      // A limit the policy refuses outright (under paging, less than one page) runs nothing.
      if (error.key() != "limit") throw;
      ++result.replays;
      if (options.progress) options.progress(result.replays, result.replays + steps_left);
      return false;
    }
    ++result.replays;
    peak_reserved = 0;
    for (const DeviceReplay& device : replay.devices) {
      peak_reserved = std::max(peak_reserved, device.metrics.peak_reserved);
    }
    if (options.progress) options.progress(result.replays, result.replays + steps_left);
    return !replay.stopped_at_oom;
  };

  std::uint64_t hi = UpperLimit(sequence, options);
  std::uint64_t lo = std::max(result.peak_load / MiB * MiB, MiB);  // not yet known to fail
  if (!runs(hi, StepsLeft(lo, hi) + 1)) {
    result.fits_at_all = false;
    return result;
  }
  if (lo >= hi) {
    result.min_limit = hi;
    return result;
  }
  // What the policy reserved with all the room it wanted is usually a close upper bound.
  const std::uint64_t hint = (peak_reserved + MiB - 1) / MiB * MiB;
  bool lo_fails = false;
  if (hint > lo && hint < hi) {
    if (runs(hint, StepsLeft(lo, hint) + 1)) {
      hi = hint;
    } else {
      lo = hint;
      lo_fails = true;
    }
  }
  if (!lo_fails) {
    if (runs(lo, StepsLeft(lo, hi))) {
      result.min_limit = lo;
      return result;
    }
  }
  while (hi - lo > MiB) {
    const std::uint64_t mid = lo + std::max(MiB, (hi - lo) / 2 / MiB * MiB);
    if (mid >= hi) break;
    if (runs(mid, StepsLeft(lo, hi) - 1)) hi = mid;
    else lo = mid;
  }
  result.min_limit = hi;
  return result;
}

}  // namespace fragscope::analysis
