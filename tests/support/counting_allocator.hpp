// A toy policy's allocator for the tests that show a policy registered outside the library being
// picked up (the conformance tables, MemorySystem, replay): an adaptor over another policy's
// allocator that counts the allocations it forwards.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "fragscope/allocator/device_allocator.hpp"

namespace fragscope::testing {

class CountingAllocator final : public DeviceAllocator {
 public:
  // Counts into `*allocations`, which must outlive the allocator.
  CountingAllocator(std::unique_ptr<DeviceAllocator> upstream, std::atomic<int>* allocations)
      : upstream_(std::move(upstream)), allocations_(allocations) {}
  void* TryAllocate(std::uint64_t bytes, const AllocOptions& options, OomReport* report) override {
    ++*allocations_;
    return upstream_->TryAllocate(bytes, options, report);
  }
  void Free(void* ptr) override { upstream_->Free(ptr); }
  AllocatorStats Stats() const override { return upstream_->Stats(); }
  void ResetPeaks() override { upstream_->ResetPeaks(); }
  AllocatorSnapshot Snapshot() const override { return upstream_->Snapshot(); }
  std::optional<OomReport> LastOom() const override { return upstream_->LastOom(); }
  std::uint64_t ReleaseFreeRegions() override { return upstream_->ReleaseFreeRegions(); }
  void CheckInvariants() const override { upstream_->CheckInvariants(); }
  void SetSink(traces::EventSink* sink) override { upstream_->SetSink(sink); }
  void Mark(std::string_view name) override { upstream_->Mark(name); }
  std::uint32_t device() const override { return upstream_->device(); }
  std::uint64_t limit() const override { return upstream_->limit(); }

 private:
  std::unique_ptr<DeviceAllocator> upstream_;
  std::atomic<int>* allocations_;
};

}  // namespace fragscope::testing
