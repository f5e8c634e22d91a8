#include "cuda/cuda_backing.hpp"

#include <cuda_runtime_api.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "cuda/cuda_common.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

constexpr std::uint64_t kGranularity = 256;  // cudaMalloc returns at least 256-byte alignment

std::uintptr_t Addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

CudaBacking::CudaBacking(const AllocConf& conf) : device_(conf.device) {
  cuda::RequireDevice(device_);
  info_.kind = BackingKind::kCuda;
  info_.device_ordinal = device_;
  info_.device_name = cuda::DeviceName(device_);
  info_.capacity = cuda::BackingCapacity(device_, conf.capacity);
  info_.granularity = kGranularity;
  info_.host_accessible = false;
  fragscope::Log().debug("cuda backing on device {} ({}), capacity {}", device_, info_.device_name,
                FormatBytes(info_.capacity));
}

CudaBacking::~CudaBacking() {
  if (live_.empty()) return;
  fragscope::Log().warn("cuda backing destroyed with {} regions still held ({}); freeing them",
               live_.size(), FormatBytes(held_));
  // Best effort and no throwing: at process exit the runtime may already be shutting down
  // (cudaErrorCudartUnloading), and then the driver reclaims the memory anyway.
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  for (const auto& [base, bytes] : live_) cudaFree(base);
  if (previous >= 0) cudaSetDevice(previous);
  cudaGetLastError();
}

std::uint64_t CudaBacking::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

void* CudaBacking::Reserve(std::uint64_t bytes, std::uint64_t /*stream*/) {
  if (bytes == 0 || bytes % kGranularity != 0) {
    throw BackingError(fmt::format(
        "cuda backing: Reserve({} bytes): the size must be a non-zero multiple of {} bytes", bytes,
        kGranularity));
  }
  // The lock spans cudaMalloc so that the capacity check and the allocation are one step; this is
  // the slow path of every allocator, and cudaMalloc serializes inside the driver anyway.
  std::lock_guard lock(mu_);
  if (bytes > info_.capacity - held_) return nullptr;  // a configured capacity below the device's
  cuda::ScopedDevice guard(device_);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    // Out of memory is an answer, not a failure. The runtime also records it as the thread's last
    // error; clear it so that the next cudaGetLastError after a kernel launch does not report it.
    cudaGetLastError();
    return nullptr;
  }
  cuda::Check(err, "cudaMalloc", fmt::format("device {}, {}", device_, FormatBytes(bytes)));
  live_.emplace(p, bytes);
  held_ += bytes;
  return p;
}

void CudaBacking::Release(void* base, std::uint64_t bytes, std::uint64_t /*stream*/) {
  std::lock_guard lock(mu_);
  auto it = live_.find(base);
  if (it == live_.end()) {
    throw BackingError(fmt::format(
        "cuda backing: Release({:#x}): {}", Addr(base),
        Addr(base) % kGranularity != 0
            ? "misaligned address; cudaMalloc regions start on 256-byte boundaries"
            : "not a region of this backing (never reserved, or already released)"));
  }
  if (it->second != bytes) {
    throw BackingError(fmt::format(
        "cuda backing: Release({:#x}, {} bytes): the region was reserved with {} bytes",
        Addr(base), bytes, it->second));
  }
  cuda::ScopedDevice guard(device_);
  // cudaFree waits for the device to finish work that may still use the region, so the caller
  // need not synchronize first.
  cuda::Check(cudaFree(base), "cudaFree",
              fmt::format("device {}, {:#x}, {}", device_, Addr(base), FormatBytes(bytes)));
  held_ -= bytes;
  live_.erase(it);
}

}  // namespace fragscope
