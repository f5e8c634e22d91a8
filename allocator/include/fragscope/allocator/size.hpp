// One size syntax for every option and key: plain bytes ("1048576") or a number with a unit
// ("512MiB", "1.5GiB", "64KB"). Binary units (KiB, MiB, GiB, TiB) are powers of 1024; decimal units
// (KB, MB, GB, TB) powers of 1000; "B" is bytes. Units are case-insensitive; spaces between number
// and unit are allowed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope {

// Returns nullopt when `text` is not a size (empty, negative, unknown unit, overflow, fractional
// bytes).
std::optional<std::uint64_t> ParseSize(std::string_view text);
// Whether `text` is written as a size but is more than 2^64 - 1 bytes ("99999999999GiB"): an
// error message then says "too large" rather than "not a size".
bool SizeTooLarge(std::string_view text);

// "0 B", "768 B", "1.50 KiB", "512.00 MiB", "6.00 GiB": the lowest layer's (traces/byte_math.hpp).
using traces::FormatBytes;

// Exact form that ParseSize reads back, in the largest binary unit that divides the size:
// "2GiB", "768MiB", "1536KiB", "1000".
std::string FormatSizeExact(std::uint64_t bytes);

inline constexpr std::uint64_t KiB = 1024;
inline constexpr std::uint64_t MiB = 1024 * KiB;
inline constexpr std::uint64_t GiB = 1024 * MiB;

}  // namespace fragscope
