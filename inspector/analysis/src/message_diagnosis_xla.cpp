// The rules for JAX / XLA's messages: a runtime allocation failure with its BufferAssignment
// statistics, and a TPU program that does not fit at compile time.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

void DiagnoseXlaRuntime(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  if (m.xla) {
    b.Read("param", "parameter allocation", m.xla->parameter);
    b.Read("const", "constant allocation", m.xla->constant);
    b.Read("out", "maybe_live_out allocation", m.xla->maybe_live_out);
    b.Read("temp", "preallocated temp allocation", m.xla->preallocated_temp);
    b.Read("total", "total allocation", m.xla->total);
    b.Read("xla_frag", "XLA total fragmentation", m.xla->fragmentation);
  }
  const std::string jax_common =
      "XLA_PYTHON_CLIENT_PREALLOCATE=false if other processes share the GPU (JAX takes 75 % of it up front), "
      "XLA_PYTHON_CLIENT_MEM_FRACTION=.90 to give the pool more of the device";
  if (!m.request) {
    b.Cause(OomCause::kUnknown, "the message gives no request size");
    return;
  }
  const Val R = Of(*m.request);
  if (R.v > static_cast<double>(kLargerThanAnyDevice)) {
    b.Line("R = {} = {}: more than any accelerator holds", R.text, Fmt(R.v));
    b.Cause(OomCause::kRequestTooLarge, fmt::format("one buffer of {} is larger than any device: a shape bug (a "
                                                    "broadcast or outer product of large arrays)", Fmt(R.v)));
    b.Advice("check the shapes of the operation that failed (jax.eval_shape shows them without running it)");
    return;
  }
  if (m.xla && m.xla->total) {
    const double total = static_cast<double>(m.xla->total->bytes);
    auto part = [](const std::optional<PrintedSize>& s) { return s ? static_cast<double>(s->bytes) : 0.0; };
    b.Line("parameters + constants + live-out + temporaries = {} + {} + {} + {} = {} (printed total {})",
           Fmt(part(m.xla->parameter)), Fmt(part(m.xla->constant)), Fmt(part(m.xla->maybe_live_out)),
           Fmt(part(m.xla->preallocated_temp)), Fmt(part(m.xla->parameter) + part(m.xla->constant) +
                                                     part(m.xla->maybe_live_out) + part(m.xla->preallocated_temp)),
           m.xla->total->text);
    if (m.xla->fragmentation) {
      b.Note(fmt::format("XLA's \"total fragmentation\" ({}) is padding in its buffer packing, not allocator "
                         "fragmentation", m.xla->fragmentation->text));
    }
    if (total >= static_cast<double>(kSmallProgram)) {
      b.Cause(OomCause::kCapacity,
              fmt::format("the compiled program alone needs {} of device memory (the request {} is its {} "
                          "buffer); the device's pool had less room", m.xla->total->text, Fmt(R.v),
                          m.xla->preallocated_temp &&
                                  std::fabs(static_cast<double>(m.xla->preallocated_temp->bytes) - R.v) <=
                                      static_cast<double>(m.xla->preallocated_temp->tolerance)
                              ? "temporary"
                              : "next"));
      b.Advice("a smaller batch, or jax.checkpoint (rematerialization) to shrink the temporaries; " + jax_common);
    } else {
      b.Cause(OomCause::kUnknown,
              fmt::format("a program of {} cannot fill a GPU by itself: the pool was already full of other live "
                          "arrays (kept alive by Python references) or another process holds the device",
                          m.xla->total->text));
      b.Advice("delete arrays no longer needed (or jax.clear_caches() / del and gc between stages); " + jax_common);
    }
    return;
  }
  b.Cause(OomCause::kUnknown, fmt::format("the message gives only the request ({}): not the device's size nor what "
                                          "is held, so capacity and fragmentation cannot be told apart", Fmt(R.v)));
  b.Advice(jax_common + "; XLA_PYTHON_CLIENT_ALLOCATOR=platform frees exactly (slow; shows whether fragmentation of "
                        "the pool is the cause)");
}

void DiagnoseXlaTpuCompile(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  if (!m.tpu || !m.tpu->used || !m.tpu->capacity) {
    b.Cause(OomCause::kUnknown, "the message lacks the used or capacity figure");
    return;
  }
  const auto& t = *m.tpu;
  b.Read("used", "program " + t.space + " usage", t.used);
  b.Read("C", t.space + " capacity", t.capacity);
  b.Read("exceeded", "exceeded by", t.exceeded);
  b.Read("reserved", "reserved", t.reserved);
  b.Read("largest", "largest program allocation", t.largest_allocation);
  const Val used = Of(*t.used), cap = Of(*t.capacity);
  // The excess XLA prints is exact where used and capacity, rounded to three digits, print alike
  // ("Used 1.00M of 1.00M smem. Exceeded smem capacity by 1.7K"): then it decides.
  const bool within_rounding = !Greater(used, cap) && !Greater(cap, used);
  const bool excess_printed = t.exceeded && t.exceeded->bytes > 0;
  if (Greater(used, cap)) {
    b.Line("used − C = {} − {} = {}{}", used.text, cap.text, Fmt(used.v - cap.v),
           t.exceeded ? fmt::format(" (printed: exceeded by {})", t.exceeded->text) : "");
  } else if (within_rounding) {
    b.Line("used = {} and C = {} are equal within their rounding (±{}){}", used.text, cap.text,
           Fmt(std::max(used.tol, cap.tol)),
           excess_printed ? fmt::format("; the excess XLA prints, {}, decides", t.exceeded->text) : "");
  } else {
    b.Line("used = {} < C = {}{}", used.text, cap.text,
           t.exceeded ? fmt::format(" (printed: exceeded by {})", t.exceeded->text) : "");
  }
  if (t.reserved && t.program) {
    b.Line("reserved + program = {} + {} = {}{}", t.reserved->text, t.program->text,
           Fmt(static_cast<double>(t.reserved->bytes + t.program->bytes)),
           t.total_usage ? fmt::format(" (printed: total ≥ {})", t.total_usage->text) : "");
  }
  if (t.largest_allocation && t.largest_allocation->bytes > t.capacity->bytes) {
    b.Cause(OomCause::kRequestTooLarge, "one allocation of the program is larger than the core's " + t.space);
    return;
  }
  const std::string advice = t.space == "smem"
                                  ? "smem is the core's small scalar memory: its scalars and index tables grow with "
                                    "the per-core batch (or the sequences per step), so a smaller one lowers it"
                                  : "shard over more cores (a larger mesh / more model parallelism), a smaller "
                                    "per-core batch, or jax.checkpoint to rematerialize activations";
  if (Greater(used, cap)) {
    b.Cause(OomCause::kCapacity, fmt::format("the compiled program needs {} of {} per core, {:.2f}× the "
                                             "{} it has (decided at compile time)", used.text, t.space, used.v / cap.v,
                                             cap.text));
    b.Advice(advice);
    return;
  }
  if (within_rounding && excess_printed) {
    b.Cause(OomCause::kCapacity,
            fmt::format("the compiled program needs more {} per core than the {} it has: {} over, by XLA's own count "
                        "(used and capacity print alike as rounded; decided at compile time)", t.space, cap.text,
                        t.exceeded->text));
    b.Advice(advice);
    return;
  }
  b.Cause(OomCause::kUnknown, "inconsistent: the usage printed does not exceed the capacity");
}

}  // namespace fragscope::analysis::message_detail
