// The rules for PaddlePaddle's messages: its CUDA allocator's "Cannot allocate R memory on GPU N, A
// memory has been allocated and available memory is only F" and its host allocator's failures.
//
// What the figures are, from Paddle's source (CUDAAllocator::AllocateImpl): R is the chunk Paddle
// asked the driver for (with FLAGS_allocator_strategy=auto_growth, the default since 2.0, after it
// released its idle chunks and tried once more); F is cudaMemGetInfo's free memory, and A is
// `total − available`: memory in use on the device by this process and every other one, not what
// Paddle holds. With FLAGS_gpu_memory_limit_mb set, total is the smaller of the card and the limit.
// So A + F is the device's total (or the limit), and nothing in the message says how much of A is
// Paddle's: unlike PyTorch's reserved figure (SOURCES.md), the numbers cannot tell capacity from
// memory held by another process. They can tell a request larger than the device, and figures that
// contradict the failure (the request fits in what was available).
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

namespace {

void PaddleAdvice(Builder& b, const OomMessage& m) {
  const std::string device = m.device.empty() ? "the GPU" : m.device;
  b.Advice(fmt::format("nvidia-smi shows which processes hold {}: stop them, or run on another GPU "
                       "(CUDA_VISIBLE_DEVICES); paddle.device.cuda.max_memory_reserved() at the failing step shows "
                       "what this Paddle process holds itself", device));
  b.Advice("a smaller batch (batch_size, or batch_size_per_card in PaddleOCR / PaddleDetection configs) or smaller "
           "inputs");
  if (m.memory_limit) {
    b.Advice(fmt::format("FLAGS_gpu_memory_limit_mb caps this process at {}: raise it if the card has more "
                         "(export FLAGS_gpu_memory_limit_mb=…)", m.memory_limit->text));
  }
  if (m.hint_env == "FLAGS_fraction_of_gpu_memory_to_use") {
    b.Advice("this Paddle reserves FLAGS_fraction_of_gpu_memory_to_use of the free memory up front "
             "(FLAGS_allocator_strategy=naive_best_fit): FLAGS_allocator_strategy=auto_growth takes memory as it "
             "is needed instead, and leaves the rest to other processes");
  } else {
    b.Advice("FLAGS_allocator_strategy=auto_growth (the default since Paddle 2.0) takes memory as needed; "
             "naive_best_fit reserves FLAGS_fraction_of_gpu_memory_to_use of the card up front");
  }
}

}  // namespace

void DiagnosePaddleGpu(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested (the chunk Paddle asked the driver for)", m.request);
  b.Read("A", "in use on the device (every process)", m.allocated);
  b.Read("F", "available", m.free);
  b.Read("limit", "FLAGS_gpu_memory_limit_mb", m.memory_limit);
  if (!m.request) {
    b.Cause(OomCause::kUnknown, "the message gives no size: nothing to compute");
    PaddleAdvice(b, m);
    return;
  }
  const Val R = Of(*m.request);
  if (RequestAboveAnyDevice(b, R)) return;
  std::optional<Val> T;
  if (m.allocated && m.free) {
    const Val A = Of(*m.allocated), F = Of(*m.free);
    if (A.v > static_cast<double>(kLargerThanAnyDevice)) {
      d.inconsistent = true;
      b.Line("A = {}: more than any device holds", A.text);
      b.Cause(OomCause::kUnknown,
              fmt::format("inconsistent numbers: {} in use is no device's memory. Paddle prints it as the total less "
                          "the available memory, so this figure says the two readings disagreed (available above "
                          "the total)", A.text));
      PaddleAdvice(b, m);
      return;
    }
    T = Add(A, F);
    b.Derived("T", m.memory_limit ? "total (the card, or the limit if smaller)" : "total", T->v);
    b.Line("T = A + F = {} + {} = {}: Paddle prints the memory in use as the total less the available memory",
           A.text, F.text, Fmt(T->v));
    if (T->v == 0) {
      d.inconsistent = true;
      b.Cause(OomCause::kUnknown, "inconsistent numbers: nothing in use and nothing available, so the driver "
                                  "reported no device memory at all (the query failed, or the device is not usable "
                                  "by this process)");
      b.Advice("nvidia-smi and paddle.utils.run_check() tell whether Paddle can use the GPU at all");
      return;
    }
  }
  if (m.free) {
    const Val F = Of(*m.free);
    if (LessEq(R, F)) {
      d.inconsistent = true;
      b.Line("R = {} ≤ F = {}", R.text, F.text);
      b.Cause(OomCause::kUnknown,
              fmt::format("inconsistent numbers: {} fits in the {} the driver reported available after the failure: "
                          "the memory changed between the two (another process freed some), or the driver could not "
                          "map one block of that size", R.text, F.text));
      PaddleAdvice(b, m);
      return;
    }
    b.Line("R = {} > F = {}", R.text, F.text);
  }
  if (T && Greater(R, *T)) {
    b.Line("R = {} > T = {}", R.text, Fmt(T->v));
    b.Cause(OomCause::kRequestTooLarge,
            fmt::format("one request of {} is larger than the whole {} ({})", R.text,
                        m.memory_limit ? "device or its limit" : "device", Fmt(T->v)));
    b.Advice("a smaller batch or smaller inputs: no setting lets one tensor exceed the device");
    return;
  }
  if (m.allocated && T) {
    b.Cause(OomCause::kUnknown,
            fmt::format("the device was full: only {} of {} available, {} in use. Paddle's in-use figure counts this "
                        "process and every other one on the device, so whether this process filled it (capacity) or "
                        "another process holds the memory cannot be told from the message",
                        m.free->text, Fmt(T->v), m.allocated->text));
    b.Note(fmt::format("{} in use is {} of the device", m.allocated->text, Pct(Of(*m.allocated).v, T->v)));
  } else {
    b.Cause(OomCause::kUnknown,
            fmt::format("the driver had only {} available for {}; this Paddle (before 2.3) prints neither the "
                        "device's total nor what is in use, so capacity and memory held by other processes cannot "
                        "be told apart", m.free ? m.free->text : "an unknown amount", R.text));
  }
  if (m.memory_limit) {
    b.Note(fmt::format("FLAGS_gpu_memory_limit_mb is set ({}): Paddle then measures against the limit where it is "
                       "below the card", m.memory_limit->text));
  }
  if (m.hint_env != "FLAGS_fraction_of_gpu_memory_to_use") {
    // naive_best_fit (the message names the fraction) keeps its pool; auto_growth gives back first.
    b.Note("before raising this error, Paddle's auto_growth allocator returns its idle chunks to the driver and tries "
           "again: what it still holds is in use");
  }
  PaddleAdvice(b, m);
}

void DiagnosePaddleHost(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  d.host_memory = true;
  b.Cause(OomCause::kBacking,
          fmt::format("not GPU memory: Paddle's host allocator could not get {} of host RAM (posix_memalign{}): the "
                      "machine's RAM or the process's memory limit is exhausted",
                      m.request ? Fmt(static_cast<double>(m.request->bytes)) : "a block",
                      m.error_code == "12" ? " failed with ENOMEM" : m.error_code.empty() ? " failed"
                                                                     : " failed with error " + m.error_code));
  b.Advice("smaller inputs (for PaddleOCR, a smaller det_limit_side_len / text_det_limit_side_len or limit type "
           "\"max\", which scales large images down), a smaller batch, fewer data-loader workers; or more host RAM "
           "(the container's memory limit)");
}

}  // namespace fragscope::analysis::message_detail
