#include "fragscope/traces/byte_math.hpp"

#include <array>
#include <string_view>

#include <fmt/format.h>

namespace fragscope::traces {

std::uint64_t AddOrThrow(std::uint64_t a, std::uint64_t b, const char* what) {
  if (const auto sum = CheckedAdd(a, b)) return *sum;
  throw SizeOverflow(fmt::format("{} overflow 64 bits ({} + {}): the input describes more memory "
                                 "than any device has",
                                 what, a, b));
}

// The one formatting of sizes for people (allocator reports, readers' warnings, the CLI and GUI).
std::string FormatBytes(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024;
  if (bytes < kKiB) return fmt::format("{} B", bytes);
  static constexpr std::array<std::string_view, 6> kNames = {"KiB", "MiB", "GiB",
                                                             "TiB", "PiB", "EiB"};
  std::size_t unit = 0;
  std::uint64_t divisor = kKiB;
  while (unit + 1 < kNames.size() && bytes / divisor >= 1024) {
    divisor *= 1024;
    ++unit;
  }
  std::string number =
      fmt::format("{:.2f}", static_cast<double>(bytes) / static_cast<double>(divisor));
  // 1048575 bytes is 1023.999 KiB, which rounds to "1024.00": say "1.00 MiB" instead.
  if (number == "1024.00" && unit + 1 < kNames.size()) {
    divisor *= 1024;
    ++unit;
    number = fmt::format("{:.2f}", static_cast<double>(bytes) / static_cast<double>(divisor));
  }
  return fmt::format("{} {}", number, kNames[unit]);
}

std::string OversizeMessage(std::uint64_t bytes) {
  return fmt::format("{} bytes is more than 4 EiB ({} bytes), the largest size fragscope represents",
                     bytes, kMaxBytes);
}

}  // namespace fragscope::traces
