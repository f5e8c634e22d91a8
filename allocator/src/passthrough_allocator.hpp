// The no-caching baseline: one backing call per request (cudaMalloc, cudaMallocAsync, mmap), one
// region per allocation. Limits and OOM reports work as for BFC, so the two compare like for like.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/device_allocator.hpp"

namespace fragscope {

class PassthroughAllocator final : public DeviceAllocator {
 public:
  PassthroughAllocator(Backing& backing, std::uint32_t device, std::uint64_t limit);
  ~PassthroughAllocator() override;

  void* TryAllocate(std::uint64_t bytes, const AllocOptions& options, OomReport* report) override;
  void Free(void* ptr) override;
  AllocatorStats Stats() const override;
  void ResetPeaks() override;
  AllocatorSnapshot Snapshot() const override;
  std::optional<OomReport> LastOom() const override;
  std::uint64_t ReleaseFreeRegions() override { return 0; }  // nothing is cached
  void CheckInvariants() const override;
  void SetSink(traces::EventSink* sink) override;
  void Mark(std::string_view name) override;
  std::uint32_t device() const override { return device_; }
  std::uint64_t limit() const override { return limit_; }

 private:
  struct Allocation {
    std::uint64_t size = 0;       // bytes taken from the backing
    std::uint64_t requested = 0;
    std::uint64_t alloc_id = 0;
    std::uint64_t stream = 0;
    traces::TagId tag = traces::kNoTag;
  };
  void Emit(traces::EventType type, std::uint64_t address, const Allocation& allocation);

  Backing& backing_;
  const std::uint32_t device_;
  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Allocation> live_;  // by address; a baseline, not a hot path
  AllocatorStats stats_;
  std::uint64_t next_alloc_id_ = 1;
  std::optional<OomReport> last_oom_;
  traces::EventSink* sink_ = nullptr;
};

}  // namespace fragscope
