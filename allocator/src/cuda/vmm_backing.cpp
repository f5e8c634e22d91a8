#include "cuda/vmm_backing.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

constexpr std::uint64_t kMinMapGranularity = 2 * MiB;

std::uint64_t RoundUp(std::uint64_t value, std::uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::uintptr_t Addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

VmmBacking::VmmBacking(const AllocConf& conf) : device_(conf.device) {
  cuda::RequireDevice(device_);
  api_ = &cuda::Driver();
  cuda::ScopedDevice guard(device_);  // also makes the primary context current for the driver API
  cuda::CheckDriver(api_->cuDeviceGet(&cu_device_, device_), "cuDeviceGet",
                    fmt::format("device {}", device_));
  const std::string name = cuda::DeviceName(device_);
  int supported = 0;
  cuda::CheckDriver(api_->cuDeviceGetAttribute(
                        &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                        cu_device_),
                    "cuDeviceGetAttribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
  if (supported == 0) {
    throw BackingError(fmt::format(
        "vmm backing: device {} ({}) does not support CUDA virtual memory management "
        "(cuMemCreate/cuMemMap); use backing=cuda",
        device_, name));
  }

  prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;  // no export: plain device memory
  prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop_.location.id = cu_device_;
  std::size_t granularity = 0;
  cuda::CheckDriver(api_->cuMemGetAllocationGranularity(&granularity, &prop_,
                                                        CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                    "cuMemGetAllocationGranularity", fmt::format("device {}", device_));
  if (granularity == 0) granularity = kMinMapGranularity;
  device_granularity_ = granularity;
  // At least 2 MiB, and a multiple of what the device can map.
  map_granularity_ = RoundUp(std::max<std::uint64_t>(kMinMapGranularity, granularity), granularity);
  access_.location = prop_.location;
  access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  info_.kind = BackingKind::kVmm;
  info_.device_ordinal = device_;
  info_.device_name = name;
  info_.capacity = cuda::BackingCapacity(device_, conf.capacity);
  info_.granularity = map_granularity_;
  info_.host_accessible = false;
  fragscope::Log().debug("vmm backing on device {} ({}), capacity {}, map granularity {}", device_, name,
                FormatBytes(info_.capacity), FormatBytes(map_granularity_));
}

VmmBacking::~VmmBacking() { FreeEverything(); }

void VmmBacking::FreeEverything() noexcept {
  if (regions_.empty() && ranges_.empty()) return;
  fragscope::Log().warn("vmm backing destroyed with {} regions and {} ranges still held ({}); freeing them",
               regions_.size(), ranges_.size(), FormatBytes(held_));
  // Best effort: errors are ignored because at process exit the driver may already be going away,
  // and then it reclaims the memory itself.
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
  const char* api = nullptr;
  for (const auto& [base, region] : regions_) {
    UnmapAndRelease(base, region.bytes, region.handle, &api);
    api_->cuMemAddressFree(base, region.bytes);
  }
  for (const auto& [base, range] : ranges_) {
    for (const auto& [offset, handle] : range.pages) {
      UnmapAndRelease(base + offset, map_granularity_, handle, &api);
    }
    api_->cuMemAddressFree(base, range.max_bytes);
  }
  if (previous >= 0) cudaSetDevice(previous);
  cudaGetLastError();
}

std::uint64_t VmmBacking::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

CUresult VmmBacking::CreateAndMap(CUdeviceptr address, std::uint64_t bytes,
                                  CUmemGenericAllocationHandle* handle, const char** failed_api) {
  CUmemGenericAllocationHandle created = 0;
  CUresult result = api_->cuMemCreate(&created, bytes, &prop_, 0);
  if (result != CUDA_SUCCESS) {
    *failed_api = "cuMemCreate";
    return result;
  }
  result = api_->cuMemMap(address, bytes, 0, created, 0);
  if (result != CUDA_SUCCESS) {
    api_->cuMemRelease(created);
    *failed_api = "cuMemMap";
    return result;
  }
  *handle = created;
  return CUDA_SUCCESS;
}

CUresult VmmBacking::UnmapAndRelease(CUdeviceptr address, std::uint64_t bytes,
                                     CUmemGenericAllocationHandle handle,
                                     const char** failed_api) {
  CUresult result = api_->cuMemUnmap(address, bytes);
  if (result != CUDA_SUCCESS) {
    *failed_api = "cuMemUnmap";
    return result;
  }
  result = api_->cuMemRelease(handle);
  if (result != CUDA_SUCCESS) *failed_api = "cuMemRelease";
  return result;
}

void VmmBacking::SynchronizeDevice(const char* what) {
  cuda::Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize",
              fmt::format("vmm backing, before {} on device {}", what, device_));
}

void* VmmBacking::Reserve(std::uint64_t bytes, std::uint64_t /*stream*/) {
  if (bytes == 0 || bytes % map_granularity_ != 0) {
    throw BackingError(fmt::format(
        "vmm backing: Reserve({} bytes): the size must be a non-zero multiple of {} (physical "
        "pages are mapped whole)",
        bytes, FormatBytes(map_granularity_)));
  }
  std::lock_guard lock(mu_);
  if (bytes > info_.capacity - held_) return nullptr;
  cuda::ScopedDevice guard(device_);
  CUdeviceptr base = 0;
  CUresult result = api_->cuMemAddressReserve(&base, bytes, map_granularity_, 0, 0);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
  cuda::CheckDriver(result, "cuMemAddressReserve", FormatBytes(bytes));

  CUmemGenericAllocationHandle handle = 0;
  const char* failed_api = nullptr;
  result = CreateAndMap(base, bytes, &handle, &failed_api);
  if (result == CUDA_SUCCESS) {
    failed_api = "cuMemSetAccess";
    result = api_->cuMemSetAccess(base, bytes, &access_, 1);
    if (result != CUDA_SUCCESS) {
      const char* ignored = nullptr;
      UnmapAndRelease(base, bytes, handle, &ignored);
    }
  }
  if (result != CUDA_SUCCESS) {
    api_->cuMemAddressFree(base, bytes);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    cuda::ThrowDriver(result, failed_api,
                      fmt::format("device {}, {} region", device_, FormatBytes(bytes)));
  }
  regions_.emplace(base, Region{bytes, handle});
  held_ += bytes;
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(base));
}

void VmmBacking::Release(void* base, std::uint64_t bytes, std::uint64_t /*stream*/) {
  std::lock_guard lock(mu_);
  auto it = regions_.find(Addr(base));
  if (it == regions_.end()) {
    throw BackingError(fmt::format(
        "vmm backing: Release({:#x}): {}", Addr(base),
        ranges_.contains(Addr(base))
            ? "the address is an expandable range (use ReleaseRange)"
            : "not a region of this backing (never reserved, or already released)"));
  }
  if (it->second.bytes != bytes) {
    throw BackingError(fmt::format(
        "vmm backing: Release({:#x}, {} bytes): the region was reserved with {} bytes",
        Addr(base), bytes, it->second.bytes));
  }
  cuda::ScopedDevice guard(device_);
  SynchronizeDevice("Release");
  const char* failed_api = nullptr;
  const CUresult result = UnmapAndRelease(Addr(base), bytes, it->second.handle, &failed_api);
  cuda::CheckDriver(result, failed_api, fmt::format("device {}, {:#x}", device_, Addr(base)));
  cuda::CheckDriver(api_->cuMemAddressFree(Addr(base), bytes), "cuMemAddressFree");
  held_ -= bytes;
  regions_.erase(it);
}

void* VmmBacking::ReserveRange(std::uint64_t max_bytes) {
  if (max_bytes == 0 || max_bytes % map_granularity_ != 0) {
    throw BackingError(fmt::format(
        "vmm backing: ReserveRange({} bytes): the size must be a non-zero multiple of {}",
        max_bytes, FormatBytes(map_granularity_)));
  }
  std::lock_guard lock(mu_);
  cuda::ScopedDevice guard(device_);
  CUdeviceptr base = 0;
  const CUresult result = api_->cuMemAddressReserve(&base, max_bytes, map_granularity_, 0, 0);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;  // no address space left
  cuda::CheckDriver(result, "cuMemAddressReserve", FormatBytes(max_bytes));
  ranges_.emplace(base, Range{max_bytes, {}});
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(base));
}

