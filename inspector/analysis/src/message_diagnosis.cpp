// The diagnosis of an out-of-memory message (message_diagnosis.hpp). One function per wording
// family; each fills the numbers, shows its arithmetic, decides the cause and gives advice in the
// framework's terms. A margin smaller than the rounding of the coarsest printed figure decides
// nothing (printed values carry ±half a unit of their last digit).
#include "fragscope/analysis/message_diagnosis.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope::analysis {
namespace {

using traces::OomCause;
using traces::OomMessage;
using traces::OomMessageKind;
using traces::PrintedSize;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
// More than any one accelerator holds (the largest today carry under 300 GB): a request above it
// is a shape or size bug, whatever device ran it.
constexpr std::uint64_t kLargerThanAnyDevice = 512 * kGiB;
// Memory outside the framework decides the cause when it is at least this share of the device and
// more than a CUDA context could be.
constexpr double kOutsideShare = 1.0 / 3.0;
constexpr std::uint64_t kOutsideFloor = 2 * kGiB;
// Worth a note below that.
constexpr double kOutsideNoteShare = 0.10;
constexpr std::uint64_t kOutsideNoteFloor = kGiB;
// An XLA program whose own buffers need less than this cannot fill a GPU by itself.
constexpr std::uint64_t kSmallProgram = kGiB;

// A value with its printing uncertainty.
struct Val {
  double v = 0;
  double tol = 0;
  std::string text;  // as printed, or "" for a derived value
};

Val Of(const PrintedSize& s) {
  return {static_cast<double>(s.bytes), static_cast<double>(s.tolerance), s.text};
}
Val Bytes(double v, double tol = 0) { return {v, tol, ""}; }
Val Add(const Val& a, const Val& b) { return {a.v + b.v, std::max(a.tol, b.tol), ""}; }
Val Sub(const Val& a, const Val& b) { return {a.v - b.v, std::max(a.tol, b.tol), ""}; }

// a > b by more than the rounding of either.
bool Greater(const Val& a, const Val& b) { return a.v - b.v > std::max(a.tol, b.tol); }
bool LessEq(const Val& a, const Val& b) { return b.v - a.v >= std::max(a.tol, b.tol) || (a.tol == 0 && b.tol == 0 && a.v <= b.v); }

std::string Fmt(double bytes) {
  if (bytes < 0) return "−" + traces::FormatBytes(static_cast<std::uint64_t>(std::llround(-bytes)));
  return traces::FormatBytes(static_cast<std::uint64_t>(std::llround(bytes)));
}
std::string Pct(double part, double whole) { return whole > 0 ? fmt::format("{:.0f} %", 100.0 * part / whole) : "?"; }

class Builder {
 public:
  explicit Builder(MessageDiagnosis& d) : d_(d) {}
  void Read(std::string symbol, std::string name, const std::optional<PrintedSize>& s) {
    if (s) d_.numbers.push_back({std::move(symbol), std::move(name), s->bytes, s->text});
  }
  void Derived(std::string symbol, std::string name, double bytes) {
    d_.numbers.push_back({std::move(symbol), std::move(name),
                          bytes > 0 ? static_cast<std::uint64_t>(std::llround(bytes)) : 0, ""});
  }
  template <typename... Args>
  void Line(fmt::format_string<Args...> f, Args&&... args) {
    d_.arithmetic.push_back(fmt::format(f, std::forward<Args>(args)...));
  }
  void Cause(OomCause cause, std::string explanation) {
    d_.cause = cause;
    d_.explanation = std::move(explanation);
  }
  void Note(std::string note) { d_.notes.push_back(std::move(note)); }
  void Advice(std::string advice) { d_.advice.push_back(std::move(advice)); }
  void Ours(std::string advice) { d_.fragscope_advice.push_back("with fragscope's allocator: " + std::move(advice)); }

 private:
  MessageDiagnosis& d_;
};

std::optional<Val> Opt(const std::optional<PrintedSize>& s) {
  if (!s) return std::nullopt;
  return Of(*s);
}

// How much smaller the batch (or whatever scales the memory) must be, from what this process would
// hold and what it could have.
std::string BatchEstimate(double have, double need) {
  if (need <= 0 || have <= 0) return "a smaller batch (or shorter sequences, lower resolution)";
  const double share = std::clamp(have / need, 0.0, 1.0);
  return fmt::format("a smaller batch: at most about {:.0f} % of the current one ({} available for the {} "
                     "this step needs, if memory grows with the batch; weights and optimizer state do not, so "
                     "the cut must be deeper)",
                     std::floor(100.0 * share), Fmt(have), Fmt(need));
}

std::string AllocConfVar(const OomMessage& m) {
  if (!m.hint_env.empty()) return m.hint_env;
  return m.backend == "HIP" ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
}

// The PyTorch generation the wording shows: the new layout ("GPU 0 has a total capacity of") is
// 2.1 and later (expandable_segments exists); the max_split_size_mb hint appeared in 1.10.
bool HasExpandableSegments(const OomMessage& m) {
  return m.hint_expandable_segments || m.text.find("has a total capac") != std::string::npos;
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
                           "(CUDA_VISIBLE_DEVICES)", Fmt(other_bytes), list));
    }
  } else if (other_bytes > 0) {
    b.Advice(fmt::format("{} of the device is neither free nor this PyTorch's: other processes or the CUDA context "
                         "(nvidia-smi lists the processes); stop them, or run on another GPU (CUDA_VISIBLE_DEVICES)",
                         Fmt(other_bytes)));
  }
  if (in_process > static_cast<double>(kGiB) / 2) {
    b.Advice(fmt::format("{} of this process's memory is not PyTorch's (P − Rv): the CUDA context, cuBLAS / cuDNN "
                         "workspaces, NCCL buffers, CUDA graphs or another library in the process",
                         Fmt(in_process)));
  }
}

