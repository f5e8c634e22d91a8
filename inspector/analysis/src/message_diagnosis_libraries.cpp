// The rules for libraries with an allocator of their own: Theano's CUDA backend, ONNX Runtime's
// BFCArena, torch-directml and CuPy's memory pool. Each prints the request; Theano also the driver's
// free and total, CuPy what its pool holds and its limit. None says what the device holds, so only
// a request larger than the device, a limit of the library's own, or figures that contradict the
// failure decide a cause.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

void DiagnoseTheano(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  b.Read("F", "free (driver)", m.free);
  b.Read("T", "total (driver)", m.total);
  const char* kTheanoAdvice =
      "a smaller batch; THEANO_FLAGS=allow_gc=True (the default) frees intermediate results between calls; shared "
      "variables keep their memory, so update them with data of the same size";
  if (!m.request) {
    b.Cause(OomCause::kUnknown, "the message gives no size: nothing to compute");
    b.Advice(kTheanoAdvice);
    return;
  }
  const Val R = Of(*m.request);
  if (RequestAboveAnyDevice(b, R)) return;
  if (m.total && Greater(R, Of(*m.total))) {
    b.Line("R = {} > T = {}", Fmt(R.v), Fmt(static_cast<double>(m.total->bytes)));
    b.Cause(OomCause::kRequestTooLarge, fmt::format("one array of {} is larger than the whole device ({})", Fmt(R.v),
                                                    Fmt(static_cast<double>(m.total->bytes))));
    b.Advice(kTheanoAdvice);
    return;
  }
  if (!m.free) {
    b.Cause(OomCause::kUnknown, fmt::format("the driver refused {} and the message gives no device totals", Fmt(R.v)));
    b.Advice(kTheanoAdvice);
    return;
  }
  const Val F = Of(*m.free);
  if (LessEq(R, F)) {
    d.inconsistent = true;
    b.Line("R = {} ≤ F = {}", Fmt(R.v), Fmt(F.v));
    b.Cause(OomCause::kUnknown,
            fmt::format("inconsistent numbers: {} fits in the {} the driver reported free, yet cudaMalloc refused it",
                        Fmt(R.v), Fmt(F.v)));
    b.Note("Theano's documentation puts this case (request far below free) down to fragmentation: the free memory "
           "is in pieces and no one block of the request's size is left, typically after shared variables were "
           "updated with data of another size");
    b.Advice(kTheanoAdvice);
    return;
  }
  b.Line("R = {} > F = {}", Fmt(R.v), Fmt(F.v));
  if (m.total) {
    const Val T = Of(*m.total);
    const double used = T.v - F.v;
    b.Derived("used", "in use on the device (T − F)", used);
    b.Line("T − F = {} − {} = {} in use: Theano's arrays, its CUDA context and every other process", Fmt(T.v),
           Fmt(F.v), Fmt(used));
  }
  b.Cause(OomCause::kUnknown,
          fmt::format("the device had only {} free for {}; the message does not say how much of the rest is "
                      "Theano's, so capacity and memory held by another process cannot be told apart", Fmt(F.v),
                      Fmt(R.v)));
  b.Advice("nvidia-smi shows the processes on the device: stop the others, or run on another GPU "
           "(THEANO_FLAGS=device=cuda1)");
  b.Advice(kTheanoAdvice);
}

