// Out-of-memory messages found in log text (fragscope/traces/oom_message.hpp): the scan over lines,
// the wording families and their fields. Every detector starts from a plain substring found in one
// line and reads at most a few following lines, so the whole scan is linear in the input.
#include "fragscope/traces/oom_message.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "import/oom_message_text.hpp"

namespace fragscope::traces {
namespace {

using namespace oomtext;

constexpr std::size_t kMaxMessageText = 8192;  // what a message keeps of its own text
constexpr std::size_t kMergeLines = 40;        // raw errors this close belong to one failure

struct Line {
  std::string_view text;
  std::size_t offset = 0;
};

std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({line, start});
    start = end + 1;
  }
  return lines;
}

void SetText(OomMessage& m, std::string_view text) {
  m.text = std::string(text.substr(0, kMaxMessageText));
}

void AppendText(OomMessage& m, std::string_view text) {
  if (m.text.size() >= kMaxMessageText) return;
  m.text += '\n';
  m.text += text.substr(0, kMaxMessageText - std::min(kMaxMessageText, m.text.size()));
}

// A size after `label`; a size there that cannot be represented becomes a problem of the message.
std::optional<PrintedSize> Field(OomMessage& m, std::string_view s, std::string_view label, std::size_t from = 0) {
  std::string problem;
  auto size = SizeAfter(s, label, &problem, from);
  if (!problem.empty()) m.problems.push_back(fmt::format("line {}: {}", m.line, problem));
  return size;
}

std::optional<PrintedSize> FieldBefore(OomMessage& m, std::string_view s, std::size_t end) {
  std::string problem;
  auto size = SizeBefore(s, end, &problem);
  if (!problem.empty()) m.problems.push_back(fmt::format("line {}: {}", m.line, problem));
  return size;
}

// The hint PyTorch appends: which variable it names, which setting it suggests.
void ReadPytorchHints(OomMessage& m, std::string_view s) {
  m.hint_max_split_size = Contains(s, "max_split_size_mb");
  m.hint_expandable_segments = Contains(s, "expandable_segments:True");
  for (std::size_t at = s.find("PYTORCH_"); at != std::string_view::npos; at = s.find("PYTORCH_", at + 1)) {
    const std::string_view name = IdentifierAt(s, at);
    if (name.size() > 16 && name.substr(name.size() - 11) == "_ALLOC_CONF") {
      m.hint_env = std::string(name);
      break;
    }
  }
}

// The word before "out of memory" ("CUDA", "XPU", "HIP") within the few bytes before `pos`.
std::string BackendBefore(std::string_view s, std::size_t pos) {
  const std::size_t from = pos > 48 ? pos - 48 : 0;
  const std::string_view head = s.substr(from, pos - from);
  for (std::string_view word : {"CUDA out of memory", "XPU out of memory", "HIP out of memory"}) {
    if (Contains(head, word)) return std::string(word.substr(0, word.find(' ')));
  }
  return {};
}