// PyTorch's caching allocator on CUDA, HIP and XPU (every era of its wording).
void DiagnosePytorchCaching(const OomMessage& m, MessageDiagnosis& d) {
  Builder b(d);
  b.Read("R", "requested", m.request);
  b.Read("T", "total capacity", m.total);
  b.Read("F", "free", m.free);
  b.Read("A", "allocated by PyTorch", m.allocated);
  b.Read("Rv", "reserved by PyTorch", m.reserved);
  b.Read("U", m.reserved || m.process_total || m.allowed ? "reserved but unallocated" : "cached (reserved but unallocated)",
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
                           "its memory is PyTorch's reservation plus {} (CUDA context and other non-PyTorch memory)",
                           p.pid, p.size.text, Fmt(std::max(0.0, over))));
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
    d.outside = outside->v > 0 ? static_cast<std::uint64_t>(std::llround(outside->v)) : 0;
    b.Derived("outside", "neither free nor PyTorch's", outside->v);
    b.Line("outside = T − F − Rv = {} − {} − {} = {}", T->text, F->text, Fmt(Rv->v), Fmt(outside->v));
    if (P) {
      in_process = P->v - Rv->v;
      b.Line("P − Rv = {} − {} = {}: non-PyTorch memory inside this process", P->text, Fmt(Rv->v), Fmt(in_process));
    }
  }
  const double other_bytes = others_listed > 0 ? others_listed
                             : outside         ? std::max(0.0, outside->v - std::max(0.0, in_process))
                                               : 0;

  // 1. One request larger than the whole device.
  if (T && Greater(R, *T)) {
    b.Line("R = {} > T = {}: the request alone is {:.1f}× the device", R.text, T->text, R.v / T->v);
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
    if (Greater(R, W)) {
      b.Line("R = {} > allowed = {}", R.text, W.text);
      b.Cause(OomCause::kRequestTooLarge,
              fmt::format("one request of {} is larger than the {} this process is allowed "
                          "(torch.cuda.set_per_process_memory_fraction)", R.text, W.text));
      b.Advice("raise the fraction given to torch.cuda.set_per_process_memory_fraction, or a smaller request");
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
        return;
      }
    }
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
    b.Advice("check what else holds the device (xpu-smi / nvidia-smi / rocm-smi) and whether a smaller request "
             "succeeds: if it does, the limit is per allocation, not the memory");
    return;
  }
  if (LessEq(S, *F)) {
    d.inconsistent = true;
    b.Line("S = {} ≤ F = {}: a fresh segment fits in what the driver reported free", Fmt(S.v), F->text);
    b.Cause(OomCause::kUnknown,
            fmt::format("inconsistent numbers: the {} segment this request needs fits in the {} the driver reported "
                        "free, so by these numbers it should not have failed (free changed between the failure and "
                        "the report, or the driver refused one allocation of this size)", Fmt(S.v), F->text));
    if (other_bytes >= static_cast<double>(kOutsideNoteFloor)) {
      b.Note(fmt::format("{} of the device is held outside this PyTorch ({} of T){}", Fmt(other_bytes),
                         Pct(other_bytes, T ? T->v : 0), others_listed > 0 ? " by the processes listed" : ""));
    }
    OutsideAdvice(b, m, other_bytes >= static_cast<double>(kOutsideNoteFloor) ? other_bytes : 0, in_process,
                  listed_self, self_pid);
    b.Advice("run it again alone on the device: another process allocating at the same moment, or a "
             "per-allocation limit of the driver (WSL2, APUs), would explain it");
    return;
  }
  b.Line("S = {} > F = {}: no fresh segment fits, so a cached block had to", Fmt(S.v), F->text);
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
  if (outside && T && (outside->v >= kOutsideNoteShare * T->v || outside->v >= static_cast<double>(kOutsideNoteFloor))) {
    b.Note(fmt::format("{} of the device ({}) is neither free nor PyTorch's{}", Fmt(outside->v),
                       Pct(outside->v, T->v),
                       in_process > static_cast<double>(kGiB) / 2
                           ? fmt::format(": {} non-PyTorch memory inside this process (P − Rv)", Fmt(in_process))
                           : ": other processes, the CUDA context, the display"));
  }
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

