// The rules for PyTorch's messages: the caching allocator on CUDA, HIP and XPU (every era of its
// wording), cudaMallocAsync and MPS.
#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis::message_detail {

namespace {

// The figures a caching-allocator message always prints after "Tried to allocate …" and this one
// lacks: it was cut (an issue title, a log line cut short, a paste). The free figure is missing by
// design on XPU before PyTorch 2.8, so it alone does not make a message cut.
std::vector<std::string> MissingFigures(const OomMessage& m) {
  std::vector<std::string> missing;
  if (!m.total) missing.emplace_back("the device's total capacity");
  if (!m.free && m.backend != "XPU") missing.emplace_back("the free memory");
  if (!m.allocated) missing.emplace_back("what PyTorch has allocated");
  if (!m.reserved && !m.unallocated) missing.emplace_back("what it has reserved");
  const bool cut = !m.total || !m.allocated || (!m.reserved && !m.unallocated);
  return cut ? missing : std::vector<std::string>{};
}

std::string JoinWords(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return out;
}

// The last words of the message, where it was cut.
std::string Ending(const std::string& text) {
  std::string flat;
  for (char c : text) flat += c == '\n' || c == '\t' ? ' ' : c;
  while (!flat.empty() && flat.back() == ' ') flat.pop_back();
  constexpr std::size_t kWords = 48;
  if (flat.size() <= kWords) return flat;
  // From the first word that starts in the last kWords bytes.
  const std::size_t space = flat.find(' ', flat.size() - kWords);
  return "…" + flat.substr(space == std::string::npos ? flat.size() - kWords : space + 1);
}

// One request larger than the share of the device the process may hold (a per-process memory
// fraction, "X allowed" or cudaMallocAsync's "PyTorch limit"): no allocator setting serves it. Said
// in `b` when so.
bool LargerThanAllowed(Builder& b, const Val& R, const Val& W) {
  if (!Greater(R, W)) return false;
  b.Line("R = {} > allowed = {}", R.text, W.text);
  b.Cause(OomCause::kRequestTooLarge,
          fmt::format("one request of {} is larger than the {} this process is allowed "
                      "(torch.cuda.set_per_process_memory_fraction)", R.text, W.text));
  b.Advice("raise the fraction given to torch.cuda.set_per_process_memory_fraction, or a smaller request");
  return true;
}

}  // namespace

