#include "fragscope/analysis/framework_advice.hpp"

#include "fragscope/traces/tf_bfc_log.hpp"

namespace fragscope::analysis {
namespace {

using traces::OomCause;

// The same settings the message diagnosis gives for each framework's own error text
// (message_diagnosis_*.cpp), said here from the numbers of a recorded OOM.
std::string PytorchAdvice(OomCause cause, bool expandable_segments) {
  switch (cause) {
    case OomCause::kFragmentation:
      if (expandable_segments) {
        return "expandable_segments was already on, so no PYTORCH_CUDA_ALLOC_CONF setting frees this: the "
               "free memory is stranded between live tensors (in partly used pages, or address space "
               "with no room); free large temporaries sooner, keep fewer differently sized tensors alive "
               "at once, or a smaller batch";
      }
      return "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 and later): segments then grow "
             "in place and their free pages are reused, so memory is no longer stranded in holes between "
             "segments; on 1.10 to 2.0, max_split_size_mb:128 keeps large cached blocks whole";
    case OomCause::kCapacity:
      return "the live tensors need more than the device has, and no PYTORCH_CUDA_ALLOC_CONF setting changes "
             "that: a smaller batch, activation checkpointing (torch.utils.checkpoint), or lower precision "
             "(torch.autocast)";
    case OomCause::kRequestTooLarge:
      return "one tensor is larger than the device can ever give: split it (a smaller batch, shorter "
             "sequences, a chunked operation); no allocator setting helps";
    case OomCause::kBacking:
      return "the GPU had less free memory than PyTorch's limit assumed: another process holds it (nvidia-smi "
             "lists them); stop it or use another GPU (torch.cuda.set_per_process_memory_fraction only "
             "lowers PyTorch's own share)";
    default:
      return "";
  }
}

std::string TensorflowAdvice(OomCause cause) {
  switch (cause) {
    case OomCause::kFragmentation:
      return "TF_GPU_ALLOCATOR=cuda_malloc_async (TensorFlow 2.5 and later) lets the CUDA driver's pool serve "
             "it, where the BFC allocator's regions hold the holes";
    case OomCause::kCapacity:
      return "the live tensors need more than the GPU has: a smaller batch, mixed precision "
             "(tf.keras.mixed_precision), or recomputation (tf.recompute_grad); "
             "RunOptions(report_tensor_allocations_upon_oom=True) lists what is live";
    case OomCause::kRequestTooLarge:
      return "one tensor is larger than the GPU can ever give: split it (a smaller batch); no allocator "
             "setting helps";
    case OomCause::kBacking:
      return "the GPU had less free memory than TensorFlow assumed: by default TensorFlow reserves nearly all "
             "of it at start, so a second process conflicts; tf.config.experimental.set_memory_growth(gpu, "
             "True) in each, and check nvidia-smi";
    default:
      return "";
  }
}

// JAX sizes XLA's BFC pool itself (75 % of the GPU unless told otherwise), so its environment
// variables are the settings, not TensorFlow's.
std::string JaxAdvice(OomCause cause) {
  switch (cause) {
    case OomCause::kFragmentation:
      return "XLA_PYTHON_CLIENT_ALLOCATOR=platform allocates and frees exactly what each array needs (slower, "
             "but no pool to strand memory in holes); or XLA_PYTHON_CLIENT_MEM_FRACTION=.90 to give the BFC pool "
             "more room around them";
    case OomCause::kCapacity:
      return "the live arrays need more than JAX's pool holds: XLA_PYTHON_CLIENT_MEM_FRACTION=.90 where the GPU "
             "has more (the pool is 75 % of it by default); else a smaller batch, jax.checkpoint "
             "(rematerialization) or bfloat16";
    case OomCause::kRequestTooLarge:
      return "one array is larger than JAX's pool can ever give: split it (a smaller batch), or raise "
             "XLA_PYTHON_CLIENT_MEM_FRACTION above its 0.75 where the GPU holds it";
    case OomCause::kBacking:
      return "the GPU had less free memory than JAX's pool assumed: another process holds it (nvidia-smi); "
             "XLA_PYTHON_CLIENT_PREALLOCATE=false in each process that shares the GPU, or a lower "
             "XLA_PYTHON_CLIENT_MEM_FRACTION";
    default:
      return "";
  }
}

std::string RmmAdvice(OomCause cause) {
  switch (cause) {
    case OomCause::kFragmentation:
      return "rmm.mr.CudaAsyncMemoryResource (the CUDA driver's pool) in place of a pool_memory_resource, "
             "or a larger initial_pool_size so that the pool is one block";
    case OomCause::kCapacity:
      return "the live buffers need more than the device has: smaller partitions or batches; no memory "
             "resource changes that (managed memory, rmm.mr.ManagedMemoryResource, spills to the host)";
    case OomCause::kRequestTooLarge:
      return "one buffer is larger than the device can ever give: split the work into smaller partitions";
    case OomCause::kBacking:
      return "the device had less free memory than the pool assumed: another process holds it (nvidia-smi)";
    default:
      return "";
  }
}

// PyTorch writes the setting as True / False (allocator_settings), the environment as true / 1.
bool SettingOn(const traces::TraceHeader& header, std::string_view key) {
  const std::string* value = header.source.Setting(key);
  return value != nullptr && (*value == "True" || *value == "true" || *value == "1");
}

}  // namespace

FrameworkAdvice AdviceInFrameworkTerms(const traces::TraceHeader& header, traces::OomCause cause) {
  const std::string_view source_format = header.source_format;
  if (source_format == "pytorch-snapshot" || source_format == "torch-profiler") {
    return {"PyTorch", PytorchAdvice(cause, SettingOn(header, "expandable_segments"))};
  }
  if (source_format == "tensorflow-bfc-log") {
    if (header.source.allocator == traces::kJaxBfcAllocator) return {"JAX", JaxAdvice(cause)};
    return {"TensorFlow", TensorflowAdvice(cause)};
  }
  if (source_format == "rmm-csv") return {"RMM", RmmAdvice(cause)};
  return {};
}

}  // namespace fragscope::analysis
