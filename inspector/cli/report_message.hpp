// `fragscope report` of out-of-memory error messages (evidence of the "message" kind): each
// message's numbers, arithmetic, cause and advice (analysis::DiagnoseMessage), for people or as
// JSON (docs/cli.md, "report").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fragscope/analysis/message_diagnosis.hpp"
#include "fragscope/evidence/evidence_input.hpp"

namespace fragscope::cli {

// Prints the report of `input`'s messages and returns the exit code (kOom: each message is an OOM;
// kOk when the input holds only TensorFlow's "not a failure" warnings: no OOM at all).
// `device` selects the messages of one device (as the message numbers it: "GPU 7" is 7).
int RunMessageReport(const std::string& trace, const evidence::EvidenceInput& input, bool json,
                     std::optional<std::uint32_t> device);

// The device number a message names ("GPU 7", "cuda:1", "device ordinal 0", "GPU:0"); 0 when none.
std::uint32_t MessageDeviceIndex(const traces::OomMessage& message);

// One message's explanation for people: where it was found, its numbers, arithmetic, cause, notes
// and advice, headed "message INDEX at line N".
void PrintMessageText(std::size_t index, const traces::OomMessage& message, const analysis::MessageDiagnosis& diagnosis);

// One message's OOM entry of the JSON report.
nlohmann::json MessageOomJson(const traces::OomMessage& message, const analysis::MessageDiagnosis& diagnosis);

}  // namespace fragscope::cli
