// Test patterns in memory from any backing: host memory is written directly, device memory through
// cudaMemcpy (built with CUDA only). Only the first and last `kEdge` bytes of an allocation are
// written, which catches overlap and misplaced pointers without touching gigabytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fragscope/allocator/backing.hpp"
#if defined(FRAGSCOPE_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace fragscope::testing {

inline constexpr std::uint64_t kEdge = 256;

inline bool CanTouch(const BackingInfo& info) {
  return info.host_accessible || info.kind == BackingKind::kCuda || info.kind == BackingKind::kVmm ||
         info.kind == BackingKind::kAsync;
}

// The byte at offset `i` of an allocation with pattern `seed`.
inline std::uint8_t PatternByte(std::uint64_t seed, std::uint64_t i) {
  return static_cast<std::uint8_t>((seed * 0x9E3779B97F4A7C15ull + i * 131) >> 17);
}

inline void Copy(const BackingInfo& info, void* dst, const void* src, std::size_t n, bool to_memory) {
  if (info.host_accessible) {
    std::memcpy(dst, src, n);
    return;
  }
#if defined(FRAGSCOPE_HAVE_CUDA)
  cudaMemcpy(dst, src, n, to_memory ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
#else
  (void)dst, (void)src, (void)n, (void)to_memory;
#endif
}

// The two ranges written: the first and the last kEdge bytes (one range when they meet).
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> EdgeRanges(std::uint64_t bytes) {
  if (bytes <= 2 * kEdge) return {{0, bytes}};
  return {{0, kEdge}, {bytes - kEdge, bytes}};
}

// Writes the pattern for `seed` at both ends of [ptr, ptr + bytes).
inline void WritePattern(const BackingInfo& info, void* ptr, std::uint64_t bytes, std::uint64_t seed) {
  if (bytes == 0 || !CanTouch(info)) return;
  for (const auto& [begin, end] : EdgeRanges(bytes)) {
    std::vector<std::uint8_t> data(end - begin);
    for (std::uint64_t i = begin; i < end; ++i) data[i - begin] = PatternByte(seed, i);
    Copy(info, static_cast<std::uint8_t*>(ptr) + begin, data.data(), data.size(), true);
  }
}

inline bool CheckPattern(const BackingInfo& info, void* ptr, std::uint64_t bytes, std::uint64_t seed) {
  if (bytes == 0 || !CanTouch(info)) return true;
  for (const auto& [begin, end] : EdgeRanges(bytes)) {
    std::vector<std::uint8_t> data(end - begin);
    Copy(info, data.data(), static_cast<std::uint8_t*>(ptr) + begin, data.size(), false);
    for (std::uint64_t i = begin; i < end; ++i) {
      if (data[i - begin] != PatternByte(seed, i)) return false;
    }
  }
  return true;
}

}  // namespace fragscope::testing
