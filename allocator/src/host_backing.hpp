// The `host` backing: real host memory from anonymous mmap, so that the allocator and the CPU
// trainer run against memory that can be read and written. MAP_NORESERVE keeps large regions cheap
// until touched. Expandable ranges reserve PROT_NONE address space and commit pages with mprotect,
// which is how the vmm backing behaves on a GPU.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "fragscope/allocator/backing.hpp"
#include "sim_backing.hpp"  // detail::IntervalSet

namespace fragscope {

struct AllocConf;

class HostBacking final : public Backing, public ExpandableBacking {
 public:
  static constexpr std::uint64_t kMapGranularity = 2ULL << 20;
  static constexpr std::uint64_t kRegionGranularity = 256;

  // Capacity: conf.capacity or the machine's physical memory. Throws ConfigError when capacity is 0
  // or external_use does not leave any of it.
  explicit HostBacking(const AllocConf& conf);
  // Unmaps whatever is still reserved (an owner that did not give it back), with a warning.
  ~HostBacking() override;
  HostBacking(const HostBacking&) = delete;
  HostBacking& operator=(const HostBacking&) = delete;

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

  // Bytes the backing may hand out: capacity - external_use.
  std::uint64_t available() const { return available_; }

  // Physical memory of this machine (sysconf), the default capacity.
  static std::uint64_t PhysicalMemory();

 private:
  struct Block {
    std::uint64_t bytes = 0;     // requested (region) or max_bytes (range)
    std::uint64_t length = 0;    // what is mmapped: bytes rounded up to the page size
    bool is_range = false;
    detail::IntervalSet mapped;  // ranges only: read/write [offset, offset + bytes)
  };

  Block& FindBlock(const void* base, bool want_range, const char* what);  // caller holds mu_
  Block& CheckPages(const void* base, std::uint64_t offset, std::uint64_t bytes,
                    const char* what);  // caller holds mu_

  BackingInfo info_;
  std::uint64_t available_ = 0;
  std::uint64_t page_size_ = 4096;

  mutable std::mutex mu_;
  std::unordered_map<std::uintptr_t, Block> live_;
  std::uint64_t held_ = 0;  // requested region bytes + mapped range bytes
};

}  // namespace fragscope
