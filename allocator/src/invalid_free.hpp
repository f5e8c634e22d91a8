// The InvalidFree error both caching policies throw, worded alike: a null pointer, a pointer into
// a live allocation (how far in), into free memory (a double free?), or not this allocator's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"

namespace fragscope {

// What lies under the pointer: the block or chunk that contains it, when one does.
struct FreedPlace {
  std::uint64_t start = 0;  // the block's first byte
  bool in_use = false;
};

[[noreturn]] inline void ThrowInvalidFree(std::uint32_t device, void* ptr, const std::optional<FreedPlace>& place) {
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  std::string why = "it is not an address this allocator handed out";
  if (ptr == nullptr) {
    why = "null pointer";
  } else if (place && place->in_use) {
    why = fmt::format("it points {} bytes into the allocation at {:#x}, not to its start", address - place->start,
                      place->start);
  } else if (place) {
    why = "it lies in free memory: already freed (double free?)";
  }
  throw InvalidFree(ptr, fmt::format("device {}: invalid free of {}: {}", device, ptr, why));
}

}  // namespace fragscope
