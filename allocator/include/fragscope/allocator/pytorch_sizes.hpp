// PyTorch's CUDA caching allocator's size rules (c10/cuda/CUDACachingAllocator.cpp), as
// preset=pytorch applies them: how a request is rounded and which segment it gets when nothing
// cached fits. Public so that tests and evidence readers use the same arithmetic.
#pragma once

#include <cstdint>

#include "fragscope/allocator/config.hpp"

namespace fragscope::pytorch {

inline constexpr std::uint64_t kMinBlockSize = 512;              // every size rounds to this
inline constexpr std::uint64_t kSmallSize = 1ull << 20;          // largest request of the small pool
inline constexpr std::uint64_t kSmallBuffer = 2ull << 20;        // small pool segments
inline constexpr std::uint64_t kLargeBuffer = 20ull << 20;       // segments for 1-10 MiB requests
inline constexpr std::uint64_t kMinLargeAlloc = 10ull << 20;     // from here, segments fit the request
inline constexpr std::uint64_t kRoundLarge = 2ull << 20;         // ... rounded up to this
inline constexpr std::uint64_t kNoMaxSplit = UINT64_MAX;         // max_split_size unset

// round_size: 512-byte multiples, or the next power-of-two division when roundup_power2_divisions
// asks for it at this size. Precondition: size <= 4 EiB.
std::uint64_t RoundSize(std::uint64_t size, const PytorchSettings& settings);
// get_allocation_size: the segment a request of `size` (rounded) gets when no cached block fits.
std::uint64_t AllocationSize(std::uint64_t size);

}  // namespace fragscope::pytorch
