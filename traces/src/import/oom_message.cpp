// Out-of-memory messages found in log text (fragscope/traces/oom_message.hpp): the scan over lines,
// which wording starts in a line, and the public entry points. Each wording family's reader lives in
// a file of its own (oom_message_scan.hpp lists them). Every detector starts from a plain substring
// found in one line and a reader reads at most a few following lines, so the whole scan is linear in
// the input.
#include "fragscope/traces/oom_message.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "import/oom_message_scan.hpp"

namespace fragscope::traces {
namespace oomscan {

using namespace oomtext;

namespace {

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

}  // namespace

MessageScan::MessageScan(std::string_view text) : lines(SplitLines(text)) {}

OomMessage MessageScan::Start(std::size_t i) const {
  OomMessage m;
  m.line = i + 1;
  m.end_line = i + 1;
  m.offset = lines[i].offset;
  return m;
}

void SetText(OomMessage& m, std::string_view text) {
  m.text = StripAnsi(text.substr(0, kMaxMessageText));
}

void AppendText(OomMessage& m, std::string_view text) {
  if (m.text.size() >= kMaxMessageText) return;
  m.text += '\n';
  m.text += StripAnsi(text.substr(0, kMaxMessageText - std::min(kMaxMessageText, m.text.size())));
}

std::optional<PrintedSize> Field(OomMessage& m, std::string_view s, std::string_view label, std::size_t from) {
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

std::optional<PrintedSize> ExactBytes(OomMessage& m, std::string_view s, std::string_view label, std::size_t from,
                                      bool grouped) {
  std::string_view grouped_text;  // as printed, with its separators ("1,073,741,824")
  const auto bytes = grouped ? GroupedUintAfter(s, label, from, &grouped_text) : UintAfter(s, label, from);
  if (!bytes) return std::nullopt;
  if (!IsRepresentableSize(*bytes)) {
    m.problems.push_back(fmt::format("line {}: {}{} bytes: more than the 4 EiB fragscope represents", m.line,
                                     label, *bytes));
    return std::nullopt;
  }
  if (grouped) return PrintedSize{*bytes, 0, fmt::format("{} bytes", grouped_text)};
  return PrintedSize{*bytes, 0, fmt::format("{} bytes", *bytes)};
}

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
  // CuPy's memory pool (cupy/cuda/memory.pyx); "Out of memory allocating N bytes." alone is also XLA's
  // CPU client and plain C programs' wording, so CuPy's own words must be there too.
  if (Contains(s, "Out of memory allocating ") && (Contains(s, "allocated so far:") || Contains(s, "cupy"))) {
    return OomMessageKind::kCupy;
  }
  if (Contains(s, "failed to allocate ") && Contains(s, "from device") &&
      (Contains(s, "OUT_OF_MEMORY") || Contains(s, "out of memory"))) {
    return OomMessageKind::kTfDeviceAlloc;
  }
  if ((Contains(s, "failed to alloc ") && Contains(s, "on host")) || Contains(s, "could not allocate pinned host memory")) {
    return OomMessageKind::kTfHostAlloc;
  }
  // Other frameworks' own wordings, each from words only its message prints.
  if (Contains(s, "Out of memory error on ") || Contains(s, "enforce allocating <= available failed")) {
    return OomMessageKind::kPaddleGpu;
  }
  if (Contains(s, "Fail to alloc memory of ")) return OomMessageKind::kPaddleHost;
  if (Contains(s, "Error allocating ") && Contains(s, "bytes of device memory")) return OomMessageKind::kTheano;
  if (Contains(s, "Failed to allocate memory for requested buffer of size ") ||
      (Contains(s, "Available memory of ") && Contains(s, " is smaller than requested bytes of "))) {
    return OomMessageKind::kOrtArena;
  }
  if (Contains(s, "Could not allocate tensor with ") && Contains(s, "GPU video memory")) return OomMessageKind::kDirectml;
  if (Contains(s, "EigenAllocator for GPU ran out of memory when allocating ") ||
      Contains(s, "Ran out of GPU memory when allocating ")) {
    return OomMessageKind::kTfEigen;
  }
  if (Contains(s, "CUBLAS_STATUS_ALLOC_FAILED")) return OomMessageKind::kCublas;
  if (Contains(s, "CUDNN_STATUS_ALLOC_FAILED")) return OomMessageKind::kCudnn;
  if (Contains(s, "CUFFT_ALLOC_FAILED")) return OomMessageKind::kCufft;
  if (Contains(s, "CUSOLVER_STATUS_ALLOC_FAILED")) return OomMessageKind::kCusolver;
  // "cuda runtime err(2): out of memory" is PyTorch 0.1's shorter form.
  if (Contains(s, "cuda runtime error (2)") || Contains(s, "cuda runtime err(2)") ||
      (Contains(s, "THCudaCheck FAIL") && Contains(s, "out of memory"))) {
    return OomMessageKind::kPytorchLegacy;
  }
  // Raw CUDA errors in the words of libraries that call CUDA themselves: NCCL's CUDACHECK
  // ("NCCL WARN Cuda failure 'out of memory'"), llama.cpp / ggml ("CUDA error 2 at
  // ggml-cuda.cu:5509: out of memory", "cudaMalloc failed: out of memory").
  // ONNX Runtime's CUDA / ROCm provider: "CUDA failure 2: out of memory ; GPU=0 ; hostname=… ; expr=cudaMalloc(…)".
  if (Contains(s, "CUDA failure 2: out of memory") || Contains(s, "HIP failure 2: out of memory") ||
      Contains(s, "Cuda failure 'out of memory'") || (Contains(s, "CUDA error 2 at ") && Contains(s, ": out of memory")) ||
      Contains(s, "cudaMalloc failed: out of memory") || Contains(s, "hipMalloc failed: out of memory")) {
    return OomMessageKind::kCudaRaw;
  }
  // MXNet's pooled storage manager once its pool is released ("cudaMalloc retry failed: out of
  // memory"); TensorRT's allocator ("Error Code 1: Cuda Runtime (out of memory)", "Requested amount of
  // GPU memory (N bytes) could not be allocated", "Error Code 2: OutOfMemory"); LightGBM's CUDA check
  // ("[CUDA] out of memory FILE LINE"); the "GPUassert: out of memory FILE LINE" of CUDA programs.
  if (Contains(s, "cudaMalloc retry failed: out of memory") || Contains(s, "Requested amount of GPU memory (") ||
      Contains(s, "Error Code 1: Cuda Runtime (out of memory)") || Contains(s, "Error Code 2: OutOfMemory") ||
      Contains(s, "[CUDA] out of memory") || Contains(s, "GPUassert: out of memory")) {
    return OomMessageKind::kCudaRaw;
  }
  if (Contains(s, "CUDA error: out of memory") || Contains(s, "HIP error: out of memory") ||
      Contains(s, "CUDA_ERROR_OUT_OF_MEMORY") || Contains(s, "cudaErrorMemoryAllocation") ||
      Contains(s, "hipErrorOutOfMemory") || Contains(s, "CUDA out of memory") || Contains(s, "HIP out of memory") ||
      Contains(s, "XPU out of memory")) {
    return OomMessageKind::kCudaRaw;
  }
  return std::nullopt;
}

namespace {

// Cheap: does the line hold anything a detector looks for?
bool MayHold(std::string_view s) {
  return Contains(s, "emory") || Contains(s, "OUT_OF_MEMORY") || Contains(s, "ALLOC_FAILED") ||
         Contains(s, "Tried to allocate") || Contains(s, "esource exhausted") || Contains(s, "RESOURCE_EXHAUSTED") ||
         Contains(s, "OOM when") || Contains(s, "failed to alloc") || Contains(s, "cudaErrorMemoryAllocation") ||
         Contains(s, "hipErrorOutOfMemory") || Contains(s, "runtime error (2)") || Contains(s, "cublas handle") ||
         Contains(s, "enforce allocating");
}

// mallocMC and other CUDA C++ wrappers: "error: out of memory" alone, under a CUDA exception.
bool BareCudaError(const MessageScan& scan, std::size_t i) {
  const std::string_view t = Trim(scan.At(i));
  if (t.size() < 20 || t.substr(t.size() - 20) != "error: out of memory") return false;
  for (std::size_t k = i >= 3 ? i - 3 : 0; k <= i; ++k) {
    const std::string_view l = scan.At(k);
    if (Contains(l, "CUDA") || Contains(l, "cuda") || Contains(l, "HIP") || Contains(l, "hip")) return true;
  }
  return false;
}

// Reads line i, and the message that starts there if one does; returns the next line to read.
std::size_t Step(MessageScan& scan, std::size_t i) {
  const std::string_view s = scan.At(i);
  if (!MayHold(s)) return i + 1;
  // TensorFlow prints the device's memory when it creates it: remembered for its later failures.
  if (Contains(s, "otal memory:") || Contains(s, "totalMemory:")) {
    scan.tf_total = SizeAfter(s, Contains(s, "totalMemory:") ? "totalMemory:" : "otal memory:");
    scan.tf_total_line = i;
  }
  if (Contains(s, "ree memory:") || Contains(s, "freeMemory:")) {
    scan.tf_free = SizeAfter(s, Contains(s, "freeMemory:") ? "freeMemory:" : "ree memory:");
  }
  if (Contains(s, "failed to create cublas handle")) scan.cublas_failed_line = i + 1;
  if (ReadTfNotAFailure(scan, i)) return i + 1;
  auto kind = Detect(s);
  if (!kind && BareCudaError(scan, i)) kind = OomMessageKind::kCudaRaw;
  if (!kind) return i + 1;
  switch (*kind) {
    case OomMessageKind::kPytorchCaching: return ReadPytorchCaching(scan, i);
    case OomMessageKind::kPytorchMps: return ReadPytorchMps(scan, i);
    case OomMessageKind::kPytorchAsync: return ReadPytorchAsync(scan, i);
    case OomMessageKind::kXlaTpuCompile: return ReadXlaTpuCompile(scan, i);
    case OomMessageKind::kXlaRequest: return ReadXlaRequest(scan, i);
    case OomMessageKind::kXlaRuntime: return ReadXlaRuntime(scan, i);
    case OomMessageKind::kTfTensor: return ReadTfTensor(scan, i);
    case OomMessageKind::kTfDeviceAlloc:
    case OomMessageKind::kTfHostAlloc: return ReadTfAlloc(scan, i, *kind);
    case OomMessageKind::kTfEigen: return ReadTfEigen(scan, i);
    case OomMessageKind::kPaddleGpu: return ReadPaddleGpu(scan, i);
    case OomMessageKind::kPaddleHost: return ReadPaddleHost(scan, i);
    case OomMessageKind::kTheano: return ReadTheano(scan, i);
    case OomMessageKind::kOrtArena: return ReadOrtArena(scan, i);
    case OomMessageKind::kDirectml: return ReadDirectml(scan, i);
    case OomMessageKind::kCupy: return ReadCupy(scan, i);
    default: return ReadRawError(scan, i, *kind);
  }
}

}  // namespace
}  // namespace oomscan

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
    case OomMessageKind::kCufft: return "cufft";
    case OomMessageKind::kCusolver: return "cusolver";
    case OomMessageKind::kPaddleGpu: return "paddle-gpu";
    case OomMessageKind::kPaddleHost: return "paddle-host";
    case OomMessageKind::kTheano: return "theano";
    case OomMessageKind::kOrtArena: return "onnxruntime-arena";
    case OomMessageKind::kDirectml: return "directml";
    case OomMessageKind::kTfEigen: return "tf-eigen";
    case OomMessageKind::kCupy: return "cupy";
  }
  return "";
}

