// Sizes: parsing ("512MiB", "1.5GiB", "64KB", "1048576") and formatting for people ("1.50 KiB")
// and for configuration strings ("768MiB").
//
// Accepted units, case-insensitive, with optional spaces between the number and the unit:
//   (none), B                      bytes
//   KiB MiB GiB TiB PiB EiB        powers of 1024
//   K   M   G   T   P   E          the same powers of 1024 (shorthand, as in "512M")
//   KB  MB  GB  TB  PB  EB         powers of 1000
// The number is decimal digits with an optional fractional part ("1.5"). A fractional number is
// accepted only when the result is a whole number of bytes ("1.5KiB" = 1536, but not "0.5B"); the
// arithmetic is exact (integers, never floating point). Signs, exponents, digit separators and
// hexadecimal are rejected, as is anything that does not fit in 64 bits.
#include "fragscope/allocator/size.hpp"

#include <array>
#include <charconv>
#include <cstddef>
#include <limits>
#include <numeric>
#include <system_error>

#include <fmt/format.h>

namespace fragscope {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t TiB = 1024 * GiB;
constexpr std::uint64_t PiB = 1024 * TiB;
constexpr std::uint64_t EiB = 1024 * PiB;

constexpr bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }
constexpr char ToLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

struct Unit {
  std::string_view name;  // lower case
  std::uint64_t multiplier;
};

constexpr std::array<Unit, 20> kUnits = {{
    {"", 1},
    {"b", 1},
    {"k", KiB}, {"kib", KiB}, {"kb", 1'000},
    {"m", MiB}, {"mib", MiB}, {"mb", 1'000'000},
    {"g", GiB}, {"gib", GiB}, {"gb", 1'000'000'000},
    {"t", TiB}, {"tib", TiB}, {"tb", 1'000'000'000'000},
    {"p", PiB}, {"pib", PiB}, {"pb", 1'000'000'000'000'000},
    {"e", EiB}, {"eib", EiB}, {"eb", 1'000'000'000'000'000'000},
}};

std::optional<std::uint64_t> UnitMultiplier(std::string_view unit) {
  for (const Unit& u : kUnits) {
    if (EqualsIgnoreCase(unit, u.name)) return u.multiplier;
  }
  return std::nullopt;
}

// a * b, or nullopt on overflow.
std::optional<std::uint64_t> CheckedMul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > kMax / a) return std::nullopt;
  return a * b;
}

std::optional<std::uint64_t> CheckedAdd(std::uint64_t a, std::uint64_t b) {
  if (b > kMax - a) return std::nullopt;
  return a + b;
}

// Largest power of ten that fits in uint64 is 10^19.
constexpr std::size_t kMaxFractionDigits = 19;

constexpr std::uint64_t Pow10(std::size_t n) {
  std::uint64_t r = 1;
  for (std::size_t i = 0; i < n; ++i) r *= 10;
  return r;
}

// Bytes of `digits` (the fractional digits after the point, trailing zeros removed) times
// `multiplier`, when that is a whole number; nullopt otherwise.
std::optional<std::uint64_t> FractionBytes(std::string_view digits, std::uint64_t multiplier) {
  if (digits.empty()) return 0;
  // More significant digits than this cannot be held exactly; no realistic size needs them.
  if (digits.size() > kMaxFractionDigits) return std::nullopt;
  std::uint64_t numerator = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), numerator);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  // numerator / 10^k * multiplier, exactly: reduce 10^k against the multiplier first.
  const std::uint64_t denominator = Pow10(digits.size());
  const std::uint64_t g = std::gcd(denominator, multiplier);
  const std::uint64_t rest_denominator = denominator / g;
  if (numerator % rest_denominator != 0) return std::nullopt;  // not a whole number of bytes
  return CheckedMul(numerator / rest_denominator, multiplier / g);
}

std::optional<std::uint64_t> ParseSizeReportingOverflow(std::string_view text, bool* too_large);

}  // namespace

std::optional<std::uint64_t> ParseSize(std::string_view text) {
  bool too_large = false;
  return ParseSizeReportingOverflow(text, &too_large);
}

bool SizeTooLarge(std::string_view text) {
  bool too_large = false;
  return !ParseSizeReportingOverflow(text, &too_large) && too_large;
}

namespace {

std::optional<std::uint64_t> ParseSizeReportingOverflow(std::string_view text, bool* too_large) {
  const std::string_view s = Trim(text);

  std::size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  const std::string_view integer_digits = s.substr(0, i);
  if (integer_digits.empty()) return std::nullopt;  // empty, sign, unit alone, junk

  std::string_view fraction_digits;
  if (i < s.size() && s[i] == '.') {
    const std::size_t start = ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    fraction_digits = s.substr(start, i - start);
    if (fraction_digits.empty()) return std::nullopt;  // "1."
    while (!fraction_digits.empty() && fraction_digits.back() == '0') {
      fraction_digits.remove_suffix(1);
    }
  }

  const std::optional<std::uint64_t> multiplier = UnitMultiplier(Trim(s.substr(i)));
  if (!multiplier) return std::nullopt;

  std::uint64_t integer = 0;
  auto [end, ec] =
      std::from_chars(integer_digits.data(), integer_digits.data() + integer_digits.size(), integer);
  if (ec != std::errc() || end != integer_digits.data() + integer_digits.size()) {
    *too_large = ec == std::errc::result_out_of_range;
    return std::nullopt;
  }

  const std::optional<std::uint64_t> whole = CheckedMul(integer, *multiplier);
  if (!whole) {
    *too_large = true;
    return std::nullopt;
  }
  const std::optional<std::uint64_t> fraction = FractionBytes(fraction_digits, *multiplier);
  if (!fraction) return std::nullopt;
  const std::optional<std::uint64_t> total = CheckedAdd(*whole, *fraction);
  *too_large = !total;
  return total;
}

}  // namespace

std::string FormatSizeExact(std::uint64_t bytes) {
  // The largest binary unit that divides the size exactly, with a whole count; plain bytes when
  // none does. Decimal units are never used: "1000" stays "1000", which reads unambiguously.
  static constexpr std::array<Unit, 6> kExact = {{
      {"EiB", EiB}, {"PiB", PiB}, {"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB},
  }};
  if (bytes != 0) {
    for (const Unit& u : kExact) {
      if (bytes % u.multiplier == 0) return fmt::format("{}{}", bytes / u.multiplier, u.name);
    }
  }
  return fmt::format("{}", bytes);
}

}  // namespace fragscope
