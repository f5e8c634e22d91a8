// Out-of-memory errors without sizes: raw CUDA / HIP runtime and driver errors, cuBLAS, cuDNN and
// PyTorch's legacy THC; a repeat of one failure joins its first report.
#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

namespace {

constexpr std::size_t kMergeLines = 40;  // raw errors this close belong to one failure

}  // namespace

std::size_t ReadRawError(MessageScan& scan, std::size_t i, OomMessageKind kind) {
  const std::string_view s = scan.At(i);
  const bool raw_family = kind == OomMessageKind::kPytorchLegacy || kind == OomMessageKind::kCudaRaw ||
                          kind == OomMessageKind::kCublas || kind == OomMessageKind::kCudnn;
  // The second report of one failure (THCudaCheck then RuntimeError; a re-raise) joins the first.
  if (raw_family && !scan.found.empty()) {
    OomMessage& prev = scan.found.back();
    if (prev.kind == kind && prev.end_line + kMergeLines >= i + 1) {
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
  scan.found.push_back(std::move(m));
  return i + 1;
}

}  // namespace fragscope::traces::oomscan