void DiagnoseOrtArena(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  b.Read("left", "left under the arena's memory limit", m.limit_available);
  if (!m.request) {
    b.Cause(OomCause::kUnknown, "the message gives no size: nothing to compute");
    OrtAdvice(b, m);
    return;
  }
  const Val R = Of(*m.request);
  if (RequestAboveAnyDevice(b, R)) return;
  if (m.limit_available) {
    b.Line("R = {} > {} left under the arena's memory limit", Fmt(R.v), Fmt(static_cast<double>(m.limit_available->bytes)));
    b.Cause(OomCause::kUnknown,
            fmt::format("ONNX Runtime's arena reached its memory limit (the CUDA provider's gpu_mem_limit, or the "
                        "arena's max_mem): it may not grow by {}. Whether its free chunks together held that much "
                        "(fragmentation inside the arena) or not (capacity of the limit), the message does not say",
                        Fmt(R.v)));
  } else {
    b.Cause(OomCause::kUnknown,
            fmt::format("the {} refused {} for ONNX Runtime's arena, also after the arena's back-off (it asks for "
                        "0.9× less each time, down to the request); the message gives no totals, so capacity, "
                        "fragmentation and memory held elsewhere cannot be told apart",
                        m.backend.empty() ? "device (or host, for the CPU arena)" : m.backend + " device", Fmt(R.v)));
  }
  b.Note("the arena keeps every region it grew by for the session's life (it returns no memory by default), and with "
         "arena_extend_strategy kNextPowerOfTwo (the default) each new region doubles: free space of the wrong size "
         "stays held");
  OrtAdvice(b, m);
}

void DiagnoseDirectml(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  if (m.request && RequestAboveAnyDevice(b, Of(*m.request))) return;
  b.Cause(OomCause::kUnknown,
          fmt::format("DirectML could not allocate {} for a tensor; torch-directml prints no device totals and "
                      "nothing of what is held, so capacity and memory held elsewhere cannot be told apart",
                      m.request ? Fmt(static_cast<double>(m.request->bytes)) : "a tensor"));
  b.Note("on Windows every program shares the GPU's memory (WDDM): Task Manager → Performance → GPU shows dedicated "
         "and shared GPU memory and what uses it");
  b.Advice("a smaller batch or resolution; half precision (model.half(), torch_dtype=torch.float16); fewer models on "
           "the device at once (a web UI's low-VRAM option moves the idle ones to the CPU)");
}

void DiagnoseCupy(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested (rounded to 512 B)", m.request);
  b.Read("M", "held by CuPy's memory pool (allocated so far)", m.allocated);
  b.Read("L", "the pool's limit", m.allowed);
  const char* kPoolAdvice =
      "cupy.get_default_memory_pool().free_all_blocks() releases the pool's cached blocks (del the arrays no longer "
      "needed first); smaller arrays or batches";
  if (!m.request) {
    b.Cause(OomCause::kUnknown, "the message gives no size: nothing to compute");
    b.Advice(kPoolAdvice);
    return;
  }
  const Val R = Of(*m.request);
  if (RequestAboveAnyDevice(b, R)) return;
  if (m.allowed && m.allocated) {
    // The pool refuses to grow past its limit before it asks CUDA (SingleDeviceMemoryPool._try_malloc).
    const Val M = Of(*m.allocated), L = Of(*m.allowed);
    const Val need = Add(M, R);
    b.Line("M + R = {} + {} = {} {} L = {}", Fmt(M.v), Fmt(R.v), Fmt(need.v), Greater(need, L) ? ">" : "≤", Fmt(L.v));
    if (Greater(need, L)) {
      b.Cause(OomCause::kCapacity,
              fmt::format("CuPy's memory pool may hold {} (its limit, set by set_limit or CUPY_GPU_MEMORY_LIMIT); it "
                          "holds {} and the request {} would pass that", Fmt(L.v), Fmt(M.v), Fmt(R.v)));
      b.Note("the pool counts its cached free blocks against the limit, and older CuPy checks the limit before "
             "releasing them: free_all_blocks() may make room");
      b.Advice("the limit is the pool's, not the device's: raise it (cupy.get_default_memory_pool().set_limit(size=…) "
               "or CUPY_GPU_MEMORY_LIMIT), or smaller arrays");
      return;
    }
  }
  b.Cause(OomCause::kUnknown,
          fmt::format("CUDA refused {}{} (CuPy releases its cached blocks and retries first); the message gives no "
                      "device totals, so capacity and memory held by another process cannot be told apart",
                      Fmt(R.v), m.allocated ? fmt::format(" with CuPy's pool holding {}", Fmt(static_cast<double>(m.allocated->bytes)))
                                            : std::string()));
  b.Advice(fmt::format("check {} for other processes on the device; {}", ToolsOf(m).smi, kPoolAdvice));
}

}  // namespace fragscope::analysis::message_detail