OomMessageScan ScanOomMessages(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return {};  // binary: no log text
  oomscan::MessageScan scan(text);
  for (std::size_t i = 0; i < scan.lines.size();) i = oomscan::Step(scan, i);
  oomscan::NoteOrigins(scan, scan.found);
  return {oomscan::MergeRepeats(std::move(scan.found)), std::move(scan.not_failures)};
}

std::vector<OomMessage> FindOomMessages(std::string_view text) { return ScanOomMessages(text).messages; }

bool HoldsTfNotAFailure(std::string_view head) {
  return head.find('\0') == std::string_view::npos && oomtext::Contains(head, "ran out of memory trying to allocate") &&
         oomtext::Contains(head, oomscan::kTfNotAFailure);
}

bool LooksLikeOomMessage(std::string_view head) {
  if (head.find('\0') != std::string_view::npos) return false;
  // Cheap first: one of the words every detector starts from.
  if (!oomscan::MayHold(head)) return false;
  return !FindOomMessages(head).empty();
}

std::optional<PrintedSize> ParsePrintedSize(std::string_view text, bool* oversize) {
  std::string_view s = text;
  auto size = oomtext::TakeSize(s, oversize);
  if (size && !oomtext::Trim(s).empty()) return std::nullopt;
  return size;
}

}  // namespace fragscope::traces
