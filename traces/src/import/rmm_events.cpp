// RMM log rows as events (rmm_events.hpp): the one place that pairs frees with allocations and
// counts the bytes in use, for every RMM log format.
#include "rmm_events.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope::traces::rmm {

EventBuilder::EventBuilder(Trace& trace, const std::string& name, const ReadLimits& limits, std::uint64_t text_bytes)
    : trace_(trace), builder_(trace), name_(name), limits_(limits), text_bytes_(text_bytes) {}

void EventBuilder::Device(std::uint32_t index, std::string name) {
  if (trace_.header.Device(index) == nullptr) trace_.header.devices.push_back({index, std::move(name), "rmm", 0, 0});
}

void EventBuilder::Fail(std::size_t line, std::uint64_t offset, const std::string& message) const {
  throw TraceError(name_, offset, fmt::format("line {}: {}", line, message));
}

std::uint64_t EventBuilder::TimeOf(const Row& row) {
  if (!have_time_) {
    first_time_ = row.time_ns;
    have_time_ = true;
    trace_.header.metadata.emplace_back("rmm.first_time", std::string(row.time_text));
  }
  // Rows of several threads may be logged slightly out of order: such a row keeps the time of the
  // row before.
  previous_ = std::max(previous_, row.time_ns >= first_time_ ? row.time_ns - first_time_ : 0);
  return previous_;
}

void EventBuilder::Add(const Row& row, std::size_t line, std::uint64_t offset) {
  // A zero-size allocation gets a null pointer, and its free frees nothing (spark-rapids' logs
  // have them): no memory, no event.
  Device(row.device, fmt::format("RMM device {}", row.device));
  if (row.total_memory > 0) Capacity(row, line);
  if (NoMemory(row)) return;
  Event e;
  e.time_ns = TimeOf(row);
  e.device = row.device;
  e.thread = static_cast<std::uint32_t>(row.thread);
  e.stream = row.stream;
  e.tag = builder_.Intern(row.location);
  std::uint64_t& in_use = in_use_[row.device];
  std::uint64_t& requested = requested_[row.device];
  auto end_live = [&](std::unordered_map<std::uint64_t, Live>::iterator it) {
    in_use_[it->second.device] -= it->second.rounded;
    requested_[it->second.device] -= it->second.size;
    live_.erase(it);
  };
  auto append = [&](const Event& event) {
    if (const char* problem = EventSizeProblem(event)) Fail(line, offset, fmt::format("Size {}: {}", row.size, problem));
    // Each size is at most 4 EiB, but many live ones can still add up past 64 bits.
    if (in_use > kMaxBytes * 2 || requested > kMaxBytes * 2)
      Fail(line, offset, "the live allocations add up to more than 8 EiB: not a real log");
    if (trace_.events.size() >= limits_.max_events)
      Fail(line, offset, TooManyEventsMessage(trace_.events.size() + 1, "one more on this line", text_bytes_, 1, limits_));
    builder_.Append(event);
  };
  switch (row.action) {
    case Action::kRealloc:
    case Action::kAllocate: {
      if (auto it = live_.find(row.pointer); it != live_.end()) {
        if (row.action == Action::kRealloc) {
          // Reallocated in place: the block at that address ends, and the new one starts there.
          Event f = e;
          f.type = EventType::kFree;
          f.address = row.pointer;
          f.size = it->second.size;
          f.rounded = it->second.rounded;
          f.alloc_id = it->second.id;
          end_live(it);
          append(f);
        } else {
          trace_.warnings.push_back(fmt::format("{}:{}: allocate of {:#x}, which is already allocated "
                                                "(line of the earlier allocation unknown): the earlier one is dropped",
                                                name_, line, row.pointer));
          end_live(it);
        }
      } else if (row.action == Action::kRealloc && ++reallocs_ == 1) {
        trace_.warnings.push_back(fmt::format("{}:{}: a Realloc row names only the new block (RMM 0.x logs no old "
                                              "pointer): the block it replaced is not known and stays counted as live",
                                              name_, line));
      }
      e.type = EventType::kAlloc;
      e.address = row.pointer;
      e.size = row.size;
      e.rounded = tftext::RoundUp256(row.size);
      e.alloc_id = ++next_id_;
      live_[row.pointer] = {e.alloc_id, e.size, e.rounded, row.device};
      in_use += e.rounded;
      requested += e.size;
      break;
    }
    case Action::kFree: {
      e.type = EventType::kFree;
      e.address = row.pointer;
      e.size = row.size;
      if (auto it = live_.find(row.pointer); it != live_.end()) {
        e.alloc_id = it->second.id;
        if (row.size_unknown) e.size = it->second.size;
        end_live(it);
      } else if (++unknown_frees_ <= 10) {
        trace_.warnings.push_back(fmt::format("{}:{}: free of {:#x}, which the log never allocated (the "
                                              "allocation predates the log)",
                                              name_, line, row.pointer));
      }
      e.rounded = tftext::RoundUp256(e.size);
      break;
    }
    case Action::kFailure:
      e.type = EventType::kOom;
      e.oom.request = row.size;
      e.oom.rounded = tftext::RoundUp256(row.size);
      e.oom.in_use = in_use;
      e.oom.live_requested = requested;
      Failure(row, e, line);
      break;
  }
  append(e);
}

