// A comparison's configuration under the limits the trace was recorded with, where it sets none of
// its own. Replayed without them, a trace that ran out of memory under a 2 GiB limit, or on a
// 200 MiB virtual device, showed no OOM on either side of the inspector's compare.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fragscope/allocator/config.hpp"

namespace fragscope::analysis {

struct RecordedLimits {
  AllocConf conf;        // what to replay: the side's configuration, with the recorded limits
  bool carried = false;  // the recorded limits were applied (the side set neither limit= nor virtual_devices=)
  // The limit trace device `device` runs under where they were carried: virtual device i's size
  // (Replay runs trace device i on virtual device i), else the one limit of every device; nullopt
  // where nothing was carried or the device has no virtual device.
  std::optional<std::uint64_t> LimitOf(std::uint32_t device) const;
  // For a label: " (limit 200.00 MiB as recorded)", with ", virtual device 1 of 2" for virtual
  // devices; empty where nothing was carried for `device`.
  std::string Note(std::uint32_t device) const;
  // For every device at once: "limit 2.00 GiB as recorded", "virtual devices 200.00 MiB + 1.00 GiB
  // as recorded"; empty where nothing was carried.
  std::string Summary() const;
};

// `conf` with the recorded configuration's virtual devices (their sizes, each device its own limit,
// on one device as the run had them), else its limit, where `conf` sets neither; `conf` unchanged
// where it sets one, or where nothing was recorded (`recorded` null).
RecordedLimits WithRecordedLimits(AllocConf conf, const AllocConf* recorded);

}  // namespace fragscope::analysis
