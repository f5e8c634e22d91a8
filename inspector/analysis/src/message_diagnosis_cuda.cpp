// The rule for errors that give no sizes: PyTorch's legacy THC, raw CUDA / HIP, cuBLAS and cuDNN.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

void DiagnoseRaw(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  std::string what;
  switch (m.kind) {
    case OomMessageKind::kPytorchLegacy: what = "PyTorch's legacy THC allocator got cudaErrorMemoryAllocation (error 2)"; break;
    case OomMessageKind::kCublas: what = "cuBLAS could not allocate (its handle or workspace)"; break;
    case OomMessageKind::kCudnn: what = "cuDNN could not allocate (an algorithm search or workspace)"; break;
    default: what = fmt::format("a {} allocation failed ({})", m.backend.empty() ? "CUDA" : m.backend,
                                m.error_code.empty() ? "out of memory" : m.error_code); break;
  }
  b.Cause(OomCause::kUnknown, what + ": the message gives no sizes, so nothing can be computed");
  if (m.framework == "pytorch") {
    if (m.kind == OomMessageKind::kCublas || m.kind == OomMessageKind::kCudaRaw) {
      b.Note("outside PyTorch's caching allocator: a library or the CUDA runtime itself asked the driver and was "
             "refused, usually because PyTorch's cache holds the rest of the device");
    }
    b.Advice("torch.cuda.memory_summary() just before the failing call shows what PyTorch holds; "
             "torch.cuda.empty_cache() before it returns the cache to the driver for libraries that need it; "
             "or a smaller batch");
  } else if (m.framework == "mxnet") {
    b.Advice("MXNET_CUDNN_AUTOTUNE_DEFAULT=0 avoids cuDNN's workspace-hungry algorithm search; or a smaller batch");
  } else if (m.framework == "torch7") {
    b.Advice("cudnn.benchmark = false avoids cuDNN's algorithm search (cudnnFind…) and its workspaces; or a smaller batch");
  } else {
    b.Advice("check nvidia-smi for what holds the device; a smaller problem size per GPU");
  }
}

}  // namespace fragscope::analysis::message_detail