void DiagnoseAsync(const OomMessage& m, MessageDiagnosis& d) {
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

void DiagnoseMps(const OomMessage& m, MessageDiagnosis& d) {
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
  const Val need = Add(Add(M, O), R);
  b.Line("M + O + R = {} + {} + {} = {} {} W = {}", M.text, O.text.empty() ? Fmt(O.v) : O.text, R.text, Fmt(need.v),
         need.v > W.v ? ">" : "≤", W.text);
  if (need.v <= W.v) {
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
    b.Cause(OomCause::kCapacity, fmt::format("PyTorch's {} plus other {} plus the request pass the {} "
                                             "limit by {}", M.text, O.text, W.text, Fmt(need.v - W.v)));
    b.Advice(BatchEstimate(W.v - O.v, M.v + R.v));
  }
  b.Advice("PYTORCH_MPS_HIGH_WATERMARK_RATIO above its default raises the limit (0.0 removes it, at the risk of "
           "the system running out of memory)");
}

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

void DiagnoseTpu(const OomMessage& m, MessageDiagnosis& d) {
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
  b.Line("used − C = {} − {} = {}{}", used.text, cap.text, Fmt(used.v - cap.v),
         t.exceeded ? fmt::format(" (printed: exceeded by {})", t.exceeded->text) : "");
  if (t.reserved && t.program) {
    b.Line("reserved + program = {} + {} = {}{}", t.reserved->text, t.program->text,
           Fmt(static_cast<double>(t.reserved->bytes + t.program->bytes)),
           t.total_usage ? fmt::format(" (printed: total ≥ {})", t.total_usage->text) : "");
  }
  if (t.largest_allocation && t.largest_allocation->bytes > t.capacity->bytes) {
    b.Cause(OomCause::kRequestTooLarge, "one allocation of the program is larger than the core's " + t.space);
    return;
  }
  if (Greater(used, cap)) {
    b.Cause(OomCause::kCapacity, fmt::format("the compiled program needs {} of {} per core, {:.2f}× the "
                                             "{} it has (decided at compile time)", used.text, t.space, used.v / cap.v,
                                             cap.text));
    b.Advice("shard over more cores (a larger mesh / more model parallelism), a smaller per-core batch, or "
             "jax.checkpoint to rematerialize activations");
    return;
  }
  b.Cause(OomCause::kUnknown, "inconsistent: the usage printed does not exceed the capacity");
}

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
  b.Cause(OomCause::kUnknown,
          fmt::format("the message gives only the tensor ({}), not the {} pool's state: the BFC dump TensorFlow "
                      "logs just before this error (\"Allocator ({}) ran out of memory trying to allocate …\") "
                      "tells capacity from fragmentation: give fragscope the whole log",
                      m.request ? Fmt(static_cast<double>(m.request->bytes)) : "size unknown",
                      m.allocator.empty() ? "allocator's" : m.allocator,
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

}  // namespace

std::uint64_t PytorchSegmentSize(std::uint64_t request) {
  if (request <= kMiB) return 2 * kMiB;
  if (request < 10 * kMiB) return 20 * kMiB;
  const std::uint64_t round = 2 * kMiB;
  return request > traces::kMaxBytes - round ? traces::kMaxBytes : (request + round - 1) / round * round;
}

MessageDiagnosis DiagnoseMessage(const OomMessage& message) {
  MessageDiagnosis d;
  switch (message.kind) {
    case OomMessageKind::kPytorchCaching: DiagnosePytorchCaching(message, d); break;
    case OomMessageKind::kPytorchAsync: DiagnoseAsync(message, d); break;
    case OomMessageKind::kPytorchMps: DiagnoseMps(message, d); break;
    case OomMessageKind::kXlaRuntime:
    case OomMessageKind::kXlaRequest: DiagnoseXlaRuntime(message, d); break;
    case OomMessageKind::kXlaTpuCompile: DiagnoseTpu(message, d); break;
    case OomMessageKind::kTfTensor: DiagnoseTfTensor(message, d); break;
    case OomMessageKind::kTfDeviceAlloc:
    case OomMessageKind::kTfHostAlloc: DiagnoseTfAlloc(message, d); break;
    default: DiagnoseRaw(message, d); break;
  }
  if (!message.problems.empty()) {
    // A number fragscope cannot represent: nothing computed from it can be trusted.
    d.cause = traces::OomCause::kUnknown;
    d.explanation = "the message gives a number fragscope cannot take (" + message.problems.front() +
                    "): " + (d.explanation.empty() ? "nothing computed" : "the rest is read, the cause left open");
    d.notes.insert(d.notes.end(), message.problems.begin(), message.problems.end());
  }
  return d;
}

}  // namespace fragscope::analysis
