#include "pytorch_settings.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"

namespace fragscope::pytorch {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kMinSplitMiB = 20;  // PyTorch refuses less: its large segments are 20 MiB

[[noreturn]] void BadValue(std::string_view key, std::string_view value, std::string_view expected) {
  throw ConfigError(std::string(key), fmt::format("bad value '{}' for key '{}': expected {}", value, key, expected));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A whole decimal number, nothing around it.
std::optional<std::uint64_t> ParseWhole(std::string_view text) {
  text = Trim(text);
  std::uint64_t number = 0;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(text.data(), last, number);
  if (text.empty() || ec != std::errc() || end != last) return std::nullopt;
  return number;
}

}  // namespace

void ParseMaxSplitSizeMb(std::string_view key, std::string_view value, PytorchSettings& settings) {
  const std::optional<std::uint64_t> mib = ParseWhole(value);
  if (!mib || *mib < kMinSplitMiB) {
    BadValue(key, value, "a whole number of MiB of at least 20 (PyTorch's minimum, its large segment size)");
  }
  // As PyTorch, a huge value means no limit at all; sizes stop at 4 EiB here.
  settings.max_split_size = *mib >= (std::uint64_t{1} << 42) ? UINT64_MAX : *mib * kMiB;
}

void ParseGarbageCollectionThreshold(std::string_view key, std::string_view value, PytorchSettings& settings) {
  const std::string_view text = Trim(value);
  double fraction = 0.0;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(text.data(), last, fraction, std::chars_format::general);
  if (text.empty() || ec != std::errc() || end != last || !std::isfinite(fraction) || fraction <= 0.0 ||
      fraction >= 1.0) {
    BadValue(key, value, "a fraction of the limit strictly between 0 and 1, such as 0.8 (as PyTorch)");
  }
  settings.garbage_collection_threshold = fraction;
}

void ParseRoundupPower2Divisions(std::string_view key, std::string_view value, PytorchSettings& settings) {
  constexpr std::string_view kExpect =
      "a power of two such as 4 (divisions for every size), or a list of size intervals in MiB "
      "such as [256:1,512:2,>:8], each a power of two, with divisions of 0 or a power of two";
  auto& divisions = settings.roundup_power2_divisions;
  const std::string_view text = Trim(value);
  if (text.empty() || text.front() != '[') {
    const std::optional<std::uint64_t> number = ParseWhole(text);
    if (!number || !std::has_single_bit(*number) || *number > (std::uint64_t{1} << 31)) BadValue(key, value, kExpect);
    divisions.fill(static_cast<std::uint32_t>(*number));
    return;
  }
  if (text.back() != ']') BadValue(key, value, kExpect);
  std::string_view rest = text.substr(1, text.size() - 2);
  std::array<std::uint32_t, 16> result{};
  bool first = true;
  std::size_t last_index = 0;
  bool any = false;
  while (!Trim(rest).empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (comma != std::string_view::npos && Trim(rest).empty()) BadValue(key, value, kExpect);
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) BadValue(key, value, kExpect);
    const std::string_view boundary = Trim(item.substr(0, colon));
    const std::optional<std::uint64_t> count = ParseWhole(item.substr(colon + 1));
    if (!count || (*count != 0 && !std::has_single_bit(*count)) || *count > (std::uint64_t{1} << 31)) {
      BadValue(key, value, kExpect);
    }
    const auto v = static_cast<std::uint32_t>(*count);
    any = true;
    if (boundary == ">") {  // every interval after the last one named
      std::fill(result.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(last_index + 1, 16)), result.end(), v);
      continue;
    }
    const std::optional<std::uint64_t> mib = ParseWhole(boundary);
    if (!mib || !std::has_single_bit(*mib)) BadValue(key, value, kExpect);
    // As PyTorch: the interval of sizes from `mib` MiB to twice that, clamped to the table, and
    // the first value also covers every smaller size.
    const std::size_t index = std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(*mib) - 1), 15);
    if (first) {
      std::fill(result.begin(), result.begin() + static_cast<std::ptrdiff_t>(index), v);
      first = false;
    }
    result[index] = v;
    last_index = index;
  }
  if (!any) BadValue(key, value, kExpect);
  divisions = result;
}

std::string FormatMaxSplitSizeMb(const PytorchSettings& settings) {
  return fmt::format("{}", settings.max_split_size / kMiB);
}

std::string FormatGarbageCollectionThreshold(const PytorchSettings& settings) {
  return fmt::format("{}", settings.garbage_collection_threshold);  // shortest that reads back equal
}

std::string FormatRoundupPower2Divisions(const PytorchSettings& settings) {
  const auto& d = settings.roundup_power2_divisions;
  if (std::all_of(d.begin(), d.end(), [](std::uint32_t v) { return v == 0; })) return "";
  if (d[0] != 0 && std::all_of(d.begin(), d.end(), [&d](std::uint32_t v) { return v == d[0]; })) {
    return fmt::format("{}", d[0]);
  }
  // The shortest list that parses back equal: the first entry covers the run of equal values from
  // the smallest sizes (its value also fills below it), '>' the run of equal values up to the
  // largest, and the intervals between are named one by one.
  const std::size_t n = d.size();
  std::size_t first_end = 0;  // the last index of the leading run
  while (first_end + 1 < n && d[first_end + 1] == d[0]) ++first_end;
  std::size_t tail_start = n - 1;  // the first index of the trailing run
  while (tail_start > 0 && d[tail_start - 1] == d[n - 1]) --tail_start;
  std::string out = fmt::format("[{}:{}", std::uint64_t{1} << first_end, d[0]);
  for (std::size_t i = first_end + 1; i < std::max(tail_start, first_end + 1); ++i) {
    out += fmt::format(",{}:{}", std::uint64_t{1} << i, d[i]);
  }
  if (first_end + 1 < n) out += fmt::format(",>:{}", d[n - 1]);
  return out + "]";
}

}  // namespace fragscope::pytorch
