// Sizes as frameworks print them in out-of-memory messages (oom_message_text.hpp).
#include "import/oom_message_text.hpp"

#include <array>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope::traces::oomtext {
namespace {

// 128 bits for a mantissa of up to 30 digits times a unit of up to 2^60 (GCC and Clang).
__extension__ typedef unsigned __int128 Wide;

struct Unit {
  std::string_view name;
  int power;  // of 1024
};

// Longest names first, so "GiB" is not read as "G". Every framework prints 1024-based values
// whatever the unit's name: PyTorch's format_size (MPS says "GB"), TensorFlow's and XLA's
// HumanReadableNumBytes ("1.52G", "372.76MiB").
constexpr std::array<Unit, 24> kUnits = {{
    {"bytes", 0}, {"byte", 0}, {"KiB", 1}, {"MiB", 2}, {"GiB", 3}, {"TiB", 4}, {"PiB", 5}, {"EiB", 6},
    {"KB", 1},    {"kB", 1},   {"MB", 2},  {"GB", 3},  {"TB", 4},  {"PB", 5},  {"EB", 6},  {"B", 0},
    {"K", 1},     {"k", 1},    {"M", 2},   {"G", 3},   {"T", 4},   {"P", 5},   {"E", 6},   {"b", 0},
}};

}  // namespace

std::optional<PrintedSize> TakeSize(std::string_view& s, bool* oversize) {
  std::string_view p = TrimLeft(s);
  const char* start = p.data();
  std::size_t i = 0;
  // Digits: keep the first 30 significant ones (more cannot be a size; they only count as scale).
  Wide mantissa = 0;
  int int_digits = 0, frac_digits = 0;
  bool too_long = false;
  while (i < p.size() && IsDigit(p[i])) {
    if (int_digits < 30) {
      mantissa = mantissa * 10 + static_cast<unsigned>(p[i] - '0');
    } else {
      too_long = true;
    }
    ++int_digits;
    ++i;
  }
  if (int_digits == 0) return std::nullopt;
  if (i + 1 < p.size() && p[i] == '.' && IsDigit(p[i + 1])) {
    ++i;
    while (i < p.size() && IsDigit(p[i])) {
      if (frac_digits < 6 && !too_long && int_digits + frac_digits < 30) {
        mantissa = mantissa * 10 + static_cast<unsigned>(p[i] - '0');
        ++frac_digits;
      }
      ++i;
    }
  }
  std::size_t j = i;
  while (j < p.size() && (p[j] == ' ' || p[j] == '\t') && j - i < 4) ++j;
  const std::string_view rest = p.substr(j);
  const Unit* unit = nullptr;
  for (const Unit& u : kUnits) {
    if (rest.substr(0, u.name.size()) == u.name &&
        (rest.size() == u.name.size() || !IsAlpha(rest[u.name.size()]))) {
      unit = &u;
      break;
    }
  }
  if (unit == nullptr) return std::nullopt;
  // A bare "B"/"b"/"K"… right after the digits only (no blank): "0B", "21.95G"; "1 b" is prose.
  if (unit->name.size() == 1 && j != i) return std::nullopt;
  const std::size_t end = j + unit->name.size();
  Wide scale = 1;
  for (int k = 0; k < unit->power; ++k) scale *= 1024;
  Wide divisor = 1;
  for (int k = 0; k < frac_digits; ++k) divisor *= 10;
  PrintedSize out;
  out.text = std::string(start, end);
  s = p.substr(end);
  const Wide kCap = kMaxBytes;
  // mantissa < 10^30 < 2^100 and scale ≤ 2^60: the product can overflow 128 bits; check first.
  const bool big = too_long || (mantissa != 0 && scale > (~static_cast<Wide>(0)) / mantissa);
  const Wide value = big ? kCap + 1 : (mantissa * scale + divisor / 2) / divisor;
  if (value > kCap) {
    if (oversize != nullptr) *oversize = true;
    return std::nullopt;
  }
  out.bytes = static_cast<std::uint64_t>(value);
  // Half a unit of the last printed digit; an integer number of bytes is exact.
  out.tolerance = static_cast<std::uint64_t>((scale / divisor) / 2);
  if (oversize != nullptr) *oversize = false;
  return out;
}

