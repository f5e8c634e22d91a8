// Timestamps and thread ids for events. Only called when a sink is attached.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace fragscope {

inline std::uint64_t MonotonicNs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// A small, stable number per thread (1, 2, 3, ... in order of first event), easier to read in a
// trace than an OS thread id.
inline std::uint32_t ThreadOrdinal() {
  static std::atomic<std::uint32_t> next{1};
  thread_local const std::uint32_t ordinal = next.fetch_add(1, std::memory_order_relaxed);
  return ordinal;
}

}  // namespace fragscope
