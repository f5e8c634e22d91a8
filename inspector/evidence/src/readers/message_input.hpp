// The evidence of the "message" kind (out-of-memory error messages: numbers, no events), for the
// OOM message reader and for the TensorFlow reader, which hands a log over to it when its dump kept
// no byte count but XLA's memory statistics in the same log do (docs/importers.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fragscope/evidence/evidence_input.hpp"
#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/oom_message.hpp"

namespace fragscope::evidence::readers {

// `messages` found in `source`, with `warnings` before the messages' own problems, and TensorFlow's
// "not a failure" warnings (`messages` or `not_failures` not empty).
std::unique_ptr<EvidenceInput> MessagesInput(const Source& source, std::vector<traces::OomMessage> messages,
                                             std::vector<std::string> warnings,
                                             std::vector<traces::TfNotAFailure> not_failures = {});

}  // namespace fragscope::evidence::readers
