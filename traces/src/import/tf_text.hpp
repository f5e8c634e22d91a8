// Small text scanners shared by the TensorFlow BFC log reader (and the RMM CSV reader): no regex,
// no allocation, every function tolerates any input.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fragscope::traces::tftext {

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

inline std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

inline std::string_view Trim(std::string_view s) {
  s = TrimLeft(s);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Unsigned decimal at the start of `s` (after blanks); advances `s` past it.
inline std::optional<std::uint64_t> TakeUint(std::string_view& s) {
  s = TrimLeft(s);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc()) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return value;
}

// Hexadecimal with or without 0x / 0X, any case ("0x7f94a939ca00", "f00950000",
// "000000081C56C700"); advances `s` past it.
inline std::optional<std::uint64_t> TakeHex(std::string_view& s) {
  s = TrimLeft(s);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 16);
  if (ec != std::errc()) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return value;
}

// A fraction of a second at the start of `s` (".123456": any number of digits, none at all when no
// '.' is there) as nanoseconds, digits past the ninth dropped; advances `s` past it.
inline std::uint64_t TakeFractionNs(std::string_view& s) {
  if (!StartsWith(s, ".")) return 0;
  s.remove_prefix(1);
  std::uint64_t ns = 0, scale = 1000000000ULL;
  while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
    if (scale > 1) {
      scale /= 10;
      ns += static_cast<std::uint64_t>(s.front() - '0') * scale;
    }
    s.remove_prefix(1);
  }
  return ns;
}

// What stands where a number is expected, for readers that must say why they cannot take it.
enum class NumberKind {
  kNone,      // no number there (nothing was read)
  kValue,     // a number that fits in 64 bits: `value`
  kNegative,  // "-5": a minus sign before the digits
  kTooLong,   // digits that do not fit in 64 bits
};

struct ScannedNumber {
  NumberKind kind = NumberKind::kNone;
  std::uint64_t value = 0;  // kValue only
  std::string_view text;    // the characters read ("-5", "12345678901234567890"), for messages
  // A size printed with a unit ("89.77GiB"): how far from `value` the truth may be, in bytes (half
  // the last printed digit, and above KiB one unit below it, which TensorFlow's integer division
  // drops). 0 when the number is exact (plain bytes, "768B").
  std::uint64_t margin = 0;
};

namespace detail {
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsHexDigit(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The digits (`is_digit`, in `base`) of `s` from `start` on, as a ScannedNumber whose text is
// everything up to the last digit (a sign or "0x" included); kNegative when `negative`, kTooLong
// past 64 bits, kNone when no digit is there. Advances `s` past them.
inline ScannedNumber ScanDigits(std::string_view& s, std::size_t start, int base, bool negative,
                                bool (*is_digit)(char)) {
  ScannedNumber n;
  std::size_t i = start;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == start) return n;
  n.text = s.substr(0, i);
  if (negative) {
    n.kind = NumberKind::kNegative;
  } else {
    const auto [end, ec] = std::from_chars(s.data() + start, s.data() + i, n.value, base);
    n.kind = ec == std::errc() ? NumberKind::kValue : NumberKind::kTooLong;
  }
  s.remove_prefix(i);
  return n;
}
}  // namespace detail

// Unsigned decimal at the start of `s` (after blanks), like TakeUint, but says why it is not a
// number: a minus sign, or more than 64 bits. Advances `s` past what it read.
inline ScannedNumber ScanUint(std::string_view& s) {
  s = TrimLeft(s);
  const bool negative = s.size() > 1 && s[0] == '-' && detail::IsDigit(s[1]);
  return detail::ScanDigits(s, negative ? 1 : 0, 10, negative, detail::IsDigit);
}

// Hexadecimal with or without 0x / 0X, any case, like TakeHex, but more than 64 bits (a 17th
// significant digit) is kTooLong rather than nothing. Advances `s` past what it read.
inline ScannedNumber ScanHex(std::string_view& s) {
  s = TrimLeft(s);
  std::size_t start = 0;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    if (s.size() == 2 || !detail::IsHexDigit(s[2])) return {};  // "0x" and no digit: no number
    start = 2;
  }
  return detail::ScanDigits(s, start, 16, false, detail::IsHexDigit);
}

