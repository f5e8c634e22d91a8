// Text in UTF-16 or with a UTF-8 byte-order mark, made plain UTF-8 (text_encoding.hpp).
#include "fragscope/evidence/text_encoding.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::evidence {
namespace {

constexpr std::string_view kUtf8Mark = "\xEF\xBB\xBF";
constexpr std::string_view kUtf16LeMark = "\xFF\xFE";
constexpr std::string_view kUtf16BeMark = "\xFE\xFF";

// Looked at for a text without a mark: enough code units to tell, few enough to stay cheap.
constexpr std::size_t kProbeUnits = 2048;
constexpr std::size_t kMinUnits = 4;

std::uint8_t Byte(std::string_view s, std::size_t i) { return static_cast<std::uint8_t>(s[i]); }

void AppendUtf8(std::string& out, std::uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string DecodeUtf16(std::string_view bytes, bool little_endian, std::size_t start, const std::string& name) {
  const std::string_view label = little_endian ? "UTF-16LE" : "UTF-16BE";
  if ((bytes.size() - start) % 2 != 0) {
    throw traces::TraceError(name, bytes.size() - 1,
                             fmt::format("{} text with an odd number of bytes: the last byte is half a character "
                                         "(the file was cut?)", label));
  }
  auto unit = [&](std::size_t i) -> std::uint32_t {
    return little_endian ? Byte(bytes, i) | (Byte(bytes, i + 1) << 8) : (Byte(bytes, i) << 8) | Byte(bytes, i + 1);
  };
  std::string out;
  out.reserve((bytes.size() - start) / 2);
  for (std::size_t i = start; i < bytes.size(); i += 2) {
    const std::uint32_t u = unit(i);
    if (u >= 0xD800 && u <= 0xDBFF) {
      // A high surrogate must be followed by a low one.
      const std::uint32_t low = i + 3 < bytes.size() ? unit(i + 2) : 0;
      if (low < 0xDC00 || low > 0xDFFF) {
        throw traces::TraceError(name, i, fmt::format("{} text with a lone surrogate {:#06x}: not valid text", label, u));
      }
      AppendUtf8(out, 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00));
      i += 2;
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
      throw traces::TraceError(name, i, fmt::format("{} text with a lone surrogate {:#06x}: not valid text", label, u));
    } else {
      AppendUtf8(out, u);
    }
  }
  return out;
}

}  // namespace

std::string_view ToString(TextEncoding encoding) {
  switch (encoding) {
    case TextEncoding::kUtf8Bom: return "UTF-8 with a byte-order mark";
    case TextEncoding::kUtf16Le: return "UTF-16LE";
    case TextEncoding::kUtf16Be: return "UTF-16BE";
  }
  return "";
}

std::optional<TextEncoding> EncodingByMark(std::string_view head) {
  if (head.starts_with(kUtf8Mark)) return TextEncoding::kUtf8Bom;
  if (head.starts_with(kUtf16LeMark)) return TextEncoding::kUtf16Le;
  if (head.starts_with(kUtf16BeMark)) return TextEncoding::kUtf16Be;
  return std::nullopt;
}

std::optional<TextEncoding> Utf16WithoutMark(std::string_view head) {
  const std::size_t units = std::min(head.size() / 2, kProbeUnits);
  if (units < kMinUnits) return std::nullopt;
  // ASCII in UTF-16: one byte of each unit is 0, the other is not. Nine in ten units so (the rest:
  // accented letters, CJK) on the same side, and none all-zero (binary data has runs of 0 bytes).
  std::size_t high_zero = 0, low_zero = 0;
  for (std::size_t k = 0; k < units; ++k) {
    const std::uint8_t first = Byte(head, 2 * k), second = Byte(head, 2 * k + 1);
    if (first == 0 && second == 0) return std::nullopt;
    if (second == 0) ++high_zero;
    if (first == 0) ++low_zero;
  }
  if (high_zero * 10 >= units * 9) return TextEncoding::kUtf16Le;
  if (low_zero * 10 >= units * 9) return TextEncoding::kUtf16Be;
  return std::nullopt;
}

std::string DecodeToUtf8(std::string_view bytes, TextEncoding encoding, const std::string& name) {
  const std::size_t mark = EncodingByMark(bytes) == encoding
                               ? (encoding == TextEncoding::kUtf8Bom ? kUtf8Mark.size() : kUtf16LeMark.size())
                               : 0;
  if (encoding == TextEncoding::kUtf8Bom) return std::string(bytes.substr(mark));
  return DecodeUtf16(bytes, encoding == TextEncoding::kUtf16Le, mark, name);
}

}  // namespace fragscope::evidence
