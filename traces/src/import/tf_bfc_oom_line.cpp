// The lines TensorFlow, XLA and PJRT print when an allocation fails (tf_bfc_lines.hpp, OomLine):
// after a BFC dump they are its OOM, and where they give a size, its exact request. Fixed
// keywords only, as every dump line; any input is tolerated.
#include <cctype>

#include "tf_bfc_lines.hpp"

namespace fragscope::traces::tfline {

using namespace tftext;

namespace {

constexpr std::string_view kTensor = "OOM when allocating tensor";
constexpr std::string_view kXla = "Out of memory while trying to allocate ";
constexpr std::string_view kPjrt = "Failed to allocate request for ";
constexpr std::string_view kNoSize = "failed to allocate memory";

OomLine Of(OomLineKind kind, std::string_view wording) {
  OomLine line;
  line.kind = kind;
  line.wording = wording;
  return line;
}

// The allocator a tensor line names ("… by allocator GPU_0_bfc [Op:…]"): letters, digits, '_'.
std::string_view AllocatorOf(std::string_view text) {
  constexpr std::string_view kBy = "by allocator ";
  const std::size_t p = text.find(kBy);
  if (p == std::string_view::npos) return {};
  std::string_view name = text.substr(p + kBy.size());
  std::size_t end = 0;
  while (end < name.size() && (std::isalnum(static_cast<unsigned char>(name[end])) != 0 || name[end] == '_')) ++end;
  return name.substr(0, end);
}

OomLine TensorLine(std::string_view rest, std::string_view text) {
  OomLine line = Of(OomLineKind::kTensorShape, kTensor);
  line.allocator = AllocatorOf(text);
  // "with shape[…]" (every era since TF 0.12) or "of shape […]" (MakeTensorFromProto).
  std::string_view r = TrimLeft(rest);
  if (StartsWith(r, "with shape")) r.remove_prefix(10);
  else if (StartsWith(r, "of shape")) r.remove_prefix(8);
  else return line;
  r = TrimLeft(r);
  const std::size_t close = r.find(']');
  if (!StartsWith(r, "[") || close == std::string_view::npos) return line;
  line.has_shape = true;
  line.dims = r.substr(1, close - 1);
  std::string_view after = r.substr(close + 1);
  if (const std::size_t q = after.find("type "); q != std::string_view::npos) {
    line.type = after.substr(q + 5);
    line.type = line.type.substr(0, line.type.find(' '));
  }
  return line;
}

}  // namespace

std::optional<OomLine> ParseOomLine(std::string_view text) {
  if (const std::size_t p = text.find(kTensor); p != std::string_view::npos)
    return TensorLine(text.substr(p + kTensor.size()), text);
  if (const std::size_t p = text.find(kXla); p != std::string_view::npos) {
    std::string_view rest = text.substr(p + kXla.size());
    OomLine line = Of(OomLineKind::kXlaBytes, "Out of memory while trying to allocate N bytes");
    line.bytes = ScanUint(rest);
    // "… allocate 2110783616 bytes": a number not followed by "bytes" is no XLA line.
    if (line.bytes.kind == NumberKind::kNone || !StartsWith(TrimLeft(rest), "bytes")) return std::nullopt;
    return line;
  }
  if (const std::size_t p = text.find(kPjrt); p != std::string_view::npos) {
    OomLine line = Of(OomLineKind::kPjrtRequest, "Failed to allocate request for");
    // "2.99GiB (3206250496B)": the bytes in parentheses are exact, the size before them is not.
    std::string_view rest = text.substr(p + kPjrt.size());
    if (const std::size_t open = rest.find(" ("); open != std::string_view::npos) {
      std::string_view r = rest.substr(open + 2);
      const ScannedNumber bytes = ScanUint(r);
      if (StartsWith(r, "B)")) line.bytes = bytes;
    }
    return line;
  }
  // TensorFlow's status words in their three spellings: the status code, the C++ message, the
  // Python exception. "failed to allocate memory" alone is too common a phrase to be taken.
  if (text.find(kNoSize) != std::string_view::npos &&
      (text.find("RESOURCE_EXHAUSTED") != std::string_view::npos ||
       text.find("esource exhausted") != std::string_view::npos ||
       text.find("ResourceExhaustedError") != std::string_view::npos))
    return Of(OomLineKind::kNoSize, "RESOURCE_EXHAUSTED: failed to allocate memory");
  return std::nullopt;
}

}  // namespace fragscope::traces::tfline