// PyTorch's caching allocator, one message in `s` (from its "Tried to allocate" to the next one).
void ParsePytorchCaching(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kPytorchCaching;
  m.framework = "pytorch";
  m.request = Field(m, s, "Tried to allocate");
  // The legacy layout: "(GPU 0; 11.17 GiB total capacity; 10.90 GiB already allocated; …)".
  const std::size_t open = s.find('(', s.find("Tried to allocate"));
  const std::size_t old_format = s.find("total capacity;");
  if (open != std::string_view::npos && old_format != std::string_view::npos && open < old_format) {
    const std::size_t close = s.find(')', open);
    std::string_view inside = s.substr(open + 1, close == std::string_view::npos ? std::string_view::npos : close - open - 1);
    std::size_t start = 0;
    bool first = true;
    while (start <= inside.size()) {
      std::size_t end = inside.find(';', start);
      if (end == std::string_view::npos) end = inside.size();
      const std::string_view part = Trim(inside.substr(start, end - start));
      if (first && !part.empty() && !IsDigit(part.front())) m.device = std::string(part);
      first = false;
      for (auto [label, field] : std::array<std::pair<std::string_view, std::optional<PrintedSize>*>, 5>{{
               {"total capacity", &m.total},
               {"already allocated", &m.allocated},
               {"reserved in total by PyTorch", &m.reserved},
               {"cached", &m.unallocated},
               {"free", &m.free}}}) {
        const std::size_t at = part.find(label);
        if (at != std::string_view::npos && at > 0 && !*field) {
          *field = FieldBefore(m, part, at);
          break;
        }
      }
      start = end + 1;
    }
  } else {
    // ≥ 2.1: "GPU 0 has a total capac(i)ty of X of which Y is free. …"
    std::size_t at = s.find(" has a total capac");
    if (at != std::string_view::npos) {
      std::size_t dev = s.rfind(". ", at);
      dev = dev == std::string_view::npos ? 0 : dev + 2;
      if (at > dev && at - dev <= 16) m.device = std::string(Trim(s.substr(dev, at - dev)));
      m.total = Field(m, s, " of ", at);
    }
    if (const std::size_t which = s.find(" of which "); which != std::string_view::npos) {
      m.free = Field(m, s, " of which ");
    }
    // "Process 101553 has 1.19 GiB memory in use." any number of times.
    for (std::size_t p = s.find("Process "); p != std::string_view::npos; p = s.find("Process ", p + 8)) {
      const auto pid = UintAfter(s, "Process ", p);
      const std::size_t has = s.find(" has ", p);
      if (!pid || has == std::string_view::npos || has - p > 30) continue;
      if (auto size = Field(m, s, " has ", p)) m.other_processes.push_back({*pid, *size});
    }
    m.process_total = Field(m, s, "this process has ");
    if (const std::size_t allowed = s.find(" allowed;"); allowed != std::string_view::npos) {
      m.allowed = FieldBefore(m, s, allowed);
    }
    m.allocated = Field(m, s, "Of the allocated memory ");
    if (const std::size_t pools = s.find(" allocated in private pools"); pools != std::string_view::npos) {
      m.private_pools = FieldBefore(m, s, pools);
    }
    if (const std::size_t un = s.find(" is reserved by PyTorch but unallocated"); un != std::string_view::npos) {
      m.unallocated = FieldBefore(m, s, un);
    }
  }
  ReadPytorchHints(m, s);
  m.backend = BackendBefore(s, s.find("Tried to allocate"));
  if (m.backend.empty() && m.hint_env == "PYTORCH_HIP_ALLOC_CONF") m.backend = "HIP";
}

// True when a caching-allocator message in `s` looks cut by a line break (more of it follows).
bool PytorchIncomplete(std::string_view s) {
  const std::size_t tried = s.find("Tried to allocate");
  if (tried == std::string_view::npos) return false;
  const std::size_t open = s.find('(', tried);
  if (open != std::string_view::npos && s.find(')', open) == std::string_view::npos) return true;
  if (Contains(s, "has a total capac")) {
    return !Contains(s, "unallocated") && !Contains(s, "memory in use") && !Contains(s, "is free");
  }
  return open == std::string_view::npos && Trim(s.substr(tried)).size() < 40;
}

void ParseMps(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kPytorchMps;
  m.framework = "pytorch";
  m.backend = "MPS";
  m.device = "MPS";
  m.allocated = Field(m, s, "MPS allocated:");
  m.other_allocations = Field(m, s, "other allocations:");
  m.allowed = Field(m, s, "max allowed:");
  m.request = Field(m, s, "Tried to allocate");
  m.private_pool_request = Contains(s, "on private pool");
  m.hint_watermark = Contains(s, "PYTORCH_MPS_HIGH_WATERMARK_RATIO");
}

void ParseAsync(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kPytorchAsync;
  m.framework = "pytorch";
  m.backend = "CUDA";
  if (const auto device = UintAfter(s, "Allocation on device ")) m.device = fmt::format("device {}", *device);
  m.allocated = Field(m, s, "Currently allocated");
  m.request = Field(m, s, "Requested");
  m.device_limit = Field(m, s, "Device limit");
  m.free = Field(m, s, "Free (according to CUDA)");
  // The fraction's limit prints SIZE_MAX ("17179869184.00 GiB") when none is set: no limit.
  const std::size_t limit = s.find("PyTorch limit");
  if (limit != std::string_view::npos) {
    const std::size_t colon = s.find(':', limit);
    if (colon != std::string_view::npos) {
      std::string_view rest = s.substr(colon + 1);
      bool oversize = false;
      m.allowed = TakeSize(rest, &oversize);
      m.unlimited_fraction = oversize;
    }
  }
}

