#include "lenient_json.hpp"

namespace fragscope::traces::lenient {
namespace {

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

void Reader::Advance() {
  if (pos_ >= text_.size()) return;
  ++pos_;
  if (pos_ >= text_.size()) return;
  if (pass_ > 0) {
    --pass_;
    out_ = text_[pos_];
    return;
  }
  Decide();
}

void Reader::Repair(std::uint64_t& counter, char replacement) {
  ++counter;
  if (!repairs_.first) repairs_.first = pos_;
  out_ = replacement;
}

// RFC 3629 well-formed sequences, as nlohmann's lexer checks them.
std::size_t Reader::ValidUtf8(std::size_t at) const {
  const auto byte = [&](std::size_t i) -> int {
    return at + i < text_.size() ? static_cast<unsigned char>(text_[at + i]) : -1;
  };
  const auto in = [&](std::size_t i, int lo, int hi) { return byte(i) >= lo && byte(i) <= hi; };
  const int b0 = byte(0);
  if (b0 >= 0xC2 && b0 <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
  if (b0 == 0xE0) return in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
  if (b0 == 0xED) return in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
  if (b0 == 0xF0) return in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  if (b0 == 0xF4) return in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  return 0;
}

std::size_t Reader::ValidEscape(std::size_t at) const {
  if (at + 1 >= text_.size()) return 0;
  switch (text_[at + 1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return 2;
    case 'u': break;
    default: return 0;
  }
  // \uXXXX; a high surrogate only with a low one after it, a low one never alone.
  const auto code_at = [&](std::size_t i) -> int {
    if (i + 6 > text_.size() || text_[i] != '\\' || text_[i + 1] != 'u') return -1;
    int code = 0;
    for (std::size_t k = i + 2; k < i + 6; ++k) {
      if (!IsHex(text_[k])) return -1;
      code = code * 16 + HexValue(text_[k]);
    }
    return code;
  };
  const int code = code_at(at);
  if (code < 0) return 0;
  if (code >= 0xDC00 && code <= 0xDFFF) return 0;
  if (code >= 0xD800 && code <= 0xDBFF) {
    const int low = code_at(at + 6);
    return low >= 0xDC00 && low <= 0xDFFF ? 12 : 0;
  }
  return 6;
}

void Reader::Decide() {
  const char c = text_[pos_];
  out_ = c;
  if (!in_string_) {
    if (c == '"') {
      in_string_ = true;
    } else if (c == ',') {
      std::size_t next = pos_ + 1;
      while (next < text_.size() && IsSpace(text_[next])) ++next;
      if (next < text_.size() && (text_[next] == ']' || text_[next] == '}')) Repair(repairs_.commas, ' ');
    }
    return;
  }
  const auto byte = static_cast<unsigned char>(c);
  if (c == '"') {
    in_string_ = false;
  } else if (c == '\\') {
    if (const std::size_t length = ValidEscape(pos_); length > 0) {
      pass_ = length - 1;
    } else {
      Repair(repairs_.escapes, '?');
    }
  } else if (byte < 0x20) {
    Repair(repairs_.control, ' ');
  } else if (byte >= 0x80) {
    if (const std::size_t length = ValidUtf8(pos_); length > 0) {
      pass_ = length - 1;
    } else {
      Repair(repairs_.utf8, '?');
    }
  }
}

}  // namespace fragscope::traces::lenient
