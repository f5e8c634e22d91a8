// Out-of-memory errors of the CUDA runtime itself: raw CUDA / HIP runtime and driver errors, cuBLAS,
// cuDNN, cuFFT, cuSOLVER, PyTorch's legacy THC, and libraries that report CUDA's error in their own
// words (NCCL, llama.cpp / ggml, ONNX Runtime's CUDA provider, MXNet, TensorRT, XGBoost, LightGBM),
// with the sizes they print where they print any; a repeat of one failure joins its first report.
#include <algorithm>

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

// The library whose words these are: "nccl", "ggml", "onnxruntime", "tensorrt", "xgboost",
// "lightgbm", "mxnet", or "" (the caller decides).
std::string_view LibraryOf(std::string_view s) {
  if (Contains(s, " failure 2: out of memory") || Contains(s, kOrtGpu)) return "onnxruntime";
  if (Contains(s, "NCCL WARN") || Contains(s, "Cuda failure 'out of memory'")) return "nccl";
  if (Contains(s, "ggml") || Contains(s, "llama")) return "ggml";
  // TensorRT's logger ("[TRT]") and its allocator's error codes.
  if (Contains(s, "[TRT]") || Contains(s, "Requested amount of GPU memory (") || Contains(s, "Error Code 1: Cuda Runtime") ||
      Contains(s, "Error Code 2: OutOfMemory")) {
    return "tensorrt";
  }
  // XGBoost's dh::ThrowOOMError: "Memory allocation error on worker 0: std::bad_alloc: cudaErrorMemoryAllocation…".
  if (Contains(s, "XGBoost") || Contains(s, "xgboost") || Contains(s, "Memory allocation error on worker")) return "xgboost";
  if (Contains(s, "[LightGBM]") || Contains(s, "LightGBMError")) return "lightgbm";
  // MXNet's storage managers (src/storage/pooled_storage_manager.h), as its log or exception prints them.
  if (Contains(s, "MXNet") || Contains(s, "mxnet") || Contains(s, "storage_manager")) return "mxnet";
  return {};
}

// XGBoost's "- Free memory: …" and "- Requested memory: …": plain bytes before XGBoost 2.1, its
// HumanMemUnit ("1.5GB", "512MB", 1024-based) since. HumanMemUnit prints with six significant digits
// and drops trailing zeros, so "2GB" is 2 GiB to within 6 digits, not ±0.5 GiB.
std::optional<PrintedSize> XgboostSize(OomMessage& m, std::string_view s, std::string_view label) {
  std::optional<PrintedSize> size = Field(m, s, label);
  if (!size) return ExactBytes(m, s, label);
  if (size->tolerance > 0) size->tolerance = std::min(size->tolerance, size->bytes / 200000 + 1);
  return size;
}

// What a library prints on the lines after its CUDA error, about the same allocation: NCCL's
// "Failed to CUDA calloc 6291456 bytes", ggml's "failed to allocate CUDA0 buffer of size N" and
// "current device: 0", TensorRT's request and error-code lines, XGBoost's "- Free memory:" and
// "- Requested memory:". Returns whether line `s` was one.
bool ReadFollowing(OomMessage& m, std::string_view s) {
  if (m.framework == "tensorrt") {
    // "Requested amount of GPU memory (N bytes) could not be allocated", "Error Code 2: OutOfMemory
    // (Requested size was N bytes.)", or the allocator's "Error Code 1: Cuda Runtime (out of memory)".
    if (Contains(s, "Requested amount of GPU memory (")) {
      if (auto bytes = ExactBytes(m, s, "Requested amount of GPU memory (")) m.request = bytes;
      return true;
    }
    if (Contains(s, "Requested size was ")) {
      if (!m.request) m.request = ExactBytes(m, s, "Requested size was ");
      return true;
    }
    return Contains(s, "Error Code 1: Cuda Runtime") || Contains(s, "Error Code 2: OutOfMemory");
  }
  if (m.framework == "xgboost") {
    for (auto [label, field] : {std::pair{std::string_view("- Free memory:"), &m.free},
                                std::pair{std::string_view("- Requested memory:"), &m.request}}) {
      if (Contains(s, label)) {
        *field = XgboostSize(m, s, label);
        return true;
      }
    }
    return false;
  }
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
                          kind == OomMessageKind::kCublas || kind == OomMessageKind::kCudnn ||
                          kind == OomMessageKind::kCufft || kind == OomMessageKind::kCusolver;
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
    case OomMessageKind::kCufft:
    case OomMessageKind::kCusolver:
      // PyTorch's "cuFFT error: CUFFT_ALLOC_FAILED", "cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when
      // calling `cusolverDnCreate(handle)`"; CuPy's "CuFFTError: CUFFT_ALLOC_FAILED"; a program's own check.
      m.framework = Contains(s, "RuntimeError") || Contains(s, "torch") ? "pytorch" : Contains(s, "cupy") ? "cupy" : "cuda";
      m.backend = "CUDA";
      m.error_code = kind == OomMessageKind::kCufft ? "CUFFT_ALLOC_FAILED" : "CUSOLVER_STATUS_ALLOC_FAILED";
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
  // The line itself may hold the size (TensorRT's "Requested amount of GPU memory (N bytes)").
  ReadFollowing(m, s);
  // A plain "CUDA error: out of memory" whose next lines name ggml ("current device: 0, in function
  // ggml_cuda_…").
  std::size_t last = i;
  for (std::size_t k = i + 1; k < scan.lines.size() && k - i <= kFollowLines; ++k) {
    const std::string_view next = scan.At(k);
    if (m.framework == "cuda" && LibraryOf(next) == "ggml" && Contains(next, "current device")) m.framework = "ggml";
    // A library's own next lines about this failure belong to it, even where they hold words that
    // start a message (TensorRT prints three lines for one failure).
    if (!ReadFollowing(m, next)) {
      if (Detect(next)) break;
      continue;
    }
    AppendText(m, Trim(next));
    last = k;
  }
  m.end_line = last + 1;
  scan.found.push_back(std::move(m));
  return last + 1;
}

}  // namespace fragscope::traces::oomscan
