// The rules for TensorFlow's short messages: a tensor (or Eigen's temporary buffer) that could not
// be allocated, and stream_executor's device or pinned host allocation failures.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

namespace {

// The BFC pool refused `what`: the message says nothing of the pool's state, the dump before it does.
void BfcPoolUnknown(Builder& b, const OomMessage& m, const std::string& what) {
  b.Cause(OomCause::kUnknown,
          fmt::format("the message gives only {}, not the {} pool's state: the BFC dump TensorFlow "
                      "logs just before this error (\"Allocator ({}) ran out of memory trying to allocate …\") "
                      "tells capacity from fragmentation: give fragscope the whole log",
                      what, m.allocator.empty() ? "allocator's" : m.allocator,
                      m.allocator.empty() ? "GPU_0_bfc" : m.allocator));
  if (m.request && m.request->bytes < 4 * kMiB) {
    b.Note("a request this small failing means the pool was already full");
  }
  if (!m.tf_report_tensor_hint) {
    b.Advice("RunOptions(report_tensor_allocations_upon_oom=True) lists the live tensors at the failure");
  }
  b.Advice("a smaller batch; tf.config.experimental.set_memory_growth(gpu, True) if other processes share the GPU; "
           "TF_GPU_ALLOCATOR=cuda_malloc_async if the BFC dump shows fragmentation");
}

}  // namespace

void DiagnoseTfTensor(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "tensor bytes", m.request);
  if (!m.tensor_shape.empty()) {
    std::string dims;
    for (std::uint64_t v : m.tensor_shape) dims += fmt::format("{}{}", dims.empty() ? "" : " × ", v);
    if (m.request) {
      b.Line("R = {} elements × {} B ({}) = {} bytes = {}", dims, m.request->bytes / std::max<std::uint64_t>(1,
             [&] { std::uint64_t n = 1; for (auto v : m.tensor_shape) n *= std::max<std::uint64_t>(v, 1); return n; }()),
             m.tensor_dtype, m.request->bytes, Fmt(static_cast<double>(m.request->bytes)));
    } else {
      b.Line("shape {} of type {}: size unknown", dims, m.tensor_dtype.empty() ? "?" : m.tensor_dtype);
    }
  }
  if (m.request && m.request->bytes > kLargerThanAnyDevice) {
    b.Cause(OomCause::kRequestTooLarge, fmt::format("one tensor of {} is larger than any device: a shape bug",
                                                    Fmt(static_cast<double>(m.request->bytes))));
    return;
  }
  if (m.backend == "host") {
    // Host RAM, as for pinned host memory (DiagnoseTfAlloc): no GPU setting applies.
    d.host_memory = true;
    b.Cause(OomCause::kBacking,
            fmt::format("not GPU memory: the tensor ({}) was to live in host RAM (device {}, TensorFlow's {} "
                        "allocator), and the host could not give it: the machine's RAM or the process's memory "
                        "limit is exhausted",
                        m.request ? Fmt(static_cast<double>(m.request->bytes)) : "size unknown",
                        m.device.empty() ? "CPU" : m.device, m.allocator.empty() ? "cpu" : m.allocator));
    if (m.request && m.request->bytes < 4 * kMiB) {
      b.Note("a tensor this small failing means the host's memory was already exhausted");
    }
    b.Advice("more host RAM, or a higher memory limit for the process (the container's memory limit, ulimit -v); "
             "hold less in host memory: smaller tf.data shuffle and prefetch buffers, a cache() to a file rather "
             "than to RAM, a smaller batch");
    return;
  }
  BfcPoolUnknown(b, m, fmt::format("the tensor ({})", m.request ? Fmt(static_cast<double>(m.request->bytes))
                                                                 : "size unknown"));
}

void DiagnoseTfEigen(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "temporary buffer bytes", m.request);
  if (m.request && m.request->bytes == 0) {
    b.Line("R = 0 bytes");
    b.Cause(OomCause::kUnknown,
            "a request of 0 bytes is no shortage of memory: TensorFlow's BFC allocator refuses a 0-byte request "
            "(\"tried to allocate 0 bytes\") and Eigen takes the refusal for running out of memory");
    b.Advice("look for an empty tensor in the failing op's inputs (an empty batch, a dimension of size 0)");
    return;
  }
  if (m.request && RequestAboveAnyDevice(b, Of(*m.request))) return;
  BfcPoolUnknown(b, m, fmt::format("Eigen's temporary buffer ({})",
                                   m.request ? Fmt(static_cast<double>(m.request->bytes)) : "size unknown"));
}

