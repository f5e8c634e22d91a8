// The interface every allocator of one (possibly virtual) device offers: the BFC caching allocator
// and the passthrough baseline. Thread-safe: each call takes the allocator's one lock.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/allocator/stats.hpp"
#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/event.hpp"

namespace fragscope {

inline constexpr std::uint64_t kRoundingUnit = 256;   // every size rounds up to this
// The largest request an allocator serves (4 EiB, traces/byte_math.hpp says why). Every allocator
// checks it once at its entry: a larger request is an OOM with cause request-too-large, never
// rounded, since rounding 2^64 - 1 up to 256 B wraps to 0 and would hand out memory already in use.
inline constexpr std::uint64_t kMaxRequestBytes = traces::kMaxBytes;
// Precondition: bytes <= kMaxRequestBytes (then the result is at most kMaxRequestBytes too).
inline constexpr std::uint64_t RoundUp(std::uint64_t bytes) {
  return bytes == 0 ? kRoundingUnit : (bytes + kRoundingUnit - 1) & ~(kRoundingUnit - 1);
}

struct AllocOptions {
  std::uint64_t stream = 0;
  traces::TagId tag = traces::kNoTag;
};

// A read-only picture of the allocator's memory, for the demo, the tests and the inspector.
struct ChunkView {
  std::uint64_t address = 0;
  std::uint64_t size = 0;        // rounded
  std::uint64_t requested = 0;   // 0 for a free chunk
  std::uint64_t alloc_id = 0;    // 0 for a free chunk
  std::uint64_t stream = 0;
  traces::TagId tag = traces::kNoTag;
  bool in_use = false;
};

struct MappedRange {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

struct RegionView {
  std::uint64_t address = 0;
  std::uint64_t size = 0;         // bytes the chunks tile: the whole range, also when paging
  std::uint64_t max_size = 0;     // address space held (== size)
  bool paging = false;            // memory is only the `mapped` pages (expandable=on)
  std::vector<MappedRange> mapped;  // paging: the mapped pages, by address; empty otherwise
  std::vector<ChunkView> chunks;  // by address
};

struct AllocatorSnapshot {
  std::uint32_t device = 0;
  AllocatorStats stats;
  std::vector<RegionView> regions;  // by address
};

// Thrown by CheckInvariants: a bug in fragscope, never a user error.
class InvariantViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;

  // Allocates `bytes` (0 is allowed and takes one rounding unit; any size up to 2^64 - 1 may be
  // asked for, and one above kMaxRequestBytes is request-too-large). Throws OutOfMemory.
  void* Allocate(std::uint64_t bytes, const AllocOptions& options = {});
  // Same, but returns nullptr on OOM and fills `report` (when given) with the diagnosis.
  virtual void* TryAllocate(std::uint64_t bytes, const AllocOptions& options,
                            OomReport* report) = 0;
  // Throws InvalidFree for a pointer this allocator does not hold; the state is unchanged then.
  virtual void Free(void* ptr) = 0;

  virtual AllocatorStats Stats() const = 0;
  virtual void ResetPeaks() = 0;
  virtual AllocatorSnapshot Snapshot() const = 0;
  // The report of the most recent OOM, if any.
  virtual std::optional<OomReport> LastOom() const = 0;
  // Releases every region that holds no live chunk (and, for an expandable region, unmaps its free
  // tail). Returns the bytes given back.
  virtual std::uint64_t ReleaseFreeRegions() = 0;
  // Checks every structural invariant; throws InvariantViolation naming the first that fails.
  virtual void CheckInvariants() const = 0;

  // Events go to `sink` from now on (nullptr: off). On attach, the regions already reserved are
  // recorded as region_reserve events so that a trace is complete.
  virtual void SetSink(traces::EventSink* sink) = 0;
  // Records a marker event (no-op without a sink).
  virtual void Mark(std::string_view name) = 0;

  virtual std::uint32_t device() const = 0;
  virtual std::uint64_t limit() const = 0;
};

}  // namespace fragscope