// PyTorch's caching allocator on CUDA, HIP and XPU (every era of its wording).
void DiagnosePytorchCaching(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", m.request_at_least ? "requested (more than)" : "requested", m.request);
  b.Read("T", "total capacity", m.total);
  b.Read("F", "free", m.free);
  b.Read("A", "allocated by PyTorch", m.allocated);
  b.Read("Rv", "reserved by PyTorch", m.reserved);
  // U in the message's own words: "reserved by PyTorch but unallocated" (2.1 on), "cached" before.
  b.Read("U", m.text.find("but unallocated") != std::string::npos ? "reserved but unallocated"
                                                                   : "cached (reserved but unallocated)",
         m.unallocated);
  b.Read("P", "this process (NVML)", m.process_total);
  b.Read("allowed", "allowed (memory fraction)", m.allowed);
  b.Read("pools", "allocated in private pools", m.private_pools);
  if (!m.request) {
    b.Cause(OomCause::kUnknown, "the message gives no sizes: nothing to compute (the full message, with "
                                "\"Tried to allocate\", would tell capacity from fragmentation)");
    b.Advice("a smaller batch; torch.cuda.memory_summary() printed at the failure shows what is held");
    return;
  }
  const Val R = Of(*m.request);
  // 0. A request no device holds, whatever the message says of this one ("Tried to allocate more
  // than 1EB memory": PyTorch's own check of a size that cannot be real).
  if (!m.total && R.v > static_cast<double>(kLargerThanAnyDevice)) {
    b.Line("R {} {} = {}: more than any accelerator holds", m.request_at_least ? ">" : "=", R.text, Fmt(R.v));
    b.Cause(OomCause::kRequestTooLarge,
            fmt::format("one request of {}{} is larger than any device: a size this large is almost always a "
                        "negative or overflowed size, or a shape bug", m.request_at_least ? "more than " : "",
                        m.request->text));
    b.Advice("check the sizes and shapes of the tensor being created at the failing line (a negative dimension, "
             "an integer overflow, a wrong broadcast or view)");
    return;
  }
  const std::uint64_t segment = PytorchSegmentSize(m.request->bytes);
  const Val S = Bytes(static_cast<double>(segment), R.tol);
  b.Derived("S", "segment to allocate", S.v);
  b.Line("S = {} ({}): what the allocator must get from the driver when no cached block fits",
         Fmt(S.v), R.v <= static_cast<double>(kMiB)        ? "R ≤ 1 MiB: one 2 MiB small-pool segment"
                   : R.v < static_cast<double>(10 * kMiB) ? "1 MiB < R < 10 MiB: one 20 MiB segment"
                                                          : "R rounded up to 2 MiB");
  std::optional<Val> T = Opt(m.total), F = Opt(m.free), A = Opt(m.allocated), Rv = Opt(m.reserved),
                     U = Opt(m.unallocated), P = Opt(m.process_total);
  if (Rv && A && !U) {
    U = Sub(*Rv, *A);
    if (U->v < 0) U->v = 0;
    b.Derived("U", "reserved but unallocated", U->v);
    b.Line("U = Rv − A = {} − {} = {}", Rv->text, A->text, Fmt(U->v));
  } else if (U && A && !Rv) {
    Rv = Add(*A, *U);
    b.Derived("Rv", "reserved by PyTorch", Rv->v);
    b.Line("Rv = A + U = {} + {} = {}", A->text, U->text, Fmt(Rv->v));
  }
  // No "this process" line but one listed process as large as PyTorch's reservation: this process,
  // seen through a container's PID namespace.
  bool listed_self = false;
  std::uint64_t self_pid = 0;
  if (!P && Rv && !m.other_processes.empty()) {
    for (const auto& p : m.other_processes) {
      const Val size = Of(p.size);
      const double over = size.v - Rv->v;
      if (over >= -std::max(size.tol, Rv->tol) && over <= std::max(1.5 * kGiB, 0.1 * Rv->v)) {
        P = size;
        listed_self = true;
        self_pid = p.pid;
        b.Note(fmt::format("Process {} ({}) is probably this process seen from another PID namespace (a container): "
                           "its memory is PyTorch's reservation plus {} ({} context and other non-PyTorch memory)",
                           p.pid, p.size.text, Fmt(std::max(0.0, over)), ToolsOf(m).runtime));
        break;
      }
    }
  }
  double others_listed = 0;
  for (const auto& p : m.other_processes) {
    if (!(listed_self && p.pid == self_pid)) others_listed += static_cast<double>(p.size.bytes);
  }
  if (others_listed > 0) {
    b.Derived("O", "other processes", others_listed);
    b.Line("O = {} in {} other process{}", Fmt(others_listed), m.other_processes.size() - (listed_self ? 1 : 0),
           m.other_processes.size() - (listed_self ? 1 : 0) == 1 ? "" : "es");
  }
  std::optional<Val> outside;
  double in_process = 0;
  if (T && F && Rv) {
    outside = Sub(Sub(*T, *F), *Rv);
    if (outside->v >= 0) d.outside = static_cast<std::uint64_t>(std::llround(outside->v));
    b.Derived("outside", "neither free nor PyTorch's", outside->v);
    // Three rounded figures: a difference below 0 within their roundings is 0; beyond them the
    // figures are not the card's alone (rule 2 says why). No negative size is printed.
    const double rounding = T->tol + F->tol + Rv->tol;
    if (outside->v >= 0) {
      b.Line("outside = T − F − Rv = {} − {} − {} = {}", T->text, F->text, Fmt(Rv->v), Fmt(outside->v));
    } else if (-outside->v <= rounding) {
      b.Line("outside = T − F − Rv = {} − {} − {} ≈ 0 (within the figures' rounding, ±{})", T->text, F->text,
             Fmt(Rv->v), Fmt(rounding));
    } else {
      b.Line("T − F − Rv = {} − {} − {} < 0: PyTorch's reservation is {} more than the device's total less its free "
             "memory", T->text, F->text, Fmt(Rv->v), Fmt(-outside->v));
    }
    if (P) {
      in_process = std::max(0.0, P->v - Rv->v);
      if (P->v >= Rv->v) {
        b.Line("P − Rv = {} − {} = {}: non-PyTorch memory inside this process", P->text, Fmt(Rv->v), Fmt(in_process));
      } else if (Rv->v - P->v <= P->tol + Rv->tol) {
        b.Line("P − Rv = {} − {} ≈ 0 (within the figures' rounding): no non-PyTorch memory inside this process",
               P->text, Fmt(Rv->v));
      } else {
        b.Line("P = {} < Rv = {}: the driver's count for this process is below PyTorch's own reservation, so the "
               "non-PyTorch memory inside the process is unknown", P->text, Fmt(Rv->v));
        if (P->v == 0) {
          b.Note("\"this process has 0 bytes memory in use\": NVML did not see this process (typical in a "
                 "container that cannot see the host's process IDs), not that it holds nothing");
        }
      }
    }
  }
  const double other_bytes = others_listed > 0 ? others_listed
                             : outside         ? std::max(0.0, outside->v - std::max(0.0, in_process))
                                               : 0;

  // Memory outside PyTorch that does not decide the cause is still noted, whatever the cause
  // (docs/importers.md: at least 10 % of T or 1 GiB).
  const auto note_outside = [&] {
    if (outside && T && outside->v > 0 &&
        (outside->v >= kOutsideNoteShare * T->v || outside->v >= static_cast<double>(kOutsideNoteFloor))) {
      b.Note(fmt::format("{} of the device ({}) is neither free nor PyTorch's{}", Fmt(outside->v),
                         Pct(outside->v, T->v),
                         in_process > static_cast<double>(kGiB) / 2
                             ? fmt::format(": {} non-PyTorch memory inside this process (P − Rv)", Fmt(in_process))
                             : fmt::format(": other processes, the {} context, the display", ToolsOf(m).runtime)));
    }
  };

  // 1. One request larger than the whole device.
  if (T && Greater(R, *T)) {
    // Two decimals below 10x: one would print a request 5 % over the device as "1.0×".
    const double times = R.v / T->v;
    b.Line("R = {} > T = {}: the request alone is {:.{}f}× the device", R.text, T->text, times, times < 10 ? 2 : 1);
    b.Cause(OomCause::kRequestTooLarge,
            fmt::format("one request of {} is larger than the whole {} device ({}): no allocator setting can fit it",
                        R.text, m.device.empty() ? "GPU" : m.device, T->text));
    if (A && Greater(*A, *T)) {
      d.wddm_spill = true;
      b.Note(fmt::format("A = {} > T = {}: the allocated figure includes memory outside the card (on Windows the "
                         "driver spills into shared system memory)", A->text, T->text));
    }
    if (R.v / T->v >= 100) {
      b.Advice(fmt::format("a request {:.0f}× the device is a shape or size bug: check the shapes of the tensor "
                           "being created at the failing line (a broadcast, a wrong dimension order, an int overflow)",
                           R.v / T->v));
    } else {
      b.Advice(BatchEstimate(T->v - (outside ? std::max(0.0, outside->v) : 0), R.v) +
               "; or split the operation that creates this one tensor (chunk it, or lower its precision)");
    }
    note_outside();
    return;
  }
  // 2. Figures larger than the device: not the card's own memory.
  if (T && ((A && Greater(*A, *T)) || (Rv && Greater(*Rv, *T)))) {
    d.wddm_spill = true;
    d.inconsistent = true;
    const Val& big = Rv && Greater(*Rv, *T) ? *Rv : *A;
    b.Line("{} = {} > T = {}: PyTorch holds more than the device has", Rv && Greater(*Rv, *T) ? "Rv" : "A",
           big.text.empty() ? Fmt(big.v) : big.text, T->text);
    b.Cause(OomCause::kUnknown,
            fmt::format("the numbers do not describe the card's own memory: PyTorch holds {} on a {} device "
                        "(on Windows, WDDM spills into shared system memory), so free and total cannot be compared",
                        Fmt(big.v), T->text));
    b.Advice("the process already runs far beyond the card (in shared system memory, slowly): " +
             BatchEstimate(T->v, big.v + R.v));
    return;
  }
  // 3. A per-process memory fraction ("X allowed;").
  if (m.allowed) {
    const Val W = Of(*m.allowed);
    if (LargerThanAllowed(b, R, W)) {
      note_outside();
      return;
    }
    if (Rv) {
      const Val need = Add(*Rv, S);
      b.Line("Rv + S = {} + {} = {} {} allowed = {}", Fmt(Rv->v), Fmt(S.v), Fmt(need.v),
             Greater(need, W) ? ">" : "≤", W.text);
      if (Greater(need, W)) {
        b.Cause(OomCause::kCapacity,
                fmt::format("the process may hold {} (a memory fraction of the {} device); it holds {} and a new "
                            "{} segment would pass that", W.text, T ? T->text : "whole", Fmt(Rv->v), Fmt(S.v)));
        b.Advice(fmt::format("the limit is the per-process memory fraction, not the device{}: raise "
                             "torch.cuda.set_per_process_memory_fraction (or the test harness's fraction)",
                             F ? fmt::format(" ({} is free)", F->text) : ""));
        note_outside();
        return;
      }
    }
  }
  // A cut message: what is missing cannot be assumed (0 held by PyTorch, all of it free). Only a
  // fresh segment that fits in the free figure printed still decides (rule 4, below).
  if (const std::vector<std::string> missing = MissingFigures(m);
      !missing.empty() && !(F && LessEq(S, *F))) {
    if (F) b.Line("S = {} > F = {}: no fresh segment fits", Fmt(S.v), F->text);
    b.Cause(OomCause::kUnknown,
            fmt::format("the message is cut off (it ends \"{}\"): it lacks {}, so capacity, fragmentation and memory "
                        "held elsewhere cannot be told apart", Ending(m.text), JoinWords(missing)));
    b.Advice("paste the whole message: after \"Tried to allocate …\" PyTorch prints the device's total and free "
             "memory and what it has allocated and reserved (an issue title or a log cut to one line loses them); "
             "torch.cuda.memory_summary() at the failure prints the same figures");
    return;
  }
  // 4. The fresh segment fits in what the driver reported free: no OOM by these numbers.
  if (!F) {
    const Val held = Rv ? *Rv : A ? *A : Bytes(0);
    if (T) {
      const Val need = Add(R, held);
      b.Line("R + Rv = {} + {} = {} {} T = {} (the message gives no free figure)", R.text, Fmt(held.v), Fmt(need.v),
             Greater(need, *T) ? ">" : "≤", T->text);
      if (Greater(need, *T)) {
        b.Cause(OomCause::kCapacity, fmt::format("PyTorch's {} plus the request {} exceed the device's {}",
                                                 Fmt(held.v), R.text, T->text));
        b.Advice(BatchEstimate(T->v, need.v));
        return;
      }
    }
    b.Cause(OomCause::kUnknown,
            fmt::format("the message gives no free figure, and by the total the request fits ({} requested, {} held "
                        "by PyTorch{}): something outside PyTorch holds the rest, or the driver refused one "
                        "allocation of this size", R.text, Fmt(held.v), T ? fmt::format(", {} total", T->text) : ""));
    if (m.backend == "XPU" && R.v >= 4.0 * kGiB) {
      b.Note("Intel GPU drivers limit a single allocation (often to 4 GiB) unless relaxed allocation limits are "
             "enabled: a request of this size can fail with the device nearly empty");
    }
    b.Advice(fmt::format("check what else holds the device ({}) and whether a smaller request succeeds: if it "
                         "does, the limit is per allocation, not the memory", ToolsOf(m).smi));
    return;
  }
  if (LessEq(S, *F)) {
    d.inconsistent = true;
    b.Line("S = {} ≤ F = {}: a fresh segment fits in what the driver reported free", Fmt(S.v), F->text);
    b.Cause(OomCause::kUnknown,
            fmt::format("inconsistent numbers: the {} segment this request needs fits in the {} the driver reported "
                        "free, so by these numbers it should not have failed (free changed between the failure and "
                        "the report, or the driver refused one allocation of this size)", Fmt(S.v), F->text));
    const bool other_noted = other_bytes >= static_cast<double>(kOutsideNoteFloor) ||
                             (T && other_bytes > 0 && other_bytes >= kOutsideNoteShare * T->v);
    if (other_noted) {
      b.Note(fmt::format("{} of the device is held outside this PyTorch ({} of T){}", Fmt(other_bytes),
                         Pct(other_bytes, T ? T->v : 0), others_listed > 0 ? " by the processes listed" : ""));
    }
    OutsideAdvice(b, m, other_noted ? other_bytes : 0, in_process,
                  listed_self, self_pid);
    b.Advice("run it again alone on the device: another process allocating at the same moment, or a "
             "per-allocation limit of the driver (WSL2, APUs), would explain it");
    return;
  }
  b.Line("S = {} > F = {}: no fresh segment fits, so the request needed a cached block of at least R", Fmt(S.v), F->text);
  const Val cached = U ? *U : Bytes(0);
  const Val FU = Add(*F, cached);
  // 5. Memory held outside this PyTorch decides it when it is a large share of the device.
  const bool outside_decides = T && outside && outside->v >= kOutsideShare * T->v &&
                               outside->v > static_cast<double>(kOutsideFloor);
  if (U) {
    b.Line("F + U = {} + {} = {} {} R = {}", F->text, U->text.empty() ? Fmt(U->v) : U->text, Fmt(FU.v),
           Greater(R, FU) ? "<" : LessEq(R, FU) ? "≥" : "≈", R.text);
  }
  if (outside_decides) {
    b.Cause(OomCause::kBacking,
            fmt::format("{} of the {} device ({}) is held outside this PyTorch{}; PyTorch itself holds {}",
                        Fmt(outside->v), T->text, Pct(outside->v, T->v),
                        others_listed > 0 ? fmt::format(", {} of it by other processes", Fmt(others_listed)) : "",
                        Rv ? Fmt(Rv->v) : "?"));
    if (U && LessEq(R, FU)) {
      b.Note(fmt::format("by PyTorch's own numbers it is also fragmentation: R ≤ F + U ({} cached in partly used "
                         "segments)", Fmt(cached.v)));
    }
    OutsideAdvice(b, m, other_bytes, in_process, listed_self, self_pid);
    return;
  }
  note_outside();
  if (Greater(R, FU)) {
    // 6. Capacity: even every free and cached byte together is too little.
    b.Cause(OomCause::kCapacity,
            fmt::format("the request {} is more than the free memory and PyTorch's cache together ({}); "
                        "PyTorch holds {} in live tensors", R.text, Fmt(FU.v), A ? A->text : "?"));
    const double have = (A ? A->v : 0) + FU.v;
    b.Advice(BatchEstimate(have, (A ? A->v : 0) + R.v) +
             "; or activation checkpointing (torch.utils.checkpoint), or lower precision (bf16 / fp16)");
    if (outside && outside->v >= static_cast<double>(kOutsideNoteFloor)) {
      OutsideAdvice(b, m, other_bytes, in_process, listed_self, self_pid);
    }
    b.Ours("`fragscope min-limit` on a trace of the run says the smallest limit that fits it");
    return;
  }
  if (LessEq(R, FU)) {
    // 7. Fragmentation: enough bytes, none contiguous.
    b.Cause(OomCause::kFragmentation,
            fmt::format("{} is free or cached (F + U = {}), more than the request {}, but no single "
                        "block holds it: the cache is split inside partly used segments (PyTorch already released "
                        "every fully free one before failing)", Fmt(FU.v), Fmt(FU.v), R.text));
    if (A && T && A->v >= 0.95 * T->v) {
      b.Note(fmt::format("the device is {} allocated (A / T): even without fragmentation it is at capacity",
                         Pct(A->v, T->v)));
    }
    if (R.v <= static_cast<double>(kMiB)) {
      b.Note("R ≤ 1 MiB is served from the small pool: cached blocks of the large pool cannot serve it");
    }
    PytorchFragmentationAdvice(b, m, cached);
    return;
  }
  b.Cause(OomCause::kUnknown,
          fmt::format("inconclusive: R = {} and F + U = {} differ by less than the rounding of the printed figures",
                      R.text, Fmt(FU.v)));
  b.Advice(BatchEstimate((A ? A->v : 0) + FU.v, (A ? A->v : 0) + R.v));
}