VmmBacking::Range& VmmBacking::FindRange(const void* base, const char* what) {
  auto it = ranges_.find(Addr(base));
  if (it == ranges_.end()) {
    throw BackingError(fmt::format(
        "vmm backing: {}({:#x}): {}", what, Addr(base),
        regions_.contains(Addr(base))
            ? "the address is a region, not an expandable range (use Release)"
            : "not an expandable range of this backing (never reserved, or already released)"));
  }
  return it->second;
}

VmmBacking::Range& VmmBacking::CheckPages(const void* base, std::uint64_t offset,
                                          std::uint64_t bytes, const char* what) {
  Range& range = FindRange(base, what);
  if (bytes == 0 || offset % map_granularity_ != 0 || bytes % map_granularity_ != 0) {
    throw BackingError(fmt::format(
        "vmm backing: {}({:#x}, offset {}, {} bytes): offset and size must be multiples of {} "
        "and the size non-zero",
        what, Addr(base), offset, bytes, FormatBytes(map_granularity_)));
  }
  if (offset > range.max_bytes || bytes > range.max_bytes - offset) {
    throw BackingError(fmt::format(
        "vmm backing: {}({:#x}, offset {}, {} bytes): past the end of the {} range", what,
        Addr(base), offset, bytes, FormatBytes(range.max_bytes)));
  }
  return range;
}