// A size as TensorFlow's HumanReadableNumBytes prints it ("286.00MiB", "768B", "10.2KiB", "0B"),
// at the start of `s`; advances `s` past it. Binary units (KiB ... EiB) are powers of 1024, decimal
// ones (KB, MB, GB, TB, PB, EB) powers of 1000, as in fragscope's own size syntax. Exact for whole
// numbers of bytes; otherwise within the printed precision, which `margin` gives. "-5.00MiB" is
// kNegative, "16.00EiB" (2^64) kTooLong; digits without a unit are kNone (nothing is read).
inline ScannedNumber ScanHumanBytes(std::string_view& s) {
  s = TrimLeft(s);
  ScannedNumber n;
  const bool negative = s.size() > 1 && s[0] == '-' && (detail::IsDigit(s[1]) || s[1] == '.');
  std::size_t i = negative ? 1 : 0;
  std::uint64_t whole = 0;
  std::uint64_t frac = 0;
  std::uint64_t frac_scale = 1;
  std::size_t decimals = 0;
  bool digits = false;
  bool too_long = false;
  while (i < s.size() && detail::IsDigit(s[i])) {
    if (whole > (UINT64_MAX - 9) / 10) too_long = true;
    else whole = whole * 10 + static_cast<std::uint64_t>(s[i] - '0');
    ++i;
    digits = true;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && detail::IsDigit(s[i])) {
      if (frac_scale < 1000000000ULL) {
        frac = frac * 10 + static_cast<std::uint64_t>(s[i] - '0');
        frac_scale *= 10;
      }
      ++decimals;
      ++i;
      digits = true;
    }
  }
  if (!digits) return n;
  struct Unit {
    std::string_view name;
    std::uint64_t scale;
  };
  static constexpr Unit kUnits[] = {
      {"EiB", std::uint64_t{1} << 60}, {"PiB", std::uint64_t{1} << 50}, {"TiB", std::uint64_t{1} << 40},
      {"GiB", std::uint64_t{1} << 30}, {"MiB", std::uint64_t{1} << 20}, {"KiB", std::uint64_t{1} << 10},
      {"EB", 1000000000000000000ULL},  {"PB", 1000000000000000ULL},     {"TB", 1000000000000ULL},
      {"GB", 1000000000ULL},           {"MB", 1000000ULL},              {"KB", 1000ULL},
      {"kB", 1000ULL},                 {"B", 1}};
  for (const Unit& unit : kUnits) {
    if (s.substr(i, unit.name.size()) != unit.name) continue;
    const std::uint64_t scale = unit.scale;
    n.text = s.substr(0, i + unit.name.size());
    s.remove_prefix(i + unit.name.size());
    if (negative) {
      n.kind = NumberKind::kNegative;
      return n;
    }
    if (too_long || whole > UINT64_MAX / scale) {
      n.kind = NumberKind::kTooLong;
      return n;
    }
    // frac/frac_scale of `scale`, rounded to the nearest byte (at most `scale`, 2^60).
    const long double part = static_cast<long double>(frac) / static_cast<long double>(frac_scale) *
                             static_cast<long double>(scale);
    const std::uint64_t whole_bytes = whole * scale;
    const auto part_bytes = static_cast<std::uint64_t>(part + 0.5L);
    if (part_bytes > UINT64_MAX - whole_bytes) {  // "15.9999999999EiB"
      n.kind = NumberKind::kTooLong;
      return n;
    }
    n.kind = NumberKind::kValue;
    n.value = whole_bytes + part_bytes;
    // Half the last printed digit: "81.00GiB" is 81 GiB give or take 0.005 GiB. Bytes are exact
    // ("768B"), and so is a whole number of bytes written with decimals ("768.0B"). TensorFlow's
    // HumanReadableNumBytes divides by 1024 in integers down to the unit below the printed one
    // before it prints (12,085,207,808 B: 11525 MiB, "11.25GiB"): above KiB the truth may be up
    // to one such unit more.
    if (scale > 1) {
      std::uint64_t margin = scale;
      for (std::size_t d = 0; d < decimals && margin > 0; ++d) margin /= 10;
      n.margin = margin / 2;
      if (scale >= (std::uint64_t{1} << 20) && (scale & (scale - 1)) == 0) n.margin += scale / 1024;
    }
    return n;
  }
  return n;
}

// ScanHumanBytes' value, or nullopt for anything else.
inline std::optional<std::uint64_t> TakeHumanBytes(std::string_view& s) {
  const ScannedNumber n = ScanHumanBytes(s);
  if (n.kind != NumberKind::kValue) return std::nullopt;
  return n.value;
}

// "2017-06-20 20:25:42.825757" at the start of a line, as nanoseconds since the Unix epoch (UTC,
// the log's own clock); nullopt when the line does not start with a timestamp.
inline std::optional<std::uint64_t> ParseLogTimestamp(std::string_view line) {
  if (line.size() < 19 || line[4] != '-' || line[7] != '-' || line[10] != ' ' || line[13] != ':' ||
      line[16] != ':')
    return std::nullopt;
  auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
    int v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (line[i] < '0' || line[i] > '9') return std::nullopt;
      v = v * 10 + (line[i] - '0');
    }
    return v;
  };
  const auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
             se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *y < 1970)
    return std::nullopt;
  // days_from_civil (Howard Hinnant).
  const int yy = *y - (*mo <= 2 ? 1 : 0);
  const int era = yy / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (*mo + (*mo > 2 ? -3 : 9)) + 2) / 5 + *d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + doe - 719468;
  std::uint64_t ns = static_cast<std::uint64_t>(days) * 86400ULL * 1000000000ULL +
                     static_cast<std::uint64_t>(*h * 3600 + *mi * 60 + *se) * 1000000000ULL;
  if (line.size() > 20 && line[19] == '.') {
    std::uint64_t frac = 0;
    std::uint64_t scale = 1000000000ULL;
    for (std::size_t i = 20; i < line.size() && line[i] >= '0' && line[i] <= '9' && scale > 1; ++i) {
      scale /= 10;
      frac += static_cast<std::uint64_t>(line[i] - '0') * scale;
    }
    ns += frac;
  }
  return ns;
}

inline std::uint64_t RoundUp256(std::uint64_t bytes) {
  return bytes > UINT64_MAX - 255 ? bytes : (bytes + 255) & ~std::uint64_t{255};
}

}  // namespace fragscope::traces::tftext
