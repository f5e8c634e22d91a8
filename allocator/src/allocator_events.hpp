// The events an allocator records into its sink, built in one place and stamped alike (device,
// monotonic time, thread ordinal), so every policy writes the fields the trace readers rely on.
// Only called when a sink is attached.
#pragma once

#include <cstdint>

#include "event_clock.hpp"
#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/traces/event.hpp"

namespace fragscope {

inline traces::Event StampedEvent(traces::EventType type, std::uint32_t device) {
  traces::Event event;
  event.type = type;
  event.device = device;
  event.time_ns = MonotonicNs();
  event.thread = ThreadOrdinal();
  return event;
}

// A named point in the program (Mark): the name is interned by the sink.
inline traces::Event MarkerEvent(std::uint32_t device, traces::TagId name) {
  traces::Event event = StampedEvent(traces::EventType::kMarker, device);
  event.tag = name;
  return event;
}

// A region, an address range or mapped pages: [address, address + size).
inline traces::Event RangeEvent(traces::EventType type, std::uint32_t device, std::uint64_t address,
                                std::uint64_t size) {
  traces::Event event = StampedEvent(type, device);
  event.address = address;
  event.size = size;
  return event;
}

// An alloc or free of one allocation.
struct AllocationFields {
  std::uint64_t stream = 0;
  std::uint64_t address = 0;
  std::uint64_t requested = 0;
  std::uint64_t rounded = 0;
  std::uint64_t region = 0;  // base of the region (segment) that holds it
  std::uint64_t alloc_id = 0;
  traces::TagId tag = traces::kNoTag;
};
inline traces::Event AllocationEvent(traces::EventType type, std::uint32_t device, const AllocationFields& a) {
  traces::Event event = StampedEvent(type, device);
  event.stream = a.stream;
  event.address = a.address;
  event.size = a.requested;
  event.rounded = a.rounded;
  event.region = a.region;
  event.alloc_id = a.alloc_id;
  event.tag = a.tag;
  return event;
}

// A request that failed, with the report's numbers.
inline traces::Event OomEvent(std::uint32_t device, const OomReport& report) {
  traces::Event event = StampedEvent(traces::EventType::kOom, device);
  event.stream = report.stream;
  event.size = report.numbers.request;
  event.rounded = report.numbers.rounded;
  event.tag = report.tag;
  event.oom = report.numbers;
  return event;
}

}  // namespace fragscope
