// The event vocabulary shared by the allocator (which emits events), the trace files (which store
// them) and the inspector (which replays them). The OOM vocabulary is in oom.hpp;
// docs/trace-format.md gives the events byte by byte, docs/architecture.md the layers.
//
// This header is the bottom of the dependency graph: it knows nothing of allocators, files or GUIs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/oom.hpp"

namespace fragscope::traces {

using TagId = std::uint32_t;        // interned string; 0 means "no tag"
inline constexpr TagId kNoTag = 0;

enum class EventType : std::uint8_t {
  kAlloc = 1,
  kFree = 2,
  kRegionReserve = 3,
  kRegionRelease = 4,
  kOom = 5,
  kMarker = 6,
  // Format 1.1: a paging region (DESIGN.md, "address space vs pages"). Address space holds no
  // memory; mapped pages inside it do, and count as reserved.
  kAddressReserve = 7,
  kAddressRelease = 8,
  kMap = 9,
  kUnmap = 10,
};

// The last type this version knows; types above it (from a newer writer) are skipped by readers.
inline constexpr EventType kLastEventType = EventType::kUnmap;
// Whether `type` is one of the values above.
bool IsKnownEventType(EventType type);
// The events that take memory from the device or give it back: region_reserve/release and
// map/unmap. Their size is what the reserved series moves by.
inline bool ChangesReserved(EventType type) {
  return type == EventType::kRegionReserve || type == EventType::kRegionRelease || type == EventType::kMap ||
         type == EventType::kUnmap;
}
// The events that carry a range and nothing else: the four above plus address_reserve/release.
inline bool IsRangeEvent(EventType type) {
  return ChangesReserved(type) || type == EventType::kAddressReserve || type == EventType::kAddressRelease;
}

std::string_view ToString(EventType type);

// One allocator event. Fields that an event type does not use stay zero.
//   alloc:          device, stream, address, size (requested), rounded, region, tag, thread, alloc_id
//   free:           device, address, size (requested), rounded, alloc_id (the allocation it ends)
//   region_reserve: device, address, size (region bytes)
//   region_release: device, address, size
//   address_reserve, address_release: device, address, size (address space, no memory behind it)
//   map, unmap:     device, address, size (pages mapped into / unmapped from reserved address space)
//   oom:            device, stream, tag, oom
//   marker:         device, tag (the marker's name, interned)
struct Event {
  EventType type = EventType::kMarker;
  std::uint32_t device = 0;
  std::uint64_t seq = 0;            // one global order, assigned under the emitting allocator's lock
  std::uint64_t time_ns = 0;        // monotonic clock
  std::uint64_t stream = 0;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t rounded = 0;
  std::uint64_t region = 0;         // base address of the region holding the chunk
  std::uint64_t alloc_id = 0;
  std::uint32_t thread = 0;
  TagId tag = kNoTag;
  OomRecord oom{};                  // only for kOom
};

// Why an event's sizes cannot be taken as they are, or nullptr when they can: an alloc, free or
// range event (region, address space, map) whose size or rounded size is above kMaxBytes (byte_math.hpp), or whose address
// range runs past 2^64. oom events may carry any request (that is what they report). Every reader
// checks each event with it and names its own location in the error.
// Every reader calls it on every event, so the common case is inline: sizes below the cap and an
// address far enough below 2^64 that no range can run past it.
const char* EventSizeProblemSlow(const Event& event);
inline const char* EventSizeProblem(const Event& event) {
  if ((event.size | event.rounded) < kMaxBytes && event.address < ~std::uint64_t{0} - kMaxBytes) return nullptr;
  return EventSizeProblemSlow(event);
}

// Where events go. Record() is called with the emitting allocator's lock held, so it must be quick
// and must not call back into the allocator. Implementations assign `seq` (one counter shared by all
// allocators writing to the sink), which is why `event` is mutable.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Record(Event& event) = 0;
  // Interns a tag or marker name; thread-safe. Returns kNoTag for the empty string.
  virtual TagId Intern(std::string_view text) = 0;
};

}  // namespace fragscope::traces
