// Advice text the message diagnosis shares between frameworks: how much smaller a batch must be,
// PyTorch's settings against fragmentation in the version the message shows, memory held outside,
// ONNX Runtime's arena settings.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

namespace {

std::string AllocConfVar(const OomMessage& m) {
  if (!m.hint_env.empty()) return m.hint_env;
  return m.backend == "HIP" ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
}

// The PyTorch generation the wording shows: the new layout ("GPU 0 has a total capacity of") is
// 2.1 and later (expandable_segments exists); the max_split_size_mb hint appeared in 1.10.
bool HasExpandableSegments(const OomMessage& m) {
  return m.hint_expandable_segments || m.text.find("has a total capac") != std::string::npos;
}

}  // namespace

DeviceTools ToolsOf(const OomMessage& m) {
  if (m.backend == "HIP") return {"HIP", "rocm-smi", "HIP_VISIBLE_DEVICES"};
  if (m.backend == "XPU") return {"Level Zero", "xpu-smi", "ZE_AFFINITY_MASK"};
  return {"CUDA", "nvidia-smi", "CUDA_VISIBLE_DEVICES"};
}

// How much smaller the batch (or whatever scales the memory) must be, from what this process would
// hold and what it could have.
std::string BatchEstimate(double have, double need) {
  if (need <= 0 || have <= 0) return "a smaller batch (or shorter sequences, lower resolution)";
  if (have >= 0.99 * need) {
    // A share of "99 %" or "100 %" says nothing: say how close it is.
    return fmt::format("a slightly smaller batch: this step is {}, so even a small cut may fit, if memory grows "
                       "with the batch (weights and optimizer state do not)",
                       need > have ? fmt::format("short by only {} of the {} it needs", Fmt(need - have), Fmt(need))
                                   : std::string("at the limit, within the rounding of the printed figures"));
  }
  const double share = std::clamp(have / need, 0.0, 1.0);
  return fmt::format("a smaller batch: at most about {:.0f} % of the current one ({} available for the {} "
                     "this step needs, if memory grows with the batch; weights and optimizer state do not, so "
                     "the cut must be deeper)",
                     std::floor(100.0 * share), Fmt(have), Fmt(need));
}

void PytorchFragmentationAdvice(Builder& b, const OomMessage& m, const Val& U) {
  if (m.backend == "XPU") {
    b.Advice("torch.xpu.empty_cache() does not help here (PyTorch already released every fully free block); "
             "a smaller batch, or fewer differently sized tensors alive at once");
    return;
  }
  const std::string var = AllocConfVar(m);
  if (HasExpandableSegments(m)) {
    b.Advice(fmt::format("{}=expandable_segments:True: segments then grow in place, so the {} reserved but "
                         "unallocated can serve a request of any size", var, Fmt(U.v)));
  } else if (m.hint_max_split_size) {
    b.Advice(fmt::format("{}=max_split_size_mb:128,garbage_collection_threshold:0.8 (PyTorch 1.10 – 2.0): cached "
                         "blocks above 128 MiB are then never split, so they stay whole for large requests, and "
                         "unused ones are released before the limit is hit; PyTorch ≥ 2.1 has "
                         "expandable_segments:True, which removes this fragmentation", var));
  } else {
    b.Advice("this PyTorch is older than 1.10 and has no allocator settings against fragmentation: PyTorch ≥ 2.1 "
             "with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True removes it; until then, a smaller batch");
  }
  b.Ours("expandable=on (regions grow in place; free pages are reused at any size)");
}

void OutsideAdvice(Builder& b, const OomMessage& m, double other_bytes, double in_process, bool listed_self,
                   std::uint64_t self_pid) {
  const DeviceTools tools = ToolsOf(m);
  if (!m.other_processes.empty()) {
    std::string list;
    for (const auto& p : m.other_processes) {
      if (listed_self && p.pid == self_pid) continue;
      if (list.size() > 400) {
        list += ", …";
        break;
      }
      list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", p.pid, p.size.text);
    }
    if (!list.empty()) {
      b.Advice(fmt::format("other processes hold {} of this GPU: PIDs {}; stop them, or run on another GPU "
                           "({})", Fmt(other_bytes), list, tools.visible));
    }
  } else if (other_bytes > 0) {
    b.Advice(fmt::format("{} of the device is neither free nor this PyTorch's: other processes or the {} context "
                         "({} lists the processes); stop them, or run on another GPU ({})",
                         Fmt(other_bytes), tools.runtime, tools.smi, tools.visible));
  }
  if (in_process > static_cast<double>(kGiB) / 2) {
    b.Advice(fmt::format("{} of this process's memory is not PyTorch's (P − Rv): the {} context, {} workspaces, "
                         "{} buffers, {} graphs or another library in the process", Fmt(in_process), tools.runtime,
                         m.backend == "HIP" ? "rocBLAS / MIOpen" : "cuBLAS / cuDNN",
                         m.backend == "HIP" ? "RCCL" : "NCCL", m.backend == "HIP" ? "HIP" : "CUDA"));
  }
}

bool RequestAboveAnyDevice(Builder& b, const Val& R) {
  if (R.v <= static_cast<double>(kLargerThanAnyDevice)) return false;
  const std::string printed = R.text.empty() ? Fmt(R.v) : R.text;
  b.Line("R = {}: more than any accelerator holds", printed);
  b.Cause(OomCause::kRequestTooLarge,
          fmt::format("one request of {} is larger than any device: a shape or size bug", printed));
  b.Advice("check the shapes of the tensors created at the failing operation (a wrong reshape or broadcast, an input "
           "far larger than intended)");
  return true;
}

void OrtAdvice(Builder& b, const OomMessage& m) {
  b.Advice(fmt::format("check {} for other processes on the device; a smaller batch or smaller inputs", ToolsOf(m).smi));
  b.Advice("the CUDA provider's options: gpu_mem_limit caps its arena (leave room for other processes and "
           "libraries), arena_extend_strategy \"kSameAsRequested\" grows the arena by what is asked only, not by "
           "doubling (providers=[(\"CUDAExecutionProvider\", {\"gpu_mem_limit\": …, \"arena_extend_strategy\": "
           "\"kSameAsRequested\"})]); a new InferenceSession releases the arena");
}

}  // namespace fragscope::analysis::message_detail
