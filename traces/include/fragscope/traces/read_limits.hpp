// Caps on what one input may expand to, enforced by every reader while it reads, so that a small
// file cannot make fragscope use memory out of proportion to its size (a pickle whose memo
// references repeat one event a million times, a .fst whose blocks compress a billion identical
// events into a few megabytes, a log naming 100,000 devices). docs/cli.md, "Limits on inputs".
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace fragscope::traces {

struct ReadLimits {
  // 100 million events: `report` holds about 52 bytes per event and `replay` about 66 (measured on
  // synth traces), so a trace at the cap takes 5 to 7 GB; formats read whole (pickles, JSON Lines,
  // logs) hold about 180 bytes more per event while they are imported. The cap is that of a
  // 16 GB machine; `--max-events` raises it.
  static constexpr std::uint64_t kDefaultMaxEvents = 100'000'000;
  // 4096 devices: far more than any machine has, while every device costs the analysis a few
  // hundred bytes to a few kilobytes and a replay a simulated allocator of its own.
  static constexpr std::uint32_t kDefaultMaxDevices = 4096;
  // Below this many events the proportion to the file's size is not checked: cheap whatever it is.
  static constexpr std::uint64_t kProportionFloor = 100'000;

  std::uint64_t max_events = kDefaultMaxEvents;
  std::uint32_t max_devices = kDefaultMaxDevices;
  // Refuse an input that expands to more events than its format can hold in that many bytes
  // (above kProportionFloor events): a .fst needs more than 1/64 byte per event, a pickle more
  // than one byte per event (each event is a dict of its own). Off when the user gave
  // --max-events: then that cap alone decides.
  bool check_proportion = true;

  static ReadLimits None() {
    ReadLimits limits;
    limits.max_events = std::numeric_limits<std::uint64_t>::max();
    limits.max_devices = std::numeric_limits<std::uint32_t>::max();
    limits.check_proportion = false;
    return limits;
  }

  // The most events `file_bytes` of an input may hold at `events_per_byte`; max_events when the
  // proportion is not checked.
  std::uint64_t EventCap(std::uint64_t file_bytes, std::uint64_t events_per_byte) const {
    if (!check_proportion) return max_events;
    const std::uint64_t proportional =
        file_bytes > std::numeric_limits<std::uint64_t>::max() / events_per_byte
            ? std::numeric_limits<std::uint64_t>::max()
            : file_bytes * events_per_byte;
    const std::uint64_t cap = proportional > kProportionFloor ? proportional : kProportionFloor;
    return cap < max_events ? cap : max_events;
  }
};

// "the input describes 1000000000 events (counting every repetition), more than --max-events
// 100000000 allows; if it is a real trace, raise the cap: --max-events 1000000000" — or, when the
// proportion to the file's size decided, says so. `what` says what was counted.
std::string TooManyEventsMessage(std::uint64_t events, const std::string& what, std::uint64_t file_bytes,
                                 std::uint64_t events_per_byte, const ReadLimits& limits);
// "the input names more than 4096 devices (device 70000 is the 4097th), more than --max-devices
// allows; raise the cap: --max-devices N"
std::string TooManyDevicesMessage(std::uint64_t devices, const std::string& what, const ReadLimits& limits);

}  // namespace fragscope::traces