void DiagnoseTfAlloc(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  b.Read("T", "total memory", m.total);
  b.Read("F", "free memory", m.free);
  if (m.attempts.size() > 1) {
    std::string list;
    for (const auto& a : m.attempts) list += fmt::format("{}{}", list.empty() ? "" : " → ", Fmt(static_cast<double>(a.bytes)));
    const bool cascade = m.attempts.back().bytes < m.attempts.front().bytes;
    b.Line("{} attempts: {}{}", m.attempts.size(), list, cascade ? " (TensorFlow retries at 0.9× each time)" : " (the same size again)");
  }
  if (m.kind == OomMessageKind::kTfHostAlloc) {
    d.host_memory = true;
    b.Cause(OomCause::kBacking,
            fmt::format("not device memory: pinned (page-locked) host memory of {} could not be allocated; the "
                        "host's RAM or its locked-memory limit is exhausted",
                        m.request ? Fmt(static_cast<double>(m.request->bytes)) : "some size"));
    b.Advice("TF_CUDA_HOST_MEM_LIMIT_IN_MB caps TensorFlow's pinned host pool; more host RAM, a higher "
             "locked-memory limit (ulimit -l, the container's memory limit), or a smaller input pipeline buffer");
    return;
  }
  if (!m.request) {
    b.Cause(OomCause::kUnknown, "the message gives no size");
    return;
  }
  const Val R = Of(*m.request);
  if (m.total && m.free) {
    const Val T = Of(*m.total), F = Of(*m.free);
    if (Greater(R, T)) {
      b.Line("R = {} > T = {}", Fmt(R.v), T.text);
      b.Cause(OomCause::kRequestTooLarge, "one allocation larger than the device");
      return;
    }
    // TensorFlow's first attempt is about all the free memory it found, so R and F are often equal
    // within F's printed rounding ("4.31GiB" is ±5 MiB): such a margin decides nothing.
    if (!Greater(R, F) && !LessEq(R, F)) {
      b.Line("R = {} ≈ F = {} (of T = {}): equal within the rounding of the printed free figure (±{})", Fmt(R.v),
             F.text, T.text, Fmt(std::max(R.tol, F.tol)));
      b.Cause(OomCause::kUnknown,
              fmt::format("inconclusive: TensorFlow asked for about all the free memory ({} of {} reported free), "
                          "and the margin is within the rounding of the printed figure, so whether it fitted cannot "
                          "be told", Fmt(R.v), F.text));
      b.Advice("tf.config.experimental.set_memory_growth(gpu, True): TensorFlow then takes memory as it needs it "
               "instead of reserving the free memory up front; check nvidia-smi for other processes");
      return;
    }
    b.Line("R = {} {} F = {} (of T = {})", Fmt(R.v), LessEq(R, F) ? "≤" : ">", F.text, T.text);
    if (LessEq(R, F)) {
      d.inconsistent = true;
      b.Cause(OomCause::kUnknown,
              fmt::format("inconsistent numbers: {} fits in the {} reported free. This is TensorFlow reserving its "
                          "pool up front (most of the free memory at start): the driver refused it although the "
                          "device said it was free", Fmt(R.v), F.text));
      b.Advice("tf.config.experimental.set_memory_growth(gpu, True): TensorFlow then takes memory as it needs it "
               "instead of reserving it up front; or a memory limit on a logical device "
               "(tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=…)]))");
      return;
    }
    b.Cause(OomCause::kBacking, fmt::format("the driver had only {} free of {}: the rest is held by other processes "
                                            "or this one's earlier pools", F.text, T.text));
    b.Advice("tf.config.experimental.set_memory_growth(gpu, True), and check nvidia-smi for other processes");
    return;
  }
  b.Cause(OomCause::kUnknown,
          fmt::format("the driver refused {} and the message gives no device totals", Fmt(R.v)));
  if (m.cublas_init_failed) {
    b.Note("cuBLAS failed to create its handle just before: it needs device memory for its workspace, and the "
           "device had none left");
  }
  b.Advice("tf.config.experimental.set_memory_growth(gpu, True): by default TensorFlow reserves nearly all free "
           "memory up front, leaving none to cuBLAS / cuDNN or a second process; check nvidia-smi for other "
           "processes; or TF_GPU_ALLOCATOR=cuda_malloc_async");
}

}  // namespace fragscope::analysis::message_detail
