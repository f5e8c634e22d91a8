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
                          // fragscope's allocators never give it, ClassifyOom only for numbers
                          // that lack the limit, the rounded request or the bytes in use
};

// "capacity", "fragmentation", "backing", "request-too-large", "unknown"; "" for a value that is
// none of these (a newer writer's).
std::string_view ToString(OomCause cause);
// Whether `cause` is one of the values above.
bool IsKnownCause(OomCause cause);

// Which numbers of an OomRecord the evidence gave: bit i is field i of the record, in the order
// below (the order of the trace's oom column). fragscope's allocators know every number; evidence
// from elsewhere may not (a TensorFlow dump without a limit, an RMM allocate failure, an error
// message): an absent number is 0 in the record and must not be printed or used as if it were 0.
// Stored in trace files (format 1.1): never renumber.
enum OomField : std::uint16_t {
  kOomRequest = 1u << 0,
  kOomRounded = 1u << 1,
  kOomLimit = 1u << 2,
  kOomReserved = 1u << 3,
  kOomInUse = 1u << 4,
  kOomLiveRequested = 1u << 5,
  kOomFreeInRegions = 1u << 6,
  kOomLargestFree = 1u << 7,
  kOomHeadroom = 1u << 8,
  kOomChunkCount = 1u << 9,
  kOomRegionCount = 1u << 10,
};
inline constexpr std::uint16_t kOomAllFields = 0x7FF;
// The numbers that depend on the regions: without a state of memory none of them is known.
inline constexpr std::uint16_t kOomRegionFields =
    kOomReserved | kOomFreeInRegions | kOomLargestFree | kOomHeadroom | kOomChunkCount | kOomRegionCount;

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
  std::uint16_t present = kOomAllFields;  // OomField bits: the numbers the evidence gave

  // Whether every field in `fields` (OomField bits) is present.
  bool Has(std::uint16_t fields) const { return (present & fields) == fields; }
};

// The cause of an OOM from its numbers, by the rules of docs/allocator.md ("Out-of-memory causes"), in this order:
// request-too-large (a rounded request above 4 EiB), unknown (the limit, the rounded request or
// the bytes in use absent: OomRecord::present), request-too-large (rounded > limit), capacity (in_use + rounded > limit), backing (the backing
// refused memory the limit allowed), fragmentation (enough bytes in total, none contiguous).
// The one definition: the allocator, trace analysis and every importer classify with it.
OomCause ClassifyOom(const OomRecord& numbers, bool backing_refused);

}  // namespace fragscope::traces
