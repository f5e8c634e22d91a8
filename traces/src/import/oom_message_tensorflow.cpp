// TensorFlow's out-of-memory wordings: "OOM when allocating tensor with shape", the Eigen allocator's
// temporary buffers, and stream_executor's device and pinned host allocation failures with their
// 0.9× retry cascades.
#include <array>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

namespace {

// TensorFlow's dtype names and their sizes in bytes (0: unknown).
std::uint64_t DtypeSize(std::string_view dtype) {
  static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 22> kSizes = {{
      {"float", 4},     {"double", 8},     {"half", 2},       {"bfloat16", 2},  {"int32", 4},  {"int64", 8},
      {"int16", 2},     {"int8", 1},       {"uint8", 1},      {"uint16", 2},    {"uint32", 4}, {"uint64", 8},
      {"bool", 1},      {"complex64", 8},  {"complex128", 16}, {"float16", 2},  {"float32", 4}, {"float64", 8},
      {"qint8", 1},     {"quint8", 1},     {"qint32", 4},     {"float8_e4m3fn", 1},
  }};
  for (const auto& [name, size] : kSizes) {
    if (dtype == name) return size;
  }
  return 0;
}

// "DT_FLOAT" → "float" (the names TensorFlow prints in its messages).
std::string DtypeFromEnum(std::string_view name) {
  std::string out;
  for (char c : name.substr(3)) out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

void ParseTfTensor(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kTfTensor;
  m.framework = "tensorflow";
  m.backend = "GPU";
  const std::size_t at = s.find("OOM when allocating tensor");
  std::string_view rest = s.substr(at);
  // "with shape[32,512]" (every era since TF 0.12), or "of shape [32256512,512]" (MakeTensorFromProto).
  std::size_t shape = rest.find("shape[");
  std::size_t skip = 6;
  if (shape == std::string_view::npos && (shape = rest.find("shape [")) != std::string_view::npos) skip = 7;
  if (shape != std::string_view::npos) {
    std::string_view dims = rest.substr(shape + skip);
    const std::size_t close = dims.find(']');
    dims = dims.substr(0, close);
    while (!dims.empty()) {
      std::string_view before = dims;
      const auto value = UintAfter(dims, "");
      if (!value) break;
      m.tensor_shape.push_back(*value);
      const std::size_t comma = dims.find(',');
      if (comma == std::string_view::npos) break;
      dims = dims.substr(comma + 1);
      if (dims.size() >= before.size()) break;
    }
  } else if (rest.find("shapedim {") != std::string_view::npos || rest.find("dim { size:") != std::string_view::npos) {
    // TF 0.x: "shapedim { size: 10000 } dim { size: 14 } …"
    for (std::size_t p = rest.find("size:"); p != std::string_view::npos; p = rest.find("size:", p + 5)) {
      if (const auto value = UintAfter(rest, "size:", p)) m.tensor_shape.push_back(*value);
    }
  }
  if (const std::size_t type = rest.find(" and type "); type != std::string_view::npos) {
    m.tensor_dtype = std::string(IdentifierAt(rest, type + 10));
  }
  if (const std::size_t dev = rest.find("device:"); dev != std::string_view::npos) {
    std::size_t end = dev + 7;
    while (end < rest.size() && !IsBlank(rest[end])) ++end;
    m.device = std::string(rest.substr(dev + 7, end - dev - 7));
  }
  if (const std::size_t by = rest.find("by allocator "); by != std::string_view::npos) {
    m.allocator = std::string(IdentifierAt(rest, by + 13));
  }
  // "device:CPU:0 by allocator cpu" (or mklcpu): the tensor was to live in host RAM, not on a GPU.
  if (m.device.rfind("CPU", 0) == 0 || m.allocator == "cpu" || m.allocator == "mklcpu") m.backend = "host";
}

void FinishTfTensor(OomMessage& m) {
  if (m.tensor_shape.empty()) return;
  const std::uint64_t element = DtypeSize(m.tensor_dtype);
  std::optional<std::uint64_t> elements = 1;
  for (std::uint64_t d : m.tensor_shape) {
    if (elements) elements = CheckedMul(*elements, d);
  }
  if (element == 0) return;  // unknown dtype: no size
  std::optional<std::uint64_t> bytes = elements ? CheckedMul(*elements, element) : std::nullopt;
  if (!bytes || !IsRepresentableSize(*bytes)) {
    m.problems.push_back(fmt::format("line {}: the tensor's shape describes more than the 4 EiB fragscope represents",
                                     m.line));
    return;
  }
  m.request = PrintedSize{*bytes, 0, fmt::format("{} bytes", *bytes)};
}

// How far apart (in lines) the op's log line and the Python exception of the same failure may be:
// a traceback apart, as for XLA's (oom_message_xla.cpp).
constexpr std::size_t kTensorRepeatLines = 400;

// Whether `later` is the same failed tensor as `earlier`, printed again with more or less detail: the
// op's log line ("W …op_kernel.cc:…] Resource exhausted: OOM when allocating tensor with
// shape[32,64,224,224]", no dtype in TF 1.x) and then the ResourceExhaustedError, whose "[[Node: …
// T=DT_FLOAT …]]" gives the dtype. What one of them leaves out does not tell them apart.
bool SameTensor(const OomMessage& earlier, const OomMessage& later) {
  const auto compatible = [](const std::string& a, const std::string& b) { return a.empty() || b.empty() || a == b; };
  return earlier.kind == OomMessageKind::kTfTensor && !later.tensor_shape.empty() &&
         earlier.tensor_shape == later.tensor_shape && compatible(earlier.tensor_dtype, later.tensor_dtype) &&
         compatible(earlier.device, later.device) && compatible(earlier.allocator, later.allocator) &&
         later.line - earlier.end_line <= kTensorRepeatLines;
}

// The later print joins the first as a repeat, lending what the first lacked.
void JoinTensorRepeat(OomMessage& first, OomMessage later) {
  first.repeat_lines.push_back(later.line);
  if (first.tensor_dtype.empty() && !later.tensor_dtype.empty()) {
    first.tensor_dtype = later.tensor_dtype;
    first.request = later.request;
    first.problems.insert(first.problems.end(), later.problems.begin(), later.problems.end());
  }
  if (first.device.empty() && !later.device.empty()) {
    first.device = later.device;
    first.backend = later.backend;
  }
  if (first.allocator.empty()) first.allocator = later.allocator;
  first.tf_report_tensor_hint = first.tf_report_tensor_hint || later.tf_report_tensor_hint;
}

// "failed to allocate 1.52G (1631518720 bytes) from device" / "failed to alloc 782758144 bytes on host"
std::optional<PrintedSize> TfAttempt(OomMessage& m, std::string_view s) {
  if (const std::size_t open = s.find(" ("); open != std::string_view::npos && Contains(s, "bytes)")) {
    if (auto exact = Field(m, s, " (", open)) return exact;
  }
  if (Contains(s, "failed to allocate ")) return Field(m, s, "failed to allocate ");
  if (Contains(s, "failed to alloc ")) return Field(m, s, "failed to alloc ");
  // "could not allocate pinned host memory of size: 782758144": plain bytes.
  if (const auto bytes = UintAfter(s, "memory of size:"); bytes && IsRepresentableSize(*bytes)) {
    return PrintedSize{*bytes, 0, std::to_string(*bytes)};
  }
  return std::nullopt;
}

bool SameSizeOrCascade(std::uint64_t previous, std::uint64_t next) {
  if (next == previous) return true;
  // TensorFlow's retry: each next size is 0.9 of the last (within a page of rounding).
  const double ratio = static_cast<double>(next) / static_cast<double>(previous);
  return ratio > 0.88 && ratio < 0.92;
}

std::string FrameworkOfStreamExecutor(std::string_view s) {
  if (Contains(s, "external/org_tensorflow") || Contains(s, "jaxlib")) return "jax";
  return "tensorflow";
}

}  // namespace

std::size_t ReadTfTensor(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  const std::string_view s = scan.At(i);
  SetText(m, Trim(s));
  ParseTfTensor(m, s);
  // "[[Node: …]]", "[[node …]]", "Hint: …" and "[Op:…]" lines belong to it.
  std::size_t k = i + 1;
  for (; k < scan.lines.size() && k - i <= 4; ++k) {
    const std::string_view t = Trim(scan.At(k));
    if (t.substr(0, 2) != "[[" && t.substr(0, 5) != "Hint:" && t.substr(0, 4) != "[Op:") break;
    if (m.tensor_dtype.empty()) {
      if (const std::size_t dt = t.find("T=DT_"); dt != std::string_view::npos) {
        m.tensor_dtype = DtypeFromEnum(IdentifierAt(t, dt + 2));
      }
    }
    AppendText(m, t);
    m.end_line = k + 1;
  }
  m.tf_report_tensor_hint = Contains(m.text, "report_tensor_allocations_upon_oom");
  FinishTfTensor(m);
  const std::size_t next = m.end_line;
  if (!scan.found.empty() && SameTensor(scan.found.back(), m)) {
    JoinTensorRepeat(scan.found.back(), std::move(m));
    return next;
  }
  scan.found.push_back(std::move(m));
  return next;
}

std::size_t ReadTfAlloc(MessageScan& scan, std::size_t i, OomMessageKind kind) {
  const std::string_view s = scan.At(i);
  OomMessage fresh = scan.Start(i);
  const std::optional<PrintedSize> attempt = TfAttempt(fresh, s);
  const bool pinned_note = Contains(s, "could not allocate pinned host memory");
  // The same failure again, or TensorFlow's retry at 0.9 of the size, joins the last message.
  if (!scan.found.empty()) {
    OomMessage& prev = scan.found.back();
    if (prev.kind == kind && i + 1 - prev.end_line <= 3 && attempt && !prev.attempts.empty() &&
        SameSizeOrCascade(prev.attempts.back().bytes, attempt->bytes)) {
      if (!(pinned_note && attempt->bytes == prev.attempts.back().bytes)) prev.attempts.push_back(*attempt);
      AppendText(prev, Trim(s));
      prev.end_line = i + 1;
      return i + 1;
    }
  }
  OomMessage m = std::move(fresh);
  m.kind = kind;
  m.framework = FrameworkOfStreamExecutor(s);
  m.backend = kind == OomMessageKind::kTfHostAlloc ? "host" : "GPU";
  m.device = kind == OomMessageKind::kTfHostAlloc ? "host (pinned)" : "GPU";
  m.error_code = Contains(s, "CUDA_ERROR_OUT_OF_MEMORY") ? "CUDA_ERROR_OUT_OF_MEMORY" : "";
  SetText(m, Trim(s));
  if (attempt) m.attempts.push_back(*attempt);
  m.request = attempt;
  if (kind == OomMessageKind::kTfDeviceAlloc && scan.tf_total && i - scan.tf_total_line < 200) {
    m.total = scan.tf_total;
    m.free = scan.tf_free;
  }
  m.cublas_init_failed = scan.cublas_failed_line != 0 && i + 1 - scan.cublas_failed_line <= 10;
  scan.found.push_back(std::move(m));
  return i + 1;
}

std::size_t ReadTfEigen(MessageScan& scan, std::size_t i) {
  // "F …gpu_device.cc:104] EigenAllocator for GPU ran out of memory when allocating 0. See error
  // logs …" (a fatal log line), or the status an op gets: "Ran out of GPU memory when allocating
  // 1048576 bytes for OP". Either way the BFC pool refused Eigen's temporary buffer.
  OomMessage m = scan.Start(i);
  const std::string_view s = scan.At(i);
  m.kind = OomMessageKind::kTfEigen;
  m.framework = "tensorflow";
  m.backend = "GPU";
  SetText(m, Trim(s));
  m.request = ExactBytes(m, s, "memory when allocating ");
  scan.found.push_back(std::move(m));
  return i + 1;
}

bool ReadTfNotAFailure(MessageScan& scan, std::size_t i) {
  const std::string_view s = scan.At(i);
  const std::size_t at = s.find("ran out of memory trying to allocate ");
  if (at == std::string_view::npos || !Contains(s, kTfNotAFailure)) return false;
  TfNotAFailure w;
  w.line = i + 1;
  if (const std::size_t open = s.rfind("Allocator (", at); open != std::string_view::npos) {
    const std::size_t close = s.find(')', open);
    if (close != std::string_view::npos && close < at) w.allocator = std::string(s.substr(open + 11, close - open - 11));
  }
  std::string problem;  // a size too large to take is left out: the warning still says no failure
  w.request = SizeAfter(s, "ran out of memory trying to allocate ", &problem, at);
  scan.not_failures.push_back(std::move(w));
  return true;
}

}  // namespace fragscope::traces::oomscan
