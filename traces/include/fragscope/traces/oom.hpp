// The out-of-memory vocabulary every layer shares: the causes, the numbers of an OOM as traces
// store them, and the one classification. The bottom of the dependency graph, beside event.hpp
// (which includes it) and byte_math.hpp: the allocator reports with it, the readers of other
// tools' evidence and the analysis library classify with it.
#pragma once

#include <cstdint>
#include <string_view>

namespace fragscope::traces {

// Why an allocation failed. The numeric values are stored in trace files: never renumber.
enum class OomCause : std::uint8_t {
  kCapacity = 1,          // live data plus the request exceed the limit; no policy can fit it
  kFragmentation = 2,     // enough free bytes in total, but no contiguous range
  kBacking = 3,           // the backing refused to grow although the limit allowed it
  kRequestTooLarge = 4,   // one request alone exceeds the limit
  kUnknown = 5,           // evidence from elsewhere only: it lacks what would decide (a limit, say);
                          // ClassifyOom and fragscope's allocators never give it
};

// "capacity", "fragmentation", "backing", "request-too-large", "unknown"; "" for a value that is
// none of these (a newer writer's).
std::string_view ToString(OomCause cause);
// Whether `cause` is one of the values above.
bool IsKnownCause(OomCause cause);

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

// The cause of an OOM from its numbers, by the rules of docs/allocator.md ("Out-of-memory causes"), in this order:
// request-too-large (rounded > limit), capacity (in_use + rounded > limit), backing (the backing
// refused memory the limit allowed), fragmentation (enough bytes in total, none contiguous).
// The one definition: the allocator, trace analysis and every importer classify with it.
OomCause ClassifyOom(const OomRecord& numbers, bool backing_refused);

}  // namespace fragscope::traces
