// The `cuda` backing: one cudaMalloc per region, cudaFree to give it back. The baseline every GPU
// caching allocator is measured against, and the source of regions for the BFC allocator on a GPU.
// Compiled only when FRAGSCOPE_HAVE_CUDA.
#pragma once

#include "cuda/cuda_common.hpp"

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "fragscope/allocator/backing.hpp"

namespace fragscope {

struct AllocConf;

class CudaBacking final : public Backing {
 public:
  // Opens conf.device. Capacity: the device's total memory, or conf.capacity when that is smaller
  // (to rehearse a smaller GPU). Throws BackingError when there is no usable device or driver.
  explicit CudaBacking(const AllocConf& conf);
  // Frees regions still held (an owner that did not give them back), with a warning.
  ~CudaBacking() override;
  CudaBacking(const CudaBacking&) = delete;
  CudaBacking& operator=(const CudaBacking&) = delete;

  const BackingInfo& info() const override { return info_; }
  void* Reserve(std::uint64_t bytes, std::uint64_t stream) override;
  void Release(void* base, std::uint64_t bytes, std::uint64_t stream) override;
  std::uint64_t held() const override;
  bool orders_streams() const override { return true; }
  bool OrderStreams(std::uint64_t waiting, std::uint64_t freed_on) override {
    return stream_order_.Order(device_, waiting, freed_on);
  }

 private:
  BackingInfo info_;
  int device_ = 0;
  cuda::StreamOrder stream_order_;

  mutable std::mutex mu_;
  std::unordered_map<void*, std::uint64_t> live_;  // base -> bytes
  std::uint64_t held_ = 0;
};

}  // namespace fragscope
