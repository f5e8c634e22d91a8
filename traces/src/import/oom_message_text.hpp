// Scanners for out-of-memory messages (oom_message*.cpp): sizes as frameworks print them and
// "label value" lookups inside one message's text. No regex, no throw, linear in the input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fragscope/traces/oom_message.hpp"

namespace fragscope::traces::oomtext {

inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  return s;
}
inline std::string_view Trim(std::string_view s) {
  s = TrimLeft(s);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}
inline bool Contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

// A size at the start of `s` (after blanks): digits, an optional fraction, optional blanks and a
// unit. On success advances `s` past it. `oversize` is set when the value is above kMaxBytes.
std::optional<PrintedSize> TakeSize(std::string_view& s, bool* oversize);

// The size right after the first `label` in `s` (blanks and one ':' between are skipped).
// `problem` gets a description when a size is there but cannot be represented.
std::optional<PrintedSize> SizeAfter(std::string_view s, std::string_view label, std::string* problem = nullptr,
                                     std::size_t from = 0);

// The size that ends right before position `end` of `s` ("… 10.90 GiB already allocated": end is
// where " already" starts).
std::optional<PrintedSize> SizeBefore(std::string_view s, std::size_t end, std::string* problem = nullptr);

// The unsigned integer right after `label`.
std::optional<std::uint64_t> UintAfter(std::string_view s, std::string_view label, std::size_t from = 0);

// The same, its digits possibly grouped by thousands separators ("1,073,741,824", as CuPy prints
// them): a ',' belongs to the number only when exactly three digits follow it.
// `printed` gets the number as printed.
std::optional<std::uint64_t> GroupedUintAfter(std::string_view s, std::string_view label, std::size_t from = 0,
                                              std::string_view* printed = nullptr);

// `s` without terminal escape sequences: a coloured logger's "\x1b[1;31m…\x1b[0m" around a message
// would otherwise stay in the quoted text (invisible on a terminal, garbage in JSON).
std::string StripAnsi(std::string_view s);

// The identifier starting at `pos` ([A-Za-z0-9_]*).
std::string_view IdentifierAt(std::string_view s, std::size_t pos);

}  // namespace fragscope::traces::oomtext
