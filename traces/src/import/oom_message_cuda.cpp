// Out-of-memory errors of the CUDA runtime itself: raw CUDA / HIP runtime and driver errors, cuBLAS,
// cuDNN, PyTorch's legacy THC, and libraries that report CUDA's error in their own words (NCCL,
// llama.cpp / ggml, ONNX Runtime's CUDA provider), with the size they print where they print one; a
// repeat of one failure joins its first report.
#include <fmt/format.h>

#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

namespace {

constexpr std::size_t kMergeLines = 40;  // raw errors this close belong to one failure
constexpr std::size_t kFollowLines = 3;  // a library's next lines about the same failure

// ONNX Runtime's CudaCall / RocmCall: "CUDA failure 2: out of memory ; GPU=0 ; hostname=… ; expr=…",
// "CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; …".
constexpr std::string_view kOrtGpu = " ; GPU=";

// The library whose words these are: "nccl", "ggml", "onnxruntime", or "" (the caller decides).
std::string_view LibraryOf(std::string_view s) {
  if (Contains(s, " failure 2: out of memory") || Contains(s, kOrtGpu)) return "onnxruntime";
  if (Contains(s, "NCCL WARN") || Contains(s, "Cuda failure 'out of memory'")) return "nccl";
  if (Contains(s, "ggml") || Contains(s, "llama")) return "ggml";
  return {};
}

// What a library prints on the lines after its CUDA error, about the same allocation: NCCL's
// "Failed to CUDA calloc 6291456 bytes", ggml's "failed to allocate CUDA0 buffer of size N" and
// "current device: 0". Returns whether line `s` was one.
bool ReadFollowing(OomMessage& m, std::string_view s) {
  if (m.framework == "nccl") {
    for (std::string_view label : {"Failed to CUDA calloc ", "Failed to CUDA malloc ", "Failed to CUDA host alloc "}) {
      if (Contains(s, label)) {
        if (auto bytes = ExactBytes(m, s, label)) m.request = bytes;
        return true;
      }
    }
    return false;
  }
  if (m.framework == "ggml") {
    if (Contains(s, "failed to allocate ") && Contains(s, " buffer of size ")) {
      if (auto bytes = ExactBytes(m, s, " buffer of size ")) m.request = bytes;  // exact: wins over "allocating X MiB"
      return true;
    }
    if (const auto device = UintAfter(s, "current device: ")) {
      m.device = fmt::format("device {}", *device);
      return true;
    }
  }
  return false;
}

}  // namespace

std::size_t ReadRawError(MessageScan& scan, std::size_t i, OomMessageKind kind) {
  const std::string_view s = scan.At(i);
  const bool raw_family = kind == OomMessageKind::kPytorchLegacy || kind == OomMessageKind::kCudaRaw ||
                          kind == OomMessageKind::kCublas || kind == OomMessageKind::kCudnn;
  const std::string_view library = kind == OomMessageKind::kCudaRaw ? LibraryOf(s) : std::string_view();
  // The second report of one failure (THCudaCheck then RuntimeError; a re-raise; NCCL's warning
  // again) joins the first.
  if (raw_family && !scan.found.empty()) {
    OomMessage& prev = scan.found.back();
    const bool same_source = library.empty() ? prev.framework != "nccl" && prev.framework != "ggml"
                                             : prev.framework == library;
    if (prev.kind == kind && same_source && prev.end_line + kMergeLines >= i + 1) {
      AppendText(prev, Trim(s));
      prev.end_line = i + 1;
      return i + 1;
    }
  }
  OomMessage m = scan.Start(i);
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
  if (!library.empty()) {
    m.framework = std::string(library);
    m.error_code = m.backend == "HIP" ? "hipErrorOutOfMemory" : "cudaErrorMemoryAllocation";
  }
  if (const auto gpu = UintAfter(s, kOrtGpu)) {
    m.framework = "onnxruntime";  // also its cuBLAS / cuDNN failures
    m.device = fmt::format("GPU {}", *gpu);
  }
  // ggml: "allocating 144817.04 MiB on device 0: cudaMalloc failed: out of memory".
  if (Contains(s, "Malloc failed: out of memory")) {
    m.backend = Contains(s, "hipMalloc") ? "HIP" : "CUDA";
    m.error_code = Contains(s, "hipMalloc") ? "hipErrorOutOfMemory" : "cudaErrorMemoryAllocation";
    if (Contains(s, "allocating ")) m.request = Field(m, s, "allocating ");
    if (const auto device = UintAfter(s, " on device ")) m.device = fmt::format("device {}", *device);
  }
  // A plain "CUDA error: out of memory" whose next lines name ggml ("current device: 0, in function
  // ggml_cuda_…").
  std::size_t last = i;
  for (std::size_t k = i + 1; k < scan.lines.size() && k - i <= kFollowLines; ++k) {
    const std::string_view next = scan.At(k);
    if (Detect(next)) break;
    if (m.framework == "cuda" && LibraryOf(next) == "ggml" && Contains(next, "current device")) m.framework = "ggml";
    if (!ReadFollowing(m, next)) continue;
    AppendText(m, Trim(next));
    last = k;
  }
  m.end_line = last + 1;
  scan.found.push_back(std::move(m));
  return last + 1;
}

}  // namespace fragscope::traces::oomscan