bool VmmBacking::Map(void* base, std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Range& range = CheckPages(base, offset, bytes, "Map");
  auto next = range.pages.lower_bound(offset);
  if (next != range.pages.end() && next->first < offset + bytes) {
    throw BackingError(fmt::format(
        "vmm backing: Map({:#x}, offset {}, {} bytes): the page at offset {} is already mapped",
        Addr(base), offset, bytes, next->first));
  }
  if (bytes > info_.capacity - held_) return false;

  cuda::ScopedDevice guard(device_);
  const std::uint64_t start = Addr(base) + offset;
  std::vector<std::pair<std::uint64_t, CUmemGenericAllocationHandle>> created;
  created.reserve(bytes / map_granularity_);
  // Puts back what this call did so that a failed Map leaves nothing mapped.
  auto undo = [&] {
    const char* ignored = nullptr;
    for (const auto& [page_offset, handle] : created) {
      UnmapAndRelease(Addr(base) + page_offset, map_granularity_, handle, &ignored);
    }
  };
  CUresult result = CUDA_SUCCESS;
  const char* failed_api = nullptr;
  for (std::uint64_t page = offset; page < offset + bytes; page += map_granularity_) {
    CUmemGenericAllocationHandle handle = 0;
    result = CreateAndMap(Addr(base) + page, map_granularity_, &handle, &failed_api);
    if (result != CUDA_SUCCESS) break;
    created.emplace_back(page, handle);
  }
  if (result == CUDA_SUCCESS) {
    // One call for the whole piece: access is set per mapping, and a range of whole mappings is
    // accepted, so the per-page cost is only cuMemCreate and cuMemMap.
    failed_api = "cuMemSetAccess";
    result = api_->cuMemSetAccess(start, bytes, &access_, 1);
  }
  if (result != CUDA_SUCCESS) {
    undo();
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return false;
    cuda::ThrowDriver(result, failed_api,
                      fmt::format("device {}, mapping {} at {:#x}", device_, FormatBytes(bytes),
                                  start));
  }
  range.pages.insert(created.begin(), created.end());
  held_ += bytes;
  return true;
}

void VmmBacking::Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Range& range = CheckPages(base, offset, bytes, "Unmap");
  const auto first = range.pages.lower_bound(offset);
  const auto last = range.pages.lower_bound(offset + bytes);
  if (static_cast<std::uint64_t>(std::distance(first, last)) != bytes / map_granularity_) {
    throw BackingError(fmt::format(
        "vmm backing: Unmap({:#x}, offset {}, {} bytes): part of the range is not mapped",
        Addr(base), offset, bytes));
  }
  cuda::ScopedDevice guard(device_);
  SynchronizeDevice("Unmap");
  // Page by page, each its own mapping; the bookkeeping follows each success so that it stays true
  // even if a call fails half way.
  for (auto it = first; it != last;) {
    const char* failed_api = nullptr;
    const CUresult result =
        UnmapAndRelease(Addr(base) + it->first, map_granularity_, it->second, &failed_api);
    cuda::CheckDriver(result, failed_api,
                      fmt::format("device {}, page at {:#x}", device_, Addr(base) + it->first));
    held_ -= map_granularity_;
    it = range.pages.erase(it);
  }
}

void VmmBacking::ReleaseRange(void* base, std::uint64_t max_bytes) {
  std::lock_guard lock(mu_);
  Range& range = FindRange(base, "ReleaseRange");
  if (range.max_bytes != max_bytes) {
    throw BackingError(fmt::format(
        "vmm backing: ReleaseRange({:#x}, {} bytes): the range was reserved with {} bytes",
        Addr(base), max_bytes, range.max_bytes));
  }
  if (!range.pages.empty()) {
    throw BackingError(fmt::format(
        "vmm backing: ReleaseRange({:#x}): {} are still mapped; unmap every page first",
        Addr(base), FormatBytes(range.pages.size() * map_granularity_)));
  }
  cuda::ScopedDevice guard(device_);
  cuda::CheckDriver(api_->cuMemAddressFree(Addr(base), max_bytes), "cuMemAddressFree",
                    fmt::format("device {}, {:#x}", device_, Addr(base)));
  ranges_.erase(Addr(base));
}

}  // namespace fragscope
