// The event vocabulary shared by the allocator (which emits events), the trace files (which store
// them) and the inspector (which replays them). See DESIGN.md, "Trace".
//
// This header is the bottom of the dependency graph: it knows nothing of allocators, files or GUIs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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
};

std::string_view ToString(EventType type);

// Why an allocation failed. The numeric values are stored in trace files: never renumber.
enum class OomCause : std::uint8_t {
  kCapacity = 1,          // live data plus the request exceed the limit; no policy can fit it
  kFragmentation = 2,     // enough free bytes in total, but no contiguous range
  kBacking = 3,           // the backing refused to grow although the limit allowed it
  kRequestTooLarge = 4,   // one request alone exceeds the limit
};

std::string_view ToString(OomCause cause);  // "capacity", "fragmentation", "backing", "request-too-large"

// The numbers of an OOM, as stored in a trace. The allocator's OomReport adds the words.
struct OomRecord {
  std::uint64_t request = 0;          // requested bytes
  std::uint64_t rounded = 0;          // bytes the allocator needed (after rounding)
  std::uint64_t limit = 0;
  std::uint64_t reserved = 0;
  std::uint64_t in_use = 0;
  std::uint64_t live_requested = 0;
  std::uint64_t free_in_regions = 0;  // reserved - in_use
  std::uint64_t largest_free = 0;     // largest free chunk inside the regions
  std::uint64_t headroom = 0;         // limit - reserved
  std::uint64_t chunk_count = 0;
  std::uint64_t region_count = 0;
  OomCause cause = OomCause::kCapacity;
};

// The cause of an OOM from its numbers, by the rules of DESIGN.md, in this order:
// request-too-large (rounded > limit), capacity (in_use + rounded > limit), backing (the backing
// refused memory the limit allowed), fragmentation (enough bytes in total, none contiguous).
// The one definition: the allocator, trace analysis and every importer classify with it.
OomCause ClassifyOom(const OomRecord& numbers, bool backing_refused);

// One allocator event. Fields that an event type does not use stay zero.
//   alloc:          device, stream, address, size (requested), rounded, region, tag, thread, alloc_id
//   free:           device, address, size (requested), rounded, alloc_id (the allocation it ends)
//   region_reserve: device, address, size (region bytes)
//   region_release: device, address, size
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
// region event whose size or rounded size is above kMaxBytes (byte_math.hpp), or whose address
// range runs past 2^64. oom events may carry any request (that is what they report). Every reader
// checks each event with it and names its own location in the error.
const char* EventSizeProblem(const Event& event);

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
