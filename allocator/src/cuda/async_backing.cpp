#include "cuda/async_backing.hpp"

#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "cuda/cuda_common.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

constexpr std::uint64_t kGranularity = 256;

std::uintptr_t Addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The allocator interface carries streams as integers; 0 is the legacy default stream.
cudaStream_t AsStream(std::uint64_t stream) {
  return reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(stream));
}

}  // namespace

AsyncBacking::AsyncBacking(const AllocConf& conf) : device_(conf.device) {
  cuda::RequireDevice(device_);
  cuda::ScopedDevice guard(device_);
  info_.kind = BackingKind::kAsync;
  info_.device_ordinal = device_;
  info_.device_name = cuda::DeviceName(device_);
  info_.capacity = cuda::BackingCapacity(device_, conf.capacity);
  info_.granularity = kGranularity;
  info_.host_accessible = false;

  int pools_supported = 0;
  cuda::Check(cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, device_),
              "cudaDeviceGetAttribute(cudaDevAttrMemoryPoolsSupported)");
  if (pools_supported == 0) {
    throw BackingError(fmt::format(
        "async backing: device {} ({}) does not support stream-ordered memory pools "
        "(cudaMallocAsync); use backing=cuda",
        device_, info_.device_name));
  }

  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device_;
  cuda::Check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate",
              fmt::format("device {}", device_));
  std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
  const cudaError_t err =
      cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (err != cudaSuccess) {
    cudaMemPoolDestroy(pool_);
    pool_ = nullptr;
    cuda::Throw(err, "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)");
  }
  fragscope::Log().debug("async backing on device {} ({}), capacity {}", device_, info_.device_name,
                FormatBytes(info_.capacity));
}

AsyncBacking::~AsyncBacking() {
  // Best effort and no throwing: at process exit the runtime may already be shutting down.
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  if (!live_.empty()) {
    fragscope::Log().warn("async backing destroyed with {} allocations still held ({}); freeing them",
                 live_.size(), FormatBytes(held_));
    // The streams they were used on are unknown here; cudaFree waits for the device first.
    for (const auto& [base, bytes] : live_) cudaFree(base);
  }
  if (pool_ != nullptr) {
    // A pool is destroyed only once its frees have completed.
    cudaDeviceSynchronize();
    cudaMemPoolDestroy(pool_);
  }
  if (previous >= 0) cudaSetDevice(previous);
  cudaGetLastError();
}

std::uint64_t AsyncBacking::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

std::uint64_t AsyncBacking::pool_reserved() const {
  std::uint64_t reserved = 0;
  cuda::Check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved),
              "cudaMemPoolGetAttribute(cudaMemPoolAttrReservedMemCurrent)");
  return reserved;
}

cudaError_t AsyncBacking::Allocate(void** ptr, std::uint64_t bytes, cudaStream_t stream) {
  const cudaError_t err = cudaMallocFromPoolAsync(ptr, bytes, pool_, stream);
  // Out of memory is an answer; clear it from the thread's last error so that a later
  // cudaGetLastError (after a kernel launch) does not report it.
  if (err == cudaErrorMemoryAllocation) cudaGetLastError();
  return err;
}

void* AsyncBacking::Reserve(std::uint64_t bytes, std::uint64_t stream) {
  if (bytes == 0 || bytes % kGranularity != 0) {
    throw BackingError(fmt::format(
        "async backing: Reserve({} bytes): the size must be a non-zero multiple of {} bytes", bytes,
        kGranularity));
  }
  std::lock_guard lock(mu_);
  if (bytes > info_.capacity - held_) return nullptr;  // a configured capacity below the device's
  cuda::ScopedDevice guard(device_);
  void* p = nullptr;
  cudaError_t err = Allocate(&p, bytes, AsStream(stream));
  if (err == cudaErrorMemoryAllocation) {
    // Frees queued on other streams may not have completed, and the pool's cached blocks may be
    // too small for this request: wait for the device, give the unused cache back to the driver
    // and try once more, so that nullptr means the device is really full.
    cuda::Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize",
                "async backing, before retrying an allocation");
    cuda::Check(cudaMemPoolTrimTo(pool_, 0), "cudaMemPoolTrimTo");
    err = Allocate(&p, bytes, AsStream(stream));
    if (err == cudaErrorMemoryAllocation) return nullptr;
  }
  cuda::Check(err, "cudaMallocFromPoolAsync",
              fmt::format("device {}, {}", device_, FormatBytes(bytes)));
  live_.emplace(p, bytes);
  held_ += bytes;
  return p;
}

void AsyncBacking::Release(void* base, std::uint64_t bytes, std::uint64_t stream) {
  std::lock_guard lock(mu_);
  auto it = live_.find(base);
  if (it == live_.end()) {
    throw BackingError(fmt::format(
        "async backing: Release({:#x}): not an allocation of this backing (never reserved, or "
        "already released)",
        Addr(base)));
  }
  if (it->second != bytes) {
    throw BackingError(fmt::format(
        "async backing: Release({:#x}, {} bytes): the allocation was made with {} bytes",
        Addr(base), bytes, it->second));
  }
  cuda::ScopedDevice guard(device_);
  cuda::Check(cudaFreeAsync(base, AsStream(stream)), "cudaFreeAsync",
              fmt::format("device {}, {:#x}", device_, Addr(base)));
  held_ -= bytes;
  live_.erase(it);
}

}  // namespace fragscope
