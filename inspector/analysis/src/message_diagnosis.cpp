// The diagnosis of an out-of-memory message (message_diagnosis.hpp): the dispatch to the rule of its
// wording family (one file per framework, message_diagnosis_internal.hpp lists them), which fills the
// numbers, shows its arithmetic, decides the cause and gives advice in the framework's terms; and
// what no rule can trust, a number fragscope cannot represent.
#include "fragscope/analysis/message_diagnosis.hpp"

#include "fragscope/traces/pytorch_snapshot.hpp"

#include "message_diagnosis_internal.hpp"

namespace fragscope::analysis {

using namespace message_detail;

std::uint64_t PytorchSegmentSize(std::uint64_t request) { return traces::PytorchSegmentSize(request); }

MessageDiagnosis DiagnoseMessage(const OomMessage& message) {
  MessageDiagnosis d;
  switch (message.kind) {
    case OomMessageKind::kPytorchCaching: DiagnosePytorchCaching(message, d); break;
    case OomMessageKind::kPytorchAsync: DiagnosePytorchAsync(message, d); break;
    case OomMessageKind::kPytorchMps: DiagnosePytorchMps(message, d); break;
    case OomMessageKind::kXlaRuntime:
    case OomMessageKind::kXlaRequest: DiagnoseXlaRuntime(message, d); break;
    case OomMessageKind::kXlaTpuCompile: DiagnoseXlaTpuCompile(message, d); break;
    case OomMessageKind::kTfTensor: DiagnoseTfTensor(message, d); break;
    case OomMessageKind::kTfDeviceAlloc:
    case OomMessageKind::kTfHostAlloc: DiagnoseTfAlloc(message, d); break;
    case OomMessageKind::kTfEigen: DiagnoseTfEigen(message, d); break;
    case OomMessageKind::kPaddleGpu: DiagnosePaddleGpu(message, d); break;
    case OomMessageKind::kPaddleHost: DiagnosePaddleHost(message, d); break;
    case OomMessageKind::kTheano: DiagnoseTheano(message, d); break;
    case OomMessageKind::kOrtArena: DiagnoseOrtArena(message, d); break;
    case OomMessageKind::kDirectml: DiagnoseDirectml(message, d); break;
    case OomMessageKind::kCupy: DiagnoseCupy(message, d); break;
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
