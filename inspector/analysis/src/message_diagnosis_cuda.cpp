// The rule for errors of the CUDA runtime itself: PyTorch's legacy THC, raw CUDA / HIP, cuBLAS and
// cuDNN, and libraries that report CUDA's error in their own words (NCCL, llama.cpp / ggml, ONNX
// Runtime's CUDA provider). At most
// they print the size that failed: never the device's state, so the cause stays unknown.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

void DiagnoseRaw(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  std::string what;
  const std::string size = m.request ? fmt::format(" of {}", Fmt(static_cast<double>(m.request->bytes))) : "";
  switch (m.kind) {
    case OomMessageKind::kPytorchLegacy: what = "PyTorch's legacy THC allocator got cudaErrorMemoryAllocation (error 2)"; break;
    case OomMessageKind::kCublas: what = "cuBLAS could not allocate (its handle or workspace)"; break;
    case OomMessageKind::kCudnn: what = "cuDNN could not allocate (an algorithm search or workspace)"; break;
    default:
      if (m.framework == "nccl") {
        what = fmt::format("NCCL's CUDA allocation{} failed (cudaErrorMemoryAllocation)", size);
      } else if (m.framework == "onnxruntime") {
        what = fmt::format("ONNX Runtime's {} provider got {} from the driver{}", m.backend.empty() ? "CUDA" : m.backend,
                           m.error_code, m.device.empty() ? "" : " on " + m.device);
      } else if (m.framework == "ggml") {
        what = fmt::format("llama.cpp (ggml) could not allocate a {} buffer{} (cudaErrorMemoryAllocation)",
                           m.backend.empty() ? "CUDA" : m.backend, size);
      } else {
        what = fmt::format("a {} allocation{} failed ({})", m.backend.empty() ? "CUDA" : m.backend, size,
                           m.error_code.empty() ? "out of memory" : m.error_code);
      }
      break;
  }
  b.Cause(OomCause::kUnknown,
          what + (m.request ? ": the message gives no device totals and nothing of what is held, so capacity, "
                              "fragmentation and memory held elsewhere cannot be told apart"
                            : ": the message gives no sizes, so nothing can be computed"));
  if (m.framework == "pytorch") {
    if (m.kind == OomMessageKind::kCublas || m.kind == OomMessageKind::kCudaRaw) {
      b.Note("outside PyTorch's caching allocator: a library or the CUDA runtime itself asked the driver and was "
             "refused, usually because PyTorch's cache holds the rest of the device");
    }
    b.Advice("torch.cuda.memory_summary() just before the failing call shows what PyTorch holds; "
             "torch.cuda.empty_cache() before it returns the cache to the driver for libraries that need it; "
             "or a smaller batch");
  } else if (m.framework == "nccl") {
    b.Note("NCCL allocates its buffers and proxy memory itself, with cudaMalloc, outside the framework's allocator "
           "(usually when a communicator or a collective is set up): most often the framework's pool holds the rest of "
           "the device");
    b.Advice("leave NCCL room: in PyTorch torch.cuda.empty_cache() before the first collective, or a lower "
             "torch.cuda.set_per_process_memory_fraction; in TensorFlow memory growth "
             "(tf.config.experimental.set_memory_growth); in JAX XLA_PYTHON_CLIENT_MEM_FRACTION below its 0.75; "
             "NCCL_BUFFSIZE (4 MiB by default) or NCCL_MAX_NCHANNELS lower NCCL's own share");
  } else if (m.framework == "ggml") {
    b.Advice("offload fewer layers to the GPU (-ngl / --n-gpu-layers), a smaller context (-c / --ctx-size) or "
             "batch (-b / -ub), a smaller quantization of the model, or split it over several GPUs "
             "(--tensor-split); check " + std::string(ToolsOf(m).smi) + " for other processes on the device");
  } else if (m.framework == "onnxruntime") {
    OrtAdvice(b, m);
  } else if (m.framework == "mxnet") {
    b.Advice("MXNET_CUDNN_AUTOTUNE_DEFAULT=0 avoids cuDNN's workspace-hungry algorithm search; or a smaller batch");
  } else if (m.framework == "torch7") {
    b.Advice("cudnn.benchmark = false avoids cuDNN's algorithm search (cudnnFind…) and its workspaces; or a smaller batch");
  } else {
    b.Advice(fmt::format("check {} for what holds the device; a smaller problem size per GPU", ToolsOf(m).smi));
  }
}

}  // namespace fragscope::analysis::message_detail