void DiagnosePytorchAsync(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  b.Read("C", "currently allocated", m.allocated);
  b.Read("L", "device limit", m.device_limit);
  b.Read("F", "free (according to CUDA)", m.free);
  b.Read("allowed", "PyTorch limit (memory fraction)", m.allowed);
  if (!m.request || !m.allocated || !m.device_limit) {
    b.Cause(OomCause::kUnknown, "the message lacks the request, the allocated or the limit figure");
    return;
  }
  const Val R = Of(*m.request), C = Of(*m.allocated), L = Of(*m.device_limit);
  if (m.unlimited_fraction) b.Line("PyTorch limit = no limit (the printed value is the largest size): no memory fraction set");
  if (Greater(R, L)) {
    b.Line("R = {} > L = {}", R.text, L.text);
    b.Cause(OomCause::kRequestTooLarge, fmt::format("one request of {} is larger than the device ({})", R.text, L.text));
    b.Advice("check the shapes of the tensor being created: one tensor larger than the device");
    return;
  }
  const Val CR = Add(C, R);
  // A memory fraction below the device (torch.cuda.set_per_process_memory_fraction): the allocator
  // raises this error when live tensors plus the request pass it, before asking CUDA (as rule 3 of
  // the caching allocator, with the "allowed" share).
  if (m.allowed && !m.unlimited_fraction && Greater(L, Of(*m.allowed))) {
    const Val W = Of(*m.allowed);
    if (LargerThanAllowed(b, R, W)) return;
    b.Line("C + R = {} + {} = {} {} allowed = {}", C.text, R.text, Fmt(CR.v),
           Greater(CR, W) ? ">" : LessEq(CR, W) ? "≤" : "≈", W.text);
    if (Greater(CR, W)) {
      b.Cause(OomCause::kCapacity,
              fmt::format("the process may hold {} (a memory fraction of the {} device); live tensors hold {} and "
                          "the request {} would pass that", W.text, L.text, C.text, R.text));
      b.Advice(fmt::format("the limit is the per-process memory fraction, not the device{}: raise "
                           "torch.cuda.set_per_process_memory_fraction (or the test harness's fraction)",
                           m.free ? fmt::format(" ({} is free)", m.free->text) : ""));
      return;
    }
    if (!LessEq(CR, W)) {
      b.Cause(OomCause::kUnknown,
              fmt::format("inconclusive: C + R = {} and the allowed {} differ by less than the rounding of the "
                          "printed figures, so whether the memory fraction or CUDA refused the request cannot be "
                          "told", Fmt(CR.v), W.text));
      return;
    }
  }
  b.Line("C + R = {} + {} = {} {} L = {}", C.text, R.text, Fmt(CR.v), Greater(CR, L) ? ">" : "≤", L.text);
  if (Greater(CR, L)) {
    b.Cause(OomCause::kCapacity, fmt::format("live tensors ({}) plus the request exceed the device ({})", C.text, L.text));
    b.Advice(BatchEstimate(L.v, CR.v));
    return;
  }
  if (!m.free) {
    b.Cause(OomCause::kUnknown, "the message gives no free figure");
    return;
  }
  const Val F = Of(*m.free);
  if (LessEq(R, F)) {
    d.inconsistent = true;
    b.Line("R = {} ≤ F = {}", R.text, F.text);
    b.Cause(OomCause::kUnknown, "inconsistent numbers: the request fits in what CUDA reported free");
    return;
  }
  const Val gap = Sub(Sub(L, C), F);
  d.outside = gap.v > 0 ? static_cast<std::uint64_t>(std::llround(gap.v)) : 0;
  b.Derived("gap", "neither live tensors nor free", gap.v);
  b.Line("L − C − F = {} − {} − {} = {}: memory that no live tensor of this PyTorch holds", L.text, C.text, F.text,
         Fmt(gap.v));
  b.Cause(OomCause::kBacking,
          fmt::format("{} of the device is held by neither a live tensor nor free: other processes, or the "
                      "cudaMallocAsync pool's cached memory (this backend reports no cached figure, so the two "
                      "cannot be told apart); without it the request would fit", Fmt(gap.v)));
  b.Advice("torch.cuda.empty_cache() returns the cudaMallocAsync pool's unused memory to the driver; if nvidia-smi "
           "shows other processes on the GPU, stop them or use another GPU (CUDA_VISIBLE_DEVICES)");
  b.Advice("PYTORCH_CUDA_ALLOC_CONF=backend:native (the default caching allocator) reports cached memory and "
           "accepts expandable_segments:True, if the pool's cache is the holder");
}