void EventBuilder::Capacity(const Row& row, std::size_t line) {
  auto device = std::find_if(trace_.header.devices.begin(), trace_.header.devices.end(),
                             [&](const DeviceDescription& d) { return d.index == row.device; });
  if (device->capacity == 0) {
    device->capacity = row.total_memory;
  } else if (device->capacity != row.total_memory && !total_warned_) {
    total_warned_ = true;
    trace_.warnings.push_back(fmt::format("{}:{}: Total Memory {} differs from the {} an earlier row gave for device "
                                          "{}: the earlier one is the device's capacity",
                                          name_, line, row.total_memory, device->capacity, row.device));
  }
}

void EventBuilder::Failure(const Row& row, Event& e, std::size_t line) {
  OomRecord& o = e.oom;
  // The log gives the request and the live allocations: no pool (regions, free blocks), so those
  // numbers are absent, never 0 (OomRecord::present).
  o.present = kOomRequest | kOomRounded | kOomInUse | kOomLiveRequested;
  o.cause = OomCause::kUnknown;
  const std::uint64_t total = trace_.header.Device(row.device)->capacity;
  if (total == 0) {
    if (!std::exchange(no_limit_warned_, true))
      trace_.warnings.push_back(fmt::format("{}:{}: allocate failure: an RMM log has no limit, regions or free space, "
                                            "so the cause cannot be determined (cause unknown)",
                                            name_, line));
    return;
  }
  // RMM 0.x measured the device's memory: its total bounds what any allocator there can hold.
  o.limit = total;
  o.present |= kOomLimit;
  o.cause = ClassifyOom(o, false);
  if (o.cause == OomCause::kCapacity || o.cause == OomCause::kRequestTooLarge) return;
  // Within the device's memory the bytes in use elsewhere (another process, the pool's own
  // reserve) and fragmentation cannot be told apart: the log has no pool.
  o.cause = OomCause::kUnknown;
  if (!std::exchange(fits_warned_, true))
    trace_.warnings.push_back(fmt::format(
        "{}:{}: allocation failure: the live allocations ({} bytes) and the request ({} bytes) fit in the device's "
        "{} bytes of total memory{}: another process, the pool's own reserve or fragmentation, which the log cannot "
        "tell apart (cause unknown)",
        name_, line, o.in_use, o.rounded, total,
        row.free_memory > 0 ? fmt::format(" ({} free when RMM measured it after the failure)", row.free_memory)
                            : std::string()));
}

std::string CutLastLine(const std::string& name, std::size_t line, std::string_view text, const std::string& why) {
  return fmt::format("{}:{}: the last line is cut short (\"{}\": {}; the log ends there, as when the process died "
                     "while writing it): left out",
                     name, line, text.substr(0, 80), why);
}

void EventBuilder::Finish() {
  if (unknown_frees_ > 10)
    trace_.warnings.push_back(fmt::format("{}: {} frees of pointers the log never allocated in all", name_,
                                          unknown_frees_));
}

}  // namespace fragscope::traces::rmm
