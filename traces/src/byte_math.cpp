#include "fragscope/traces/byte_math.hpp"

#include <fmt/format.h>

namespace fragscope::traces {

std::uint64_t AddOrThrow(std::uint64_t a, std::uint64_t b, const char* what) {
  if (const auto sum = CheckedAdd(a, b)) return *sum;
  throw SizeOverflow(fmt::format("{} overflow 64 bits ({} + {}): the input describes more memory "
                                 "than any device has",
                                 what, a, b));
}

std::string OversizeMessage(std::uint64_t bytes) {
  return fmt::format("{} bytes is more than 4 EiB ({} bytes), the largest size fragscope represents",
                     bytes, kMaxBytes);
}

}  // namespace fragscope::traces
