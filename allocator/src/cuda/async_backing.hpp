// The `async` backing: stream-ordered allocation (cudaMallocFromPoolAsync / cudaFreeAsync), the
// baseline of the driver's own caching allocator. Used passthrough only: one call per request.
//
// It allocates from a pool of its own (cudaMemPoolCreate) rather than the device's default pool, so
// that its settings do not leak into other code of the process that uses cudaMallocAsync. The
// pool's release threshold is UINT64_MAX: freed memory stays cached in the pool, as PyTorch's
// cudaMallocAsync backend configures it; otherwise every synchronization would give memory back to
// the driver and the baseline would measure the driver's page mapping, not its allocator. On out of
// memory the backing synchronizes, trims the pool and tries once more before answering nullptr.
//
// Compiled only when FRAGSCOPE_HAVE_CUDA.
#pragma once

#include "cuda/cuda_common.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "fragscope/allocator/backing.hpp"

namespace fragscope {

struct AllocConf;

class AsyncBacking final : public Backing {
 public:
  // Opens conf.device and creates the pool. Throws BackingError when there is no usable device or
  // driver, or the device does not support memory pools.
  explicit AsyncBacking(const AllocConf& conf);
  // Frees what is still held, synchronizes and destroys the pool.
  ~AsyncBacking() override;
  AsyncBacking(const AsyncBacking&) = delete;
  AsyncBacking& operator=(const AsyncBacking&) = delete;

  const BackingInfo& info() const override { return info_; }
  // `stream` is a cudaStream_t; 0 is the legacy default stream. The memory may be used in stream
  // order on `stream` at once; other streams must synchronize with it first.
  void* Reserve(std::uint64_t bytes, std::uint64_t stream) override;
  // Frees in stream order on `stream`: work already queued there may still use the memory.
  void Release(void* base, std::uint64_t bytes, std::uint64_t stream) override;
  // Bytes of live allocations; memory cached in the pool is not counted.
  std::uint64_t held() const override;
  bool orders_streams() const override { return true; }
  bool OrderStreams(std::uint64_t waiting, std::uint64_t freed_on) override {
    return stream_order_.Order(device_, waiting, freed_on);
  }

  // Bytes the pool holds from the driver (live and cached), from cudaMemPoolAttrReservedMemCurrent.
  std::uint64_t pool_reserved() const;

 private:
  cudaError_t Allocate(void** ptr, std::uint64_t bytes, cudaStream_t stream);

  BackingInfo info_;
  int device_ = 0;
  cuda::StreamOrder stream_order_;
  cudaMemPool_t pool_ = nullptr;

  mutable std::mutex mu_;
  std::unordered_map<void*, std::uint64_t> live_;  // base -> bytes
  std::uint64_t held_ = 0;
};

}  // namespace fragscope