std::optional<PrintedSize> SizeAfter(std::string_view s, std::string_view label, std::string* problem,
                                     std::size_t from) {
  const std::size_t at = s.find(label, from);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = s.substr(at + label.size());
  rest = TrimLeft(rest);
  if (!rest.empty() && rest.front() == ':') rest = TrimLeft(rest.substr(1));
  bool oversize = false;
  std::string_view probe = rest;
  auto size = TakeSize(probe, &oversize);
  if (!size && oversize && problem != nullptr) {
    std::string_view number = rest.substr(0, std::min<std::size_t>(rest.size(), 40));
    const std::size_t cut = number.find_first_of(";,()\n");
    *problem = fmt::format("{} {}: more than the 4 EiB fragscope represents", Trim(label),
                           Trim(cut == std::string_view::npos ? number : number.substr(0, cut)));
  }
  return size;
}

std::optional<PrintedSize> SizeBefore(std::string_view s, std::size_t end, std::string* problem) {
  if (end > s.size()) return std::nullopt;
  std::size_t i = end;
  while (i > 0 && IsBlank(s[i - 1])) --i;
  // Back over the unit and the number ("576.00 KiB", "0 bytes", "8.13 GiB").
  std::size_t j = i;
  while (j > 0 && IsAlpha(s[j - 1])) --j;
  while (j > 0 && IsBlank(s[j - 1]) && i - j < 12) --j;
  std::size_t k = j;
  while (k > 0 && (IsDigit(s[k - 1]) || s[k - 1] == '.')) --k;
  if (k == j) return std::nullopt;
  std::string_view piece = s.substr(k, i - k);
  bool oversize = false;
  auto size = TakeSize(piece, &oversize);
  if (!size && oversize && problem != nullptr) {
    *problem = fmt::format("{}: more than the 4 EiB fragscope represents", Trim(s.substr(k, i - k)));
  }
  return size;
}

std::optional<std::uint64_t> UintAfter(std::string_view s, std::string_view label, std::size_t from) {
  const std::size_t at = s.find(label, from);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = TrimLeft(s.substr(at + label.size()));
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (ec != std::errc() || ptr == rest.data()) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> GroupedUintAfter(std::string_view s, std::string_view label, std::size_t from,
                                              std::string_view* printed) {
  const std::size_t at = s.find(label, from);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = TrimLeft(s.substr(at + label.size()));
  std::uint64_t value = 0;
  std::size_t i = 0;
  const auto take_digit = [&](char c) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;  // past 64 bits: no number fragscope can hold
    value = value * 10 + digit;
    return true;
  };
  while (i < rest.size() && IsDigit(rest[i])) {
    if (!take_digit(rest[i++])) return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  while (i + 3 < rest.size() && rest[i] == ',' && IsDigit(rest[i + 1]) && IsDigit(rest[i + 2]) &&
         IsDigit(rest[i + 3]) && (i + 4 == rest.size() || !IsDigit(rest[i + 4]))) {
    for (std::size_t k = i + 1; k <= i + 3; ++k) {
      if (!take_digit(rest[k])) return std::nullopt;
    }
    i += 4;
  }
  if (printed != nullptr) *printed = rest.substr(0, i);
  return value;
}

std::string StripAnsi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\x1b') {
      out += s[i];
      continue;
    }
    // CSI: ESC '[', parameter and intermediate bytes (0x20–0x3F), one final byte (0x40–0x7E).
    if (i + 1 < s.size() && s[i + 1] == '[') {
      std::size_t k = i + 2;
      while (k < s.size() && s[k] >= 0x20 && s[k] <= 0x3F) ++k;
      i = k < s.size() && s[k] >= 0x40 && s[k] <= 0x7E ? k : k - 1;
    }
    // A lone ESC (or one that starts another kind of sequence) is dropped by itself.
  }
  return out;
}

std::string_view IdentifierAt(std::string_view s, std::size_t pos) {
  std::size_t end = pos;
  while (end < s.size() && (IsAlpha(s[end]) || IsDigit(s[end]) || s[end] == '_')) ++end;
  return s.substr(pos, end - pos);
}

}  // namespace fragscope::traces::oomtext
