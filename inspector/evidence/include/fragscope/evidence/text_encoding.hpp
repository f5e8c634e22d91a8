// Text saved in another encoding than UTF-8, made UTF-8 before any reader sees it.
//
// Windows PowerShell's redirection (`python train.py > log.txt`, `Out-File`) writes UTF-16LE with a
// byte-order mark; some tools write UTF-16BE, or UTF-16 without the mark; `Out-File -Encoding utf8`
// writes UTF-8 with a mark. Every text format fragscope reads (an OOM message in a log, a TensorFlow
// BFC dump, an RMM log, JSON Lines, a profiler trace) would miss its words in such a file: every
// other byte is 0. The decoding belongs to EvidenceInput's source, not to one reader: it runs once,
// before the readers sniff, so each text reader gets UTF-8 and none repeats it. Binary formats
// (.fst, pickle) never start with a byte-order mark, and text without one is decoded only when no
// reader recognized the raw bytes and the bytes look like UTF-16 (evidence_input.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fragscope::evidence {

enum class TextEncoding { kUtf8Bom, kUtf16Le, kUtf16Be };

// "UTF-16LE", "UTF-16BE", "UTF-8 with a byte-order mark".
std::string_view ToString(TextEncoding encoding);

// The encoding `head` (an input's first bytes) declares with a byte-order mark, if any.
std::optional<TextEncoding> EncodingByMark(std::string_view head);

// The encoding of UTF-16 text without a byte-order mark: mostly ASCII text, so most code units
// have one zero byte, on the same side (high byte: LE; low byte: BE). Needs a few code units.
std::optional<TextEncoding> Utf16WithoutMark(std::string_view head);

// `bytes` (the whole input, mark included if it has one) as UTF-8, without the mark. Throws
// traces::TraceError naming `name` and the byte offset when the bytes are no such text: a lone
// surrogate, or an odd byte at the end of UTF-16.
std::string DecodeToUtf8(std::string_view bytes, TextEncoding encoding, const std::string& name);

}  // namespace fragscope::evidence
