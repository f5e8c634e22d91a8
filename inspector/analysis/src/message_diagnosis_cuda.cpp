// The rule for errors of the CUDA runtime itself: PyTorch's legacy THC, raw CUDA / HIP, cuBLAS,
// cuDNN, cuFFT and cuSOLVER, and libraries that report CUDA's error in their own words (NCCL,
// llama.cpp / ggml, ONNX Runtime's CUDA provider, MXNet, TensorRT, XGBoost, LightGBM). At most they
// print the size that failed (XGBoost also the free memory): never what is held, so the cause stays
// unknown unless the free figure contradicts the failure or the size is one no device holds.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

namespace {

// What failed, in the words of whoever printed it; `size` is " of 1.00 GiB" or "".
std::string WhatFailed(const OomMessage& m, const std::string& size) {
  switch (m.kind) {
    case OomMessageKind::kPytorchLegacy: return "PyTorch's legacy THC allocator got cudaErrorMemoryAllocation (error 2)";
    case OomMessageKind::kCublas: return "cuBLAS could not allocate (its handle or workspace)";
    case OomMessageKind::kCudnn: return "cuDNN could not allocate (an algorithm search or workspace)";
    case OomMessageKind::kCufft: return "cuFFT could not allocate (a plan's work area)";
    case OomMessageKind::kCusolver: return "cuSOLVER could not allocate (its handle or a workspace)";
    default: break;
  }
  const std::string backend = m.backend.empty() ? "CUDA" : m.backend;
  if (m.framework == "nccl") return fmt::format("NCCL's CUDA allocation{} failed (cudaErrorMemoryAllocation)", size);
  if (m.framework == "onnxruntime") {
    return fmt::format("ONNX Runtime's {} provider got {} from the driver{}", backend, m.error_code,
                       m.device.empty() ? "" : " on " + m.device);
  }
  if (m.framework == "ggml") {
    return fmt::format("llama.cpp (ggml) could not allocate a {} buffer{} (cudaErrorMemoryAllocation)", backend, size);
  }
  if (m.framework == "mxnet") {
    return m.text.find("retry failed") != std::string::npos
               ? "MXNet's pooled storage manager could not allocate even after releasing its whole pool (cudaMalloc "
                 "retry failed)"
               : "MXNet's cudaMalloc failed (cudaErrorMemoryAllocation)";
  }
  if (m.framework == "tensorrt") {
    return m.request ? fmt::format("TensorRT could not allocate {} of GPU memory", Fmt(static_cast<double>(m.request->bytes)))
                     : "TensorRT could not allocate GPU memory";
  }
  if (m.framework == "xgboost") return fmt::format("XGBoost's device allocation{} failed (cudaErrorMemoryAllocation)", size);
  if (m.framework == "lightgbm") return "LightGBM's CUDA allocation failed (cudaErrorMemoryAllocation)";
  return fmt::format("a {} allocation{} failed ({})", backend, size, m.error_code.empty() ? "out of memory" : m.error_code);
}

void FrameworkAdvice(Builder& b, const OomMessage& m) {
  if (m.framework == "pytorch") {
    if (m.kind != OomMessageKind::kPytorchLegacy && m.kind != OomMessageKind::kCudnn) {
      b.Note("outside PyTorch's caching allocator: a library or the CUDA runtime itself asked the driver and was "
             "refused, usually because PyTorch's cache holds the rest of the device");
    }
    if (m.kind == OomMessageKind::kCufft) {
      b.Advice("torch.backends.cuda.cufft_plan_cache.clear() frees the work areas of cached FFT plans (max_size "
               "limits how many are kept)");
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
  } else if (m.framework == "mxnet" && m.kind == OomMessageKind::kCudnn) {
    b.Advice("MXNET_CUDNN_AUTOTUNE_DEFAULT=0 avoids cuDNN's workspace-hungry algorithm search; or a smaller batch");
  } else if (m.framework == "mxnet") {
    b.Note("MXNet's pool returns every cached block to the driver before it retries, so what fills the device is "
           "live arrays of this process or another process");
    b.Advice(fmt::format("a smaller batch; check {} for other processes on the device", ToolsOf(m).smi));
  } else if (m.framework == "torch7") {
    b.Advice("cudnn.benchmark = false avoids cuDNN's algorithm search (cudnnFind…) and its workspaces; or a smaller batch");
  } else if (m.framework == "tensorrt") {
    b.Advice("TensorRT needs device memory for the engine's weights, activations and workspace: a smaller workspace "
             "limit (config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, …), trtexec --memPoolSize), smaller "
             "optimization-profile shapes (batch, resolution), or release what other frameworks in the process hold "
             "(torch.cuda.empty_cache()) before building or loading the engine");
  } else if (m.framework == "xgboost") {
    b.Advice(fmt::format("xgboost.QuantileDMatrix instead of DMatrix keeps only the quantized data on the device; a "
                         "smaller max_bin or max_depth; check {} for other processes on the device", ToolsOf(m).smi));
  } else if (m.framework == "cupy") {
    b.Advice("cupy.get_default_memory_pool().free_all_blocks() before the call gives CuPy's cached blocks back to the "
             "driver, which the library allocates from; or smaller arrays");
  } else {
    b.Advice(fmt::format("check {} for what holds the device; a smaller problem size per GPU", ToolsOf(m).smi));
  }
}

}  // namespace

void DiagnoseRaw(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  b.Read("F", "free", m.free);
  if (m.request && RequestAboveAnyDevice(b, Of(*m.request))) return;
  const std::string what =
      WhatFailed(m, m.request ? fmt::format(" of {}", Fmt(static_cast<double>(m.request->bytes))) : "");
  if (m.request && m.free) {
    // XGBoost prints what CUDA reported free when it failed.
    const Val R = Of(*m.request), F = Of(*m.free);
    if (LessEq(R, F)) {
      d.inconsistent = true;
      b.Line("R = {} ≤ F = {}", Fmt(R.v), Fmt(F.v));
      b.Cause(OomCause::kUnknown,
              fmt::format("inconsistent numbers: {}, yet it fits in the {} reported free (free changed between "
                          "the failure and the report, or the driver refused one allocation of this size)",
                          what, Fmt(F.v)));
    } else {
      b.Line("R = {} {} F = {}", Fmt(R.v), Greater(R, F) ? ">" : "≈", Fmt(F.v));
      b.Cause(OomCause::kUnknown,
              fmt::format("{}: the device had {} free; the message does not say how much of the rest this process "
                          "holds, so capacity and memory held by another process cannot be told apart", what, Fmt(F.v)));
    }
  } else {
    b.Cause(OomCause::kUnknown,
            what + (m.request ? ": the message gives no device totals and nothing of what is held, so capacity, "
                                "fragmentation and memory held elsewhere cannot be told apart"
                              : ": the message gives no sizes, so nothing can be computed"));
  }
  FrameworkAdvice(b, m);
}

}  // namespace fragscope::analysis::message_detail