void DiagnosePytorchMps(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  b.Read("M", "MPS allocated", m.allocated);
  b.Read("O", "other allocations (Metal, outside PyTorch's heaps)", m.other_allocations);
  b.Read("W", "max allowed (watermark)", m.allowed);
  if (!m.request || !m.allocated || !m.allowed) {
    b.Cause(OomCause::kUnknown, "the message lacks the request, the allocated or the limit figure");
    return;
  }
  const Val R = Of(*m.request), M = Of(*m.allocated), W = Of(*m.allowed);
  const Val O = m.other_allocations ? Of(*m.other_allocations) : Bytes(0);
  if (m.hint_watermark) {
    b.Note("a limit is printed, so PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 was not in effect (with 0.0 there is none)");
  }
  if (Greater(R, W)) {
    b.Line("R = {} > W = {}", R.text, W.text);
    b.Cause(OomCause::kRequestTooLarge, fmt::format("one request of {} is larger than the limit {}", R.text, W.text));
    b.Advice("check the shapes of the tensor being created: one tensor larger than the memory allowed");
    return;
  }
  // Three printed figures added: their roundings add up too (to 0.01 GiB each, 15 MiB together).
  // Within that the sum is at the limit (≈): the failure says it was reached.
  Val need = Add(Add(M, O), R);
  need.tol = M.tol + O.tol + R.tol;
  b.Line("M + O + R = {} + {} + {} = {} {} W = {}", M.text, O.text.empty() ? Fmt(O.v) : O.text, R.text, Fmt(need.v),
         Greater(need, W) ? ">" : LessEq(need, W) ? "≤" : "≈", W.text);
  if (LessEq(need, W)) {
    d.inconsistent = true;
    b.Cause(OomCause::kUnknown, "inconsistent numbers: the request fits under the limit");
    return;
  }
  if (O.v >= kOutsideShare * W.v && O.v > static_cast<double>(kOutsideFloor)) {
    d.outside = static_cast<std::uint64_t>(O.v);
    b.Cause(OomCause::kBacking,
            fmt::format("{} of the {} limit ({}) is Metal memory of this process outside PyTorch's MPS heaps "
                        "(other allocations); PyTorch itself holds {}", O.text, W.text, Pct(O.v, W.v), M.text));
    b.Advice("the other allocations are Metal memory outside PyTorch's heaps in this process (another library, "
             "graphics, or tensors converted outside torch): release them, or torch.mps.empty_cache() between stages");
  } else {
    b.Cause(OomCause::kCapacity,
            need.v > W.v ? fmt::format("PyTorch's {} plus other {} plus the request pass the {} limit by {}", M.text,
                                       O.text, W.text, Fmt(need.v - W.v))
                         : fmt::format("PyTorch's {} plus other {} plus the request reach the {} limit (their sum "
                                       "is within the printed figures' rounding of it)", M.text, O.text, W.text));
    b.Advice(BatchEstimate(W.v - O.v, M.v + R.v));
  }
  b.Advice("PYTORCH_MPS_HIGH_WATERMARK_RATIO above its default raises the limit (0.0 removes it, at the risk of "
           "the system running out of memory)");
}

}  // namespace fragscope::analysis::message_detail