void ParseXlaStatsLine(XlaBufferStats& x, OomMessage& m, std::string_view s) {
  for (auto [label, field] : std::array<std::pair<std::string_view, std::optional<PrintedSize>*>, 6>{{
           {"preallocated temp allocation:", &x.preallocated_temp},
           {"maybe_live_out allocation:", &x.maybe_live_out},
           {"parameter allocation:", &x.parameter},
           {"constant allocation:", &x.constant},
           {"total allocation:", &x.total},
           {"total fragmentation:", &x.fragmentation}}}) {
    if (Contains(s, label)) {
      *field = Field(m, s, label);
      return;
    }
  }
}

void ParseTpuLine(TpuMemory& t, OomMessage& m, std::string_view s) {
  const std::string_view trimmed = TrimLeft(s);
  if (const std::size_t used = s.find("Used "); used != std::string_view::npos && !t.used) {
    t.used = Field(m, s, "Used ", used);
    t.capacity = Field(m, s, " of ", used);
  }
  if (Contains(s, "capacity by ")) t.exceeded = Field(m, s, "capacity by ");
  if (Contains(s, "usage >=")) t.total_usage = Field(m, s, "usage >=");
  if (trimmed.substr(0, 8) == "reserved" && !t.reserved) t.reserved = Field(m, trimmed, "reserved");
  if (trimmed.substr(0, 7) == "program" && !t.program) t.program = Field(m, trimmed, "program");
  if (trimmed.substr(0, 9) == "arguments" && !t.arguments) t.arguments = Field(m, trimmed, "arguments");
  if (Contains(s, "Size:") && !t.largest_allocation && !Contains(s, "Output size")) {
    t.largest_allocation = Field(m, s, "Size:");
  }
}

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
  if (const std::size_t shape = rest.find("shape["); shape != std::string_view::npos) {
    std::string_view dims = rest.substr(shape + 6);
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

// What kind of message starts in this line, by its most specific wording.
std::optional<OomMessageKind> Detect(std::string_view s) {
  if (Contains(s, "MPS backend out of memory")) return OomMessageKind::kPytorchMps;
  if (Contains(s, "would exceed allowed memory")) return OomMessageKind::kPytorchAsync;
  if (Contains(s, "Tried to allocate")) return OomMessageKind::kPytorchCaching;
  if (Contains(s, "Ran out of memory in memory space")) return OomMessageKind::kXlaTpuCompile;
  if (Contains(s, "Failed to allocate request for")) return OomMessageKind::kXlaRequest;
  if (Contains(s, "while trying to allocate") ||
      ((Contains(s, "esource exhausted: Out") || Contains(s, "RESOURCE_EXHAUSTED: Out")) &&
       !Contains(s, "Out of memory while"))) {
    return OomMessageKind::kXlaRuntime;
  }
  if (Contains(s, "OOM when allocating tensor")) return OomMessageKind::kTfTensor;
  if (Contains(s, "failed to allocate ") && Contains(s, "from device") &&
      (Contains(s, "OUT_OF_MEMORY") || Contains(s, "out of memory"))) {
    return OomMessageKind::kTfDeviceAlloc;
  }
  if ((Contains(s, "failed to alloc ") && Contains(s, "on host")) || Contains(s, "could not allocate pinned host memory")) {
    return OomMessageKind::kTfHostAlloc;
  }
  if (Contains(s, "CUBLAS_STATUS_ALLOC_FAILED")) return OomMessageKind::kCublas;
  if (Contains(s, "CUDNN_STATUS_ALLOC_FAILED")) return OomMessageKind::kCudnn;
  if (Contains(s, "cuda runtime error (2)") || (Contains(s, "THCudaCheck FAIL") && Contains(s, "out of memory"))) {
    return OomMessageKind::kPytorchLegacy;
  }
  if (Contains(s, "CUDA error: out of memory") || Contains(s, "HIP error: out of memory") ||
      Contains(s, "CUDA_ERROR_OUT_OF_MEMORY") || Contains(s, "cudaErrorMemoryAllocation") ||
      Contains(s, "hipErrorOutOfMemory") || Contains(s, "CUDA out of memory") || Contains(s, "HIP out of memory") ||
      Contains(s, "XPU out of memory")) {
    return OomMessageKind::kCudaRaw;
  }
  return std::nullopt;
}

// Cheap: does the line hold anything a detector looks for?
bool MayHold(std::string_view s) {
  return Contains(s, "emory") || Contains(s, "OUT_OF_MEMORY") || Contains(s, "ALLOC_FAILED") ||
         Contains(s, "Tried to allocate") || Contains(s, "esource exhausted") || Contains(s, "RESOURCE_EXHAUSTED") ||
         Contains(s, "OOM when") || Contains(s, "failed to alloc") || Contains(s, "cudaErrorMemoryAllocation") ||
         Contains(s, "hipErrorOutOfMemory") || Contains(s, "runtime error (2)") || Contains(s, "cublas handle");
}

class Scanner {
 public:
  explicit Scanner(std::string_view text) : lines_(SplitLines(text)) {}

  std::vector<OomMessage> Run() {
    for (std::size_t i = 0; i < lines_.size();) i = Step(i);
    return std::move(out_);
  }

 private:
  std::string_view At(std::size_t i) const { return i < lines_.size() ? lines_[i].text : std::string_view(); }

  OomMessage Start(std::size_t i) const {
    OomMessage m;
    m.line = i + 1;
    m.end_line = i + 1;
    m.offset = lines_[i].offset;
    return m;
  }

  // The line and up to `extra` following ones joined with one blank, while `more` says the text so
  // far is incomplete. Returns the text and sets *last to the last line used.
  template <typename More>
  std::string Join(std::size_t i, std::size_t extra, More more, std::size_t* last) const {
    std::string joined(Trim(At(i)).empty() ? At(i) : At(i));
    *last = i;
    while (*last + 1 < lines_.size() && *last - i < extra && more(std::string_view(joined))) {
      ++*last;
      while (!joined.empty() && IsBlank(joined.back())) joined.pop_back();
      joined += ' ';
      joined += TrimLeft(At(*last));
      if (joined.size() > kMaxMessageText) break;
    }
    return joined;
  }

  std::size_t Step(std::size_t i) {
    const std::string_view s = At(i);
    if (!MayHold(s)) return i + 1;
    // TensorFlow prints the device's memory when it creates it: remembered for its later failures.
    if (Contains(s, "otal memory:") || Contains(s, "totalMemory:")) {
      tf_total_ = SizeAfter(s, Contains(s, "totalMemory:") ? "totalMemory:" : "otal memory:");
      tf_total_line_ = i;
    }
    if (Contains(s, "ree memory:") || Contains(s, "freeMemory:")) {
      tf_free_ = SizeAfter(s, Contains(s, "freeMemory:") ? "freeMemory:" : "ree memory:");
    }
    if (Contains(s, "failed to create cublas handle")) cublas_failed_line_ = i + 1;
    auto kind = Detect(s);
    if (!kind && BareCudaError(i)) kind = OomMessageKind::kCudaRaw;
    if (!kind) return i + 1;
    switch (*kind) {
      case OomMessageKind::kPytorchCaching: return Caching(i);
      case OomMessageKind::kPytorchMps: return Mps(i);
      case OomMessageKind::kPytorchAsync: return Async(i);
      case OomMessageKind::kXlaTpuCompile: return Tpu(i);
      case OomMessageKind::kXlaRequest: return XlaRequest(i);
      case OomMessageKind::kXlaRuntime: return XlaRuntime(i);
      case OomMessageKind::kTfTensor: return TfTensor(i);
      case OomMessageKind::kTfDeviceAlloc:
      case OomMessageKind::kTfHostAlloc: return TfAlloc(i, *kind);
      default: return Raw(i, *kind);
    }
  }

  // mallocMC and other CUDA C++ wrappers: "error: out of memory" alone, under a CUDA exception.
  bool BareCudaError(std::size_t i) const {
    const std::string_view t = Trim(At(i));
    if (t.size() < 20 || t.substr(t.size() - 20) != "error: out of memory") return false;
    for (std::size_t k = i >= 3 ? i - 3 : 0; k <= i; ++k) {
      const std::string_view l = At(k);
      if (Contains(l, "CUDA") || Contains(l, "cuda") || Contains(l, "HIP") || Contains(l, "hip")) return true;
    }
    return false;
  }

  std::size_t Caching(std::size_t i) {
    std::size_t last = i;
    const std::string joined = Join(i, 3, PytorchIncomplete, &last);
    const std::string_view s = joined;
    // Several messages in one line (a log whose newlines were lost): one per "Tried to allocate".
    std::vector<std::size_t> starts;
    for (std::size_t p = s.find("Tried to allocate"); p != std::string_view::npos; p = s.find("Tried to allocate", p + 1)) {
      starts.push_back(p);
    }
    for (std::size_t k = 0; k < starts.size(); ++k) {
      std::size_t begin = 0;
      if (k > 0) {
        // Take the head ("CUDA out of memory. ") that precedes this one.
        begin = starts[k];
        const std::size_t head = s.rfind("out of memory", starts[k]);
        if (head != std::string_view::npos && head > starts[k - 1]) {
          begin = s.rfind(' ', head > 1 ? head - 2 : 0);
          begin = begin == std::string_view::npos || begin < starts[k - 1] ? head : begin + 1;
        }
      }
      const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : s.size();
      const std::string_view piece = s.substr(begin, end - begin);
      OomMessage m = Start(i);
      m.end_line = last + 1;
      SetText(m, Trim(piece));
      ParsePytorchCaching(m, piece);
      out_.push_back(std::move(m));
    }
    return last + 1;
  }

  std::size_t Mps(std::size_t i) {
    std::size_t last = i;
    const std::string joined = Join(i, 2, [](std::string_view t) { return !Contains(t, "Tried to allocate") || !Contains(t, "pool"); }, &last);
    OomMessage m = Start(i);
    m.end_line = last + 1;
    SetText(m, Trim(joined));
    ParseMps(m, joined);
    out_.push_back(std::move(m));
    return last + 1;
  }

  std::size_t Async(std::size_t i) {
    // The fields follow on their own lines (or the same line, flattened).
    std::size_t last = i;
    std::string joined(At(i));
    while (last + 1 < lines_.size() && last - i < 8) {
      const std::string_view next = Trim(At(last + 1));
      const bool field = !next.empty() && (next.front() == ':' || next.substr(0, 9) == "Currently" ||
                                           next.substr(0, 9) == "Requested" || next.substr(0, 6) == "Device" ||
                                           next.substr(0, 4) == "Free" || next.substr(0, 7) == "PyTorch");
      if (!field) break;
      ++last;
      joined += ' ';
      joined += next;
    }
    // Stop where the fields end: a joined line without ':' is not one of them.
    OomMessage m = Start(i);
    m.end_line = last + 1;
    std::string text(At(i));
    for (std::size_t k = i + 1; k <= last; ++k) text += '\n' + std::string(At(k));
    SetText(m, text);
    ParseAsync(m, joined);
    out_.push_back(std::move(m));
    return last + 1;
  }

  std::size_t Tpu(std::size_t i) {
    OomMessage m = Start(i);
    m.kind = OomMessageKind::kXlaTpuCompile;
    m.framework = "jax";
    m.backend = "TPU";
    TpuMemory t;
    const std::string_view s = At(i);
    if (const std::size_t space = s.find("memory space "); space != std::string_view::npos) {
      t.space = std::string(IdentifierAt(s, space + 13));
    }
    m.device = t.space;
    SetText(m, s);
    ParseTpuLine(t, m, s);
    std::size_t k = i + 1;
    std::size_t blank_run = 0;
    for (; k < lines_.size() && k - i < 80; ++k) {
      const std::string_view l = At(k);
      const std::string_view trimmed = Trim(l);
      if (trimmed.empty()) {
        if (++blank_run > 2) break;
        continue;
      }
      blank_run = 0;
      const bool indented = IsBlank(l.front());
      const bool known = trimmed.substr(0, 8) == "Exceeded" || trimmed.substr(0, 5) == "Total" ||
                         trimmed.substr(0, 6) == "Output" || trimmed.substr(0, 7) == "Program" ||
                         trimmed.substr(0, 7) == "Largest";
      if (!indented && !known) break;
      if (Detect(l)) break;
      ParseTpuLine(t, m, l);
      AppendText(m, l);
      m.end_line = k + 1;
    }
    m.tpu = std::move(t);
    const std::size_t next = m.end_line;
    out_.push_back(std::move(m));
    return next;
  }

  std::size_t XlaRequest(std::size_t i) {
    OomMessage m = Start(i);
    m.kind = OomMessageKind::kXlaRequest;
    m.framework = "jax";
    m.backend = "GPU";
    const std::string_view s = At(i);
    SetText(m, Trim(s));
    // "Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0"
    const std::size_t at = s.find("Failed to allocate request for");
    if (const std::size_t open = s.find('(', at); open != std::string_view::npos) m.request = Field(m, s, "(", open);
    if (!m.request) m.request = Field(m, s, "Failed to allocate request for");
    if (const auto ordinal = UintAfter(s, "device ordinal ")) m.device = fmt::format("device ordinal {}", *ordinal);
    out_.push_back(std::move(m));
    return i + 1;
  }

  std::size_t XlaRuntime(std::size_t i) {
    std::size_t last = i;
    const std::string joined =
        Join(i, 2, [](std::string_view t) { return !Contains(t, "while trying to allocate") || !Contains(t, "bytes"); }, &last);
    OomMessage m = Start(i);
    m.kind = OomMessageKind::kXlaRuntime;
    m.framework = Contains(joined, "tensorflow/compiler/jit") ? "tensorflow" : "jax";
    m.backend = "GPU";
    m.end_line = last + 1;
    std::string text(Trim(At(i)));
    for (std::size_t k = i + 1; k <= last; ++k) text += '\n' + std::string(At(k));
    SetText(m, text);
    m.request = Field(m, joined, "while trying to allocate");
    // BufferAssignment statistics and peak buffers follow.
    std::size_t k = last + 1;
    for (; k < lines_.size() && k - last < 120; ++k) {
      const std::string_view l = At(k);
      const std::string_view trimmed = Trim(l);
      const bool part = trimmed.empty() || IsBlank(l.front()) || Contains(l, "BufferAssignment") ||
                        Contains(l, "Peak buffers") || trimmed.substr(0, 6) == "Buffer";
      if (!part || Detect(l)) break;
      if (trimmed.empty() && k + 1 < lines_.size() && !IsBlank(At(k + 1).empty() ? ' ' : At(k + 1).front()) &&
          !Contains(At(k + 1), "Buffer")) {
        break;
      }
      if (Contains(l, "allocation:") || Contains(l, "fragmentation:")) {
        if (!m.xla) m.xla.emplace();
        ParseXlaStatsLine(*m.xla, m, l);
      }
      AppendText(m, l);
      m.end_line = k + 1;
    }
    const std::size_t next = m.end_line;
    out_.push_back(std::move(m));
    return next;
  }

  std::size_t TfTensor(std::size_t i) {
    OomMessage m = Start(i);
    const std::string_view s = At(i);
    SetText(m, Trim(s));
    ParseTfTensor(m, s);
    // "[[Node: …]]", "[[node …]]", "Hint: …" and "[Op:…]" lines belong to it.
    std::size_t k = i + 1;
    for (; k < lines_.size() && k - i <= 4; ++k) {
      const std::string_view t = Trim(At(k));
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
    out_.push_back(std::move(m));
    return next;
  }

  std::size_t TfAlloc(std::size_t i, OomMessageKind kind) {
    const std::string_view s = At(i);
    OomMessage fresh = Start(i);
    const std::optional<PrintedSize> attempt = TfAttempt(fresh, s);
    const bool pinned_note = Contains(s, "could not allocate pinned host memory");
    // The same failure again, or TensorFlow's retry at 0.9 of the size, joins the last message.
    if (!out_.empty()) {
      OomMessage& prev = out_.back();
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
    if (kind == OomMessageKind::kTfDeviceAlloc && tf_total_ && i - tf_total_line_ < 200) {
      m.total = tf_total_;
      m.free = tf_free_;
    }
    m.cublas_init_failed = cublas_failed_line_ != 0 && i + 1 - cublas_failed_line_ <= 10;
    out_.push_back(std::move(m));
    return i + 1;
  }

  std::size_t Raw(std::size_t i, OomMessageKind kind) {
    const std::string_view s = At(i);
    const bool raw_family = kind == OomMessageKind::kPytorchLegacy || kind == OomMessageKind::kCudaRaw ||
                            kind == OomMessageKind::kCublas || kind == OomMessageKind::kCudnn;
    // The second report of one failure (THCudaCheck then RuntimeError; a re-raise) joins the first.
    if (raw_family && !out_.empty()) {
      OomMessage& prev = out_.back();
      if (prev.kind == kind && prev.end_line + kMergeLines >= i + 1) {
        AppendText(prev, Trim(s));
        prev.end_line = i + 1;
        return i + 1;
      }
    }
    OomMessage m = Start(i);
    m.kind = kind;
    SetText(m, Trim(s));
    switch (kind) {
      case OomMessageKind::kPytorchLegacy:
        m.framework = "pytorch";
        m.backend = "CUDA";
        m.error_code = "2";
        break;
      case OomMessageKind::kCublas:
        m.framework = Contains(s, "RuntimeError") || Contains(s, "torch") ? "pytorch" : "cuda";
        m.backend = "CUDA";
        m.error_code = "CUBLAS_STATUS_ALLOC_FAILED";
        break;
      case OomMessageKind::kCudnn:
        m.framework = Contains(s, "MXNet") || Contains(s, "mxnet") ? "mxnet"
                      : Contains(s, "Error in CuDNN")              ? "torch7"
                                                                   : "cuda";
        m.backend = "CUDA";
        m.error_code = "CUDNN_STATUS_ALLOC_FAILED";
        break;
      default:
        m.framework = Contains(s, "torch.") || Contains(s, "RuntimeError: CUDA error") || Contains(s, "CUDA kernel errors")
                          ? "pytorch"
                          : "cuda";
        m.backend = Contains(s, "HIP") || Contains(s, "hip") ? "HIP" : Contains(s, "XPU") ? "XPU" : "CUDA";
        m.error_code = Contains(s, "CUDA_ERROR_OUT_OF_MEMORY")    ? "CUDA_ERROR_OUT_OF_MEMORY"
                       : Contains(s, "hipErrorOutOfMemory")       ? "hipErrorOutOfMemory"
                                                                  : "cudaErrorMemoryAllocation";
        break;
    }
    // A caching-allocator head without its numbers ("CUDA out of memory." cut there).
    if (Contains(s, "CUDA out of memory") || Contains(s, "HIP out of memory") || Contains(s, "XPU out of memory")) {
      m.framework = "pytorch";
      m.backend = BackendBefore(s, s.find("out of memory") + 13);
      m.kind = OomMessageKind::kPytorchCaching;
      ReadPytorchHints(m, s);
    }
    out_.push_back(std::move(m));
    return i + 1;
  }

  std::vector<Line> lines_;
  std::vector<OomMessage> out_;
  std::optional<PrintedSize> tf_total_, tf_free_;
  std::size_t tf_total_line_ = 0;
  std::size_t cublas_failed_line_ = 0;
};

}  // namespace

std::string_view ToString(OomMessageKind kind) {
  switch (kind) {
    case OomMessageKind::kPytorchLegacy: return "pytorch-legacy";
    case OomMessageKind::kPytorchCaching: return "pytorch-caching";
    case OomMessageKind::kPytorchAsync: return "pytorch-async";
    case OomMessageKind::kPytorchMps: return "pytorch-mps";
    case OomMessageKind::kXlaRuntime: return "xla-runtime";
    case OomMessageKind::kXlaRequest: return "xla-request";
    case OomMessageKind::kXlaTpuCompile: return "xla-tpu-compile";
    case OomMessageKind::kTfTensor: return "tf-tensor";
    case OomMessageKind::kTfDeviceAlloc: return "tf-device-alloc";
    case OomMessageKind::kTfHostAlloc: return "tf-host-alloc";
    case OomMessageKind::kCudaRaw: return "cuda-raw";
    case OomMessageKind::kCublas: return "cublas";
    case OomMessageKind::kCudnn: return "cudnn";
  }
  return "";
}

std::vector<OomMessage> FindOomMessages(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return {};  // binary: no log text
  return Scanner(text).Run();
}

bool LooksLikeOomMessage(std::string_view head) {
  if (head.find('\0') != std::string_view::npos) return false;
  // Cheap first: one of the words every detector starts from.
  if (!MayHold(head)) return false;
  return !FindOomMessages(head).empty();
}

std::optional<PrintedSize> ParsePrintedSize(std::string_view text, bool* oversize) {
  std::string_view s = text;
  auto size = TakeSize(s, oversize);
  if (size && !Trim(s).empty()) return std::nullopt;
  return size;
}

}  // namespace fragscope::traces
