// Private to the diagnosis of out-of-memory messages: what message_diagnosis.cpp (the dispatch by
// wording family) shares with the rules of each framework (message_diagnosis_pytorch.cpp, _xla.cpp,
// _tensorflow.cpp, _cuda.cpp, _paddle.cpp, _libraries.cpp) and the advice they give
// (message_diagnosis_advice.cpp).
//
// A margin smaller than the rounding of the coarsest printed figure decides nothing: printed values
// carry ±half a unit of their last digit, so every comparison goes through Val.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "fragscope/analysis/message_diagnosis.hpp"
#include "fragscope/traces/byte_math.hpp"

namespace fragscope::analysis::message_detail {

using traces::OomCause;
using traces::OomMessage;
using traces::OomMessageKind;
using traces::PrintedSize;

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
// More than any one accelerator holds (the largest today carry under 300 GB): a request above it
// is a shape or size bug, whatever device ran it.
inline constexpr std::uint64_t kLargerThanAnyDevice = 512 * kGiB;
// Memory outside the framework decides the cause when it is at least this share of the device and
// more than a CUDA context could be.
inline constexpr double kOutsideShare = 1.0 / 3.0;
inline constexpr std::uint64_t kOutsideFloor = 2 * kGiB;
// Worth a note below that.
inline constexpr double kOutsideNoteShare = 0.10;
inline constexpr std::uint64_t kOutsideNoteFloor = kGiB;
// An XLA program whose own buffers need less than this cannot fill a GPU by itself.
inline constexpr std::uint64_t kSmallProgram = kGiB;

// A value with its printing uncertainty.
struct Val {
  double v = 0;
  double tol = 0;
  std::string text;  // as printed, or "" for a derived value
};

inline Val Of(const PrintedSize& s) {
  return {static_cast<double>(s.bytes), static_cast<double>(s.tolerance), s.text};
}
inline Val Bytes(double v, double tol = 0) { return {v, tol, ""}; }
inline Val Add(const Val& a, const Val& b) { return {a.v + b.v, std::max(a.tol, b.tol), ""}; }
inline Val Sub(const Val& a, const Val& b) { return {a.v - b.v, std::max(a.tol, b.tol), ""}; }

// a > b by more than the rounding of either.
inline bool Greater(const Val& a, const Val& b) { return a.v - b.v > std::max(a.tol, b.tol); }
inline bool LessEq(const Val& a, const Val& b) { return b.v - a.v >= std::max(a.tol, b.tol) || (a.tol == 0 && b.tol == 0 && a.v <= b.v); }

inline std::string Fmt(double bytes) {
  if (bytes < 0) return "−" + traces::FormatBytes(static_cast<std::uint64_t>(std::llround(-bytes)));
  return traces::FormatBytes(static_cast<std::uint64_t>(std::llround(bytes)));
}
inline std::string Pct(double part, double whole) { return whole > 0 ? fmt::format("{:.0f} %", 100.0 * part / whole) : "?"; }

class Builder {
 public:
  explicit Builder(MessageDiagnosis& d) : d_(d) {}
  void Read(std::string symbol, std::string name, const std::optional<PrintedSize>& s) {
    if (s) d_.numbers.push_back({std::move(symbol), std::move(name), s->bytes, s->text});
  }
  // A derived number below 0 (figures that disagree: A > T on Windows) has no row: a 0 there would
  // contradict the arithmetic line that shows it negative.
  void Derived(std::string symbol, std::string name, double bytes) {
    if (bytes < 0) return;
    d_.numbers.push_back({std::move(symbol), std::move(name), static_cast<std::uint64_t>(std::llround(bytes)), ""});
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

inline std::optional<Val> Opt(const std::optional<PrintedSize>& s) {
  if (!s) return std::nullopt;
  return Of(*s);
}

// The device's own words and tools in explanations and advice: CUDA (nvidia-smi,
// CUDA_VISIBLE_DEVICES), HIP on ROCm (rocm-smi, HIP_VISIBLE_DEVICES), XPU on Level Zero (xpu-smi,
// ZE_AFFINITY_MASK) (message_diagnosis_advice.cpp).
struct DeviceTools {
  const char* runtime;  // "CUDA", "HIP", "Level Zero": whose context the process holds
  const char* smi;      // lists the processes on the device
  const char* visible;  // the variable that picks another device
};
DeviceTools ToolsOf(const OomMessage& m);

// Advice shared by the rules (message_diagnosis_advice.cpp).
std::string BatchEstimate(double have, double need);
void PytorchFragmentationAdvice(Builder& b, const OomMessage& m, const Val& U);
void OutsideAdvice(Builder& b, const OomMessage& m, double other_bytes, double in_process, bool listed_self,
                   std::uint64_t self_pid);
// ONNX Runtime's settings, for its arena's and its CUDA provider's failures.
void OrtAdvice(Builder& b, const OomMessage& m);
// A request above kLargerThanAnyDevice: request-too-large (a shape or size bug), with its line;
// false, and nothing said, below that.
bool RequestAboveAnyDevice(Builder& b, const Val& R);

// The rule of each wording family: fills `d` from `m`.
void DiagnosePytorchCaching(const OomMessage& m, MessageDiagnosis& d);
void DiagnosePytorchAsync(const OomMessage& m, MessageDiagnosis& d);
void DiagnosePytorchMps(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseXlaRuntime(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseXlaTpuCompile(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseTfTensor(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseTfAlloc(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseTfEigen(const OomMessage& m, MessageDiagnosis& d);
void DiagnosePaddleGpu(const OomMessage& m, MessageDiagnosis& d);
void DiagnosePaddleHost(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseTheano(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseOrtArena(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseDirectml(const OomMessage& m, MessageDiagnosis& d);
void DiagnoseCupy(const OomMessage& m, MessageDiagnosis& d);
// Errors of the CUDA runtime and its libraries: PyTorch's legacy THC, raw CUDA / HIP, cuBLAS, cuDNN,
// cuFFT, cuSOLVER, and libraries reporting CUDA's error in their own words.
void DiagnoseRaw(const OomMessage& m, MessageDiagnosis& d);

}  // namespace fragscope::analysis::message_detail
