// Parsers of single TensorFlow / XLA BFC dump lines (tf_bfc_lines.hpp): numbers, bin lines, the
// Chunk State table and the summary of in-use chunks by size. No regex, no allocation beyond the
// messages; every function tolerates any input.
#include "tf_bfc_lines.hpp"

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope::traces::tfline {

using namespace tftext;

std::string NumberProblem(const ScannedNumber& n, Unit unit) {
  switch (n.kind) {
    case NumberKind::kNone:
      return "not a number";
    case NumberKind::kNegative:
      return fmt::format("{} is negative, not a {}", n.text, unit == Unit::kSize ? "size" : "count");
    case NumberKind::kTooLong:
      return fmt::format("{} does not fit in 64 bits", n.text);
    case NumberKind::kValue:
      if (unit == Unit::kSize && !IsRepresentableSize(n.value)) return OversizeMessage(n.value);
      return {};
  }
  return {};
}

ScannedNumber ScanBytes(std::string_view& s) {
  std::string_view human = s;
  if (ScannedNumber n = ScanHumanBytes(human); n.kind != NumberKind::kNone) {
    s = human;
    return n;
  }
  return ScanUint(s);
}

std::uint64_t DtypeBytes(std::string_view type) {
  if (type == "float" || type == "int32" || type == "uint32" || type == "qint32") return 4;
  if (type == "double" || type == "int64" || type == "uint64" || type == "complex64") return 8;
  if (type == "half" || type == "bfloat16" || type == "int16" || type == "uint16" || type == "qint16" ||
      type == "quint16")
    return 2;
  if (type == "int8" || type == "uint8" || type == "bool" || type == "qint8" || type == "quint8" ||
      type == "float8_e5m2" || type == "float8_e4m3fn")
    return 1;
  if (type == "complex128") return 16;
  return 0;
}

std::optional<std::uint64_t> TensorBytes(std::string_view dims, std::string_view type, std::string& problem) {
  // shape[] is a scalar: one element.
  std::uint64_t elements = 1;
  bool too_many = false;
  problem.clear();
  while (problem.empty() && !TrimLeft(dims).empty()) {
    const ScannedNumber v = ScanUint(dims);
    if (v.kind == NumberKind::kNegative) problem = fmt::format("a negative dimension ({})", v.text);
    else if (v.kind == NumberKind::kTooLong) problem = fmt::format("a dimension of more than 64 bits ({})", v.text);
    else if (v.kind == NumberKind::kNone) problem = "a dimension that is not a number";
    if (!problem.empty()) break;
    if (v.value == 0) {  // no elements, however large the others
      elements = 0;
      too_many = false;
    } else if (const auto product = CheckedMul(elements, v.value)) {
      elements = *product;
    } else {
      too_many = true;
    }
    dims = TrimLeft(dims);
    if (StartsWith(dims, ",")) dims.remove_prefix(1);
    else if (!dims.empty()) problem = "a dimension that is not a number";
  }
  const std::uint64_t width = DtypeBytes(type);
  if (problem.empty() && width == 0)
    problem = type.empty() ? "its size in bytes is unknown" : "no known element size for the type";
  if (!problem.empty()) return std::nullopt;
  const std::optional<std::uint64_t> bytes = too_many ? std::nullopt : CheckedMul(elements, width);
  if (!bytes) problem = "more than 2^64 bytes";
  else if (!IsRepresentableSize(*bytes)) problem = OversizeMessage(*bytes);
  return problem.empty() ? bytes : std::nullopt;
}

bool ParseBinLine(std::string_view text, TfBfcBin& bin, std::string& problem) {
  const std::size_t p = text.find("Bin (");
  if (p == std::string_view::npos) return false;
  std::string_view rest = text.substr(p + 5);
  const ScannedNumber bin_size = ScanUint(rest);
  if (bin_size.kind == NumberKind::kNone || !StartsWith(rest, "):")) return false;
  const std::size_t t = rest.find("Total Chunks:");
  if (t == std::string_view::npos) return false;
  rest.remove_prefix(t + 13);
  // Bin lines are cross-checks only: a number that cannot be taken leaves the line out.
  problem = NumberProblem(bin_size);
  if (problem.empty()) bin.bin_size = bin_size.value;
  else problem = fmt::format("bin size {}", problem);
  auto count = [&](const char* what, std::uint64_t& out) {
    const ScannedNumber n = ScanUint(rest);
    if (n.kind == NumberKind::kValue) out = n.value;
    else if (n.kind != NumberKind::kNone && problem.empty())
      problem = fmt::format("{} {}", what, NumberProblem(n, Unit::kCount));
  };
  count("Total Chunks", bin.total_chunks);
  if (auto q = rest.find("Chunks in use:"); q != std::string_view::npos) {
    rest.remove_prefix(q + 14);
    count("Chunks in use", bin.chunks_in_use);
    if (StartsWith(rest, ".")) rest.remove_prefix(1);
    const ScannedNumber bytes = ScanHumanBytes(rest);
    if (bytes.kind == NumberKind::kValue && IsRepresentableSize(bytes.value)) {
      bin.bytes_in_bin = bytes.value;
      bin.bytes_margin = bytes.margin;
    } else if (bytes.kind != NumberKind::kNone && problem.empty()) {
      problem = fmt::format("bytes allocated for chunks: {}",
                            bytes.kind == NumberKind::kValue ? OversizeMessage(bytes.value) : NumberProblem(bytes));
    }
    // "... allocated for chunks. [N client-requested for chunks.] M in use in bin. ..."
    for (int field = 0; field < 3; ++field) {
      const std::size_t dot = rest.find('.');
      if (dot == std::string_view::npos) break;
      rest.remove_prefix(dot + 1);
      const ScannedNumber n = ScanHumanBytes(rest);
      if (n.kind == NumberKind::kNone) break;
      if (!StartsWith(TrimLeft(rest), "in use in bin")) continue;
      if (n.kind == NumberKind::kValue && IsRepresentableSize(n.value)) {
        bin.bytes_in_use = n.value;
        bin.in_use_margin = n.margin;
      }
      break;
    }
  }
  return true;
}

bool ParseChunkStateLine(std::string_view text, std::optional<TfBfcStateChunk>& chunk) {
  chunk.reset();
  const std::size_t p = text.find("Size: ");
  // Not "Requested Size: ", "MaxAllocSize: ": the entry's own "Size: " comes first, after a blank.
  if (p == std::string_view::npos || (p > 0 && text[p - 1] != ' ' && text[p - 1] != ']' && text[p - 1] != '\t'))
    return false;
  std::string_view entry = text.substr(p);
  // Its neighbours follow ", prev:" and ", next:".
  entry = entry.substr(0, entry.find(", prev:"));
  entry = entry.substr(0, entry.find(", next:"));
  const std::size_t flag = entry.find("in_use: ");
  if (flag == std::string_view::npos) return false;
  std::string_view r = entry.substr(6);
  const ScannedNumber size = ScanHumanBytes(r);
  if (size.kind == NumberKind::kValue && IsRepresentableSize(size.value) && size.value > 0 &&
      StartsWith(entry.substr(flag + 8), "0"))
    chunk = TfBfcStateChunk{size.value, size.margin, 0};
  return true;
}

bool ParseSizeSummaryLine(std::string_view text, std::uint64_t& count, std::uint64_t& size, std::string& problem) {
  constexpr std::string_view kKey = " Chunks of size ";
  const std::size_t p = text.find(kKey);
  if (p == std::string_view::npos) return false;
  // The count: the number right before, after a blank, a quote's '>' or a log prefix's ']'.
  std::size_t b = p;
  while (b > 0 && (detail::IsDigit(text[b - 1]) || text[b - 1] == '-')) --b;
  if (b == p || (b > 0 && text[b - 1] != ' ' && text[b - 1] != '\t' && text[b - 1] != '>' && text[b - 1] != ']'))
    return false;
  std::string_view rest = text.substr(p + kKey.size());
  const ScannedNumber s = ScanUint(rest);
  if (s.kind == NumberKind::kNone || !StartsWith(TrimLeft(rest), "totalling")) return false;
  std::string_view count_text = text.substr(b, p - b);
  const ScannedNumber n = ScanUint(count_text);
  problem.clear();
  if (std::string why = NumberProblem(n, Unit::kCount); !why.empty() || !TrimLeft(count_text).empty())
    problem = fmt::format("the count {}", why.empty() ? "is not a number" : why);
  else if (std::string size_why = NumberProblem(s); !size_why.empty())
    problem = fmt::format("the size {}", size_why);
  if (!problem.empty()) return true;
  const auto bytes = CheckedMul(n.value, s.value);
  if (!bytes || !IsRepresentableSize(*bytes)) {
    problem = fmt::format("{} chunks of {} bytes: {}", n.value, s.value,
                          bytes ? OversizeMessage(*bytes) : std::string("more than 2^64 bytes"));
    return true;
  }
  count = n.value;
  size = s.value;
  return true;
}

bool ParseSumTotalLine(std::string_view text, ScannedNumber& total) {
  constexpr std::string_view kKey = "Sum Total of in-use chunks:";
  const std::size_t p = text.find(kKey);
  if (p == std::string_view::npos) return false;
  std::string_view rest = text.substr(p + kKey.size());
  total = ScanBytes(rest);
  return true;
}

}  // namespace fragscope::traces::tfline
