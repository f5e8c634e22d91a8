// Sizes and their arithmetic, for every layer: the largest size fragscope represents, and checked
// sums and products of byte counts. The bottom of the dependency graph, like event.hpp.
//
// Why a cap below 2^64: every size fragscope handles is rounded (to 256 B, to a 2 MiB page, to the
// next power of two for a growing region), doubled (the next region) or added to another size (in
// use plus the request). With every size at most 2^62 none of these can wrap, so the allocator's
// hot path needs one comparison at its entry and no checks after it. A size above the cap is
// refused where it enters: the allocator reports such a request as request-too-large, readers and
// flags reject it with the file, line or flag that gave it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace fragscope::traces {

// 4 EiB: the largest request, region, limit or capacity fragscope represents.
inline constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 62;

inline constexpr bool IsRepresentableSize(std::uint64_t bytes) { return bytes <= kMaxBytes; }

// a + b, or nullopt where it does not fit in 64 bits.
inline constexpr std::optional<std::uint64_t> CheckedAdd(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// a * b, or nullopt where it does not fit in 64 bits.
inline constexpr std::optional<std::uint64_t> CheckedMul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// Thrown where a sum of sizes or counts computed from an input would not fit in 64 bits: the input
// describes more memory than any device has. The message says what was being added up.
class SizeOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

// a + b, or SizeOverflow naming `what` ("live bytes on device 0", ...).
std::uint64_t AddOrThrow(std::uint64_t a, std::uint64_t b, const char* what);

// "0 B", "768 B", "1.50 KiB", "512.00 MiB", "6.00 GiB": binary units, two decimals from KiB up.
// The one way sizes are written for people, in every layer (allocator/size.hpp re-exports it).
std::string FormatBytes(std::uint64_t bytes);

// "18446744073709551615 bytes (16.00 EiB) is more than the 4 EiB fragscope represents": the one
// wording for a size above kMaxBytes, for readers and flags to put after their location.
std::string OversizeMessage(std::uint64_t bytes);

}  // namespace fragscope::traces
