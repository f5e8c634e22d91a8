// The `sim` backing: a device that has an address space and a capacity but no memory behind it.
// Addresses are handed out from a simulated virtual address space and are never dereferenced, so a
// 141 GiB device can be planned on a laptop. Released ranges go back to a first-fit free list and
// are reused, as a real device reuses its address space, so address maps look like real ones.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "fragscope/allocator/backing.hpp"

namespace fragscope {

struct AllocConf;

namespace detail {

// Disjoint half-open intervals [begin, end), adjacent ones merged. Slow-path bookkeeping shared by
// the sim backing (free address space, mapped pages) and the host backing (mapped pages): every
// operation is O(log n) in the number of intervals.
class IntervalSet {
 public:
  // Precondition: !Intersects(begin, end).
  void Insert(std::uint64_t begin, std::uint64_t end);
  // Precondition: Contains(begin, end).
  void Erase(std::uint64_t begin, std::uint64_t end);
  bool Intersects(std::uint64_t begin, std::uint64_t end) const;
  bool Contains(std::uint64_t begin, std::uint64_t end) const;
  // The lowest `alignment`-aligned start of `bytes` that lie inside one interval.
  std::optional<std::uint64_t> FirstFit(std::uint64_t bytes, std::uint64_t alignment) const;

  bool empty() const { return intervals_.empty(); }
  std::uint64_t total() const { return total_; }
  std::size_t count() const { return intervals_.size(); }

 private:
  void Rekey(std::map<std::uint64_t, std::uint64_t>::iterator it, std::uint64_t begin);

  std::map<std::uint64_t, std::uint64_t> intervals_;  // begin -> end
  std::uint64_t total_ = 0;
};

inline std::uint64_t RoundUp(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace detail

class SimBacking final : public Backing, public ExpandableBacking {
 public:
  // Simulated addresses start here: high enough that they never collide with a real pointer of a
  // test process by accident, 2 MiB aligned like GPU allocations, and below 2^47 so that they still
  // look like user-space pointers.
  static constexpr std::uint64_t kBaseAddress = 0x1000'0000'0000;
  static constexpr std::uint64_t kMapGranularity = 2ULL << 20;
  static constexpr std::uint64_t kRegionGranularity = 256;

  // Capacity: conf.capacity or 80 GiB. Throws ConfigError when capacity is 0 or external_use does
  // not leave any of it.
  explicit SimBacking(const AllocConf& conf);
  ~SimBacking() override;
  SimBacking(const SimBacking&) = delete;
  SimBacking& operator=(const SimBacking&) = delete;

  const BackingInfo& info() const override { return info_; }
  void* Reserve(std::uint64_t bytes, std::uint64_t stream) override;
  void Release(void* base, std::uint64_t bytes, std::uint64_t stream) override;
  std::uint64_t held() const override;
  ExpandableBacking* expandable() override { return this; }

  std::uint64_t map_granularity() const override { return kMapGranularity; }
  void* ReserveRange(std::uint64_t max_bytes) override;
  bool Map(void* base, std::uint64_t offset, std::uint64_t bytes) override;
  void Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) override;
  void ReleaseRange(void* base, std::uint64_t max_bytes) override;

  // Bytes the device may hand out: capacity - external_use.
  std::uint64_t available() const { return available_; }
  // Size of the simulated address space (regions and expandable ranges share it).
  std::uint64_t address_space() const { return address_space_; }

 private:
  struct Block {
    std::uint64_t bytes = 0;      // what the caller reserved (region) or max_bytes (range)
    std::uint64_t footprint = 0;  // address space taken: bytes rounded up to 2 MiB
    bool is_range = false;
    detail::IntervalSet mapped;   // ranges only: mapped [offset, offset + bytes)
  };

  // Takes `footprint` bytes of address space; 0 when none is left. Caller holds mu_.
  std::uint64_t TakeAddressSpace(std::uint64_t footprint);
  // Finds a live block by address or throws BackingError naming `what`. Caller holds mu_.
  Block& FindBlock(const void* base, bool want_range, const char* what);
  // Validates a Map/Unmap argument triple and returns the range's block. Caller holds mu_.
  Block& CheckPages(const void* base, std::uint64_t offset, std::uint64_t bytes, const char* what);

  BackingInfo info_;
  std::uint64_t available_ = 0;
  std::uint64_t address_space_ = 0;

  mutable std::mutex mu_;
  detail::IntervalSet free_;                       // free simulated address space
  std::unordered_map<std::uint64_t, Block> live_;  // base address -> region or range
  std::uint64_t held_ = 0;                         // region bytes + mapped bytes
};

}  // namespace fragscope
