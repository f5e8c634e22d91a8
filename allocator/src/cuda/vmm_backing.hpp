// The `vmm` backing: CUDA virtual memory management through the driver API. Address space is
// reserved with cuMemAddressReserve; physical memory is created with cuMemCreate, mapped with
// cuMemMap and made accessible with cuMemSetAccess. An expandable range therefore grows and shrinks
// in place, page by page, and no memory is stranded between regions.
//
// Expandable ranges keep one physical allocation per map-granularity page (2 MiB, or the device's
// granularity when that is larger), keyed by offset: any page-aligned piece mapped by earlier Map
// calls can then be unmapped on its own, e.g. the free tail of a range that grew in several steps.
// Plain regions (Reserve) are one reservation backed by one physical allocation.
//
// Compiled only when FRAGSCOPE_HAVE_CUDA; the driver API is reached through cuda::Driver().
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "cuda/cuda_common.hpp"
#include "fragscope/allocator/backing.hpp"

namespace fragscope {

struct AllocConf;

class VmmBacking final : public Backing, public ExpandableBacking {
 public:
  // Opens conf.device. Throws BackingError when there is no usable device or driver, or the device
  // does not support virtual memory management.
  explicit VmmBacking(const AllocConf& conf);
  // Unmaps and frees whatever is still held (an owner that did not give it back), with a warning.
  ~VmmBacking() override;
  VmmBacking(const VmmBacking&) = delete;
  VmmBacking& operator=(const VmmBacking&) = delete;

  // info().granularity is the map granularity: a plain region is backed by whole physical pages.
  const BackingInfo& info() const override { return info_; }
  void* Reserve(std::uint64_t bytes, std::uint64_t stream) override;
  void Release(void* base, std::uint64_t bytes, std::uint64_t stream) override;
  std::uint64_t held() const override;
  bool orders_streams() const override { return true; }
  bool OrderStreams(std::uint64_t waiting, std::uint64_t freed_on) override {
    return stream_order_.Order(device_, waiting, freed_on);
  }
  ExpandableBacking* expandable() override { return this; }

  std::uint64_t map_granularity() const override { return map_granularity_; }
  void* ReserveRange(std::uint64_t max_bytes) override;
  // Synchronizes nothing: new pages hold no data that work in flight could use.
  bool Map(void* base, std::uint64_t offset, std::uint64_t bytes) override;
  // Unmap and Release synchronize the device first, as cudaFree does: a kernel may still be using
  // memory that the caller's allocator has already freed in stream order.
  void Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) override;
  void ReleaseRange(void* base, std::uint64_t max_bytes) override;

  // The device's minimum allocation granularity (cuMemGetAllocationGranularity).
  std::uint64_t device_granularity() const { return device_granularity_; }

 private:
  struct Region {
    std::uint64_t bytes = 0;
    CUmemGenericAllocationHandle handle = 0;
  };
  struct Range {
    std::uint64_t max_bytes = 0;
    std::map<std::uint64_t, CUmemGenericAllocationHandle> pages;  // offset -> physical page
  };

  // Creates `bytes` of physical memory and maps it at `address`; on failure nothing is left behind
  // and `failed_api` names the call that failed.
  CUresult CreateAndMap(CUdeviceptr address, std::uint64_t bytes,
                        CUmemGenericAllocationHandle* handle, const char** failed_api);
  // Unmaps `bytes` at `address` and releases the physical memory behind them.
  CUresult UnmapAndRelease(CUdeviceptr address, std::uint64_t bytes,
                           CUmemGenericAllocationHandle handle, const char** failed_api);
  // Waits for the device before memory goes away; throws BackingError on a failure.
  void SynchronizeDevice(const char* what);
  Range& FindRange(const void* base, const char* what);  // caller holds mu_
  Range& CheckPages(const void* base, std::uint64_t offset, std::uint64_t bytes,
                    const char* what);  // caller holds mu_
  void FreeEverything() noexcept;

  BackingInfo info_;
  int device_ = 0;
  cuda::StreamOrder stream_order_;
  const cuda::DriverApi* api_ = nullptr;
  CUdevice cu_device_ = 0;
  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
  std::uint64_t device_granularity_ = 0;
  std::uint64_t map_granularity_ = 0;

  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, Region> regions_;  // base -> region
  std::unordered_map<std::uint64_t, Range> ranges_;    // base -> expandable range
  std::uint64_t held_ = 0;                             // region bytes + mapped pages
};

}  // namespace fragscope
