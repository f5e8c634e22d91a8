// Out-of-memory error messages (PyTorch, JAX / XLA, TensorFlow, CUDA libraries) found anywhere in
// log text or a paste, read whole by traces::FindOomMessages (docs/importers.md, "Out-of-memory
// error messages"). Evidence of the "message" kind: numbers, no events; EvidenceInput::messages()
// hands them out. Asked after every other reader: a TensorFlow BFC dump log also holds OOM lines
// and is the TensorFlow reader's.
#include <fmt/format.h>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "message_input.hpp"

namespace fragscope::evidence::readers {
namespace {

// More messages than anyone reads: the rest are counted in a warning.
constexpr std::size_t kMaxMessages = 1000;

class MessageInput final : public EvidenceInput {
 public:
  MessageInput(std::vector<traces::OomMessage> messages, std::vector<traces::TfNotAFailure> not_failures,
               std::vector<std::string> warnings, std::uint64_t bytes)
      : messages_(std::move(messages)), not_failures_(std::move(not_failures)), warnings_(std::move(warnings)),
        bytes_(bytes) {
    header_.source_format = "oom-message";
    header_.kind = traces::EvidenceKind::kMessage;
    header_.metadata.emplace_back("evidence", "message");
  }
  const traces::TraceHeader& header() const override { return header_; }
  const std::vector<std::string>& tags() const override { return tags_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }
  std::uint64_t bytes_total() const override { return bytes_; }
  std::uint64_t bytes_done() const override { return bytes_; }
  const std::vector<traces::OomMessage>& messages() const override { return messages_; }
  const std::vector<traces::TfNotAFailure>& not_failures() const override { return not_failures_; }

 protected:
  bool ReadBlock(std::vector<traces::Event>*) override { return false; }  // a message has no events

 private:
  traces::TraceHeader header_;
  std::vector<std::string> tags_;
  std::vector<traces::OomMessage> messages_;
  std::vector<traces::TfNotAFailure> not_failures_;
  std::vector<std::string> warnings_;
  std::uint64_t bytes_ = 0;
};

}  // namespace

Reader OomMessageReader() {
  return {
      .name = "OOM error message",
      .description = "out-of-memory error message (PyTorch, JAX / XLA, TensorFlow, PaddlePaddle, ONNX Runtime, CUDA, …; anywhere in log text)",
      // TensorFlow's "ran out of memory … not a failure" warnings alone are read too: to say that
      // they record no failure, not that the file is of no known format.
      .sniff = [](std::string_view head) {
        return traces::LooksLikeOomMessage(head) || traces::HoldsTfNotAFailure(head);
      },
      .open = [](const Source& source, const traces::ReadLimits&) -> std::unique_ptr<EvidenceInput> {
        traces::OomMessageScan scan = traces::ScanOomMessages(source.bytes());
        if (scan.messages.empty() && scan.not_failures.empty()) {
          throw traces::TraceError(source.name(), 0, "no out-of-memory error message found");
        }
        return MessagesInput(source, std::move(scan.messages), {}, std::move(scan.not_failures));
      },
  };
}

std::unique_ptr<EvidenceInput> MessagesInput(const Source& source, std::vector<traces::OomMessage> messages,
                                             std::vector<std::string> warnings,
                                             std::vector<traces::TfNotAFailure> not_failures) {
  for (const traces::OomMessage& m : messages) {
    for (const std::string& problem : m.problems) warnings.push_back(fmt::format("{}: {}", source.name(), problem));
  }
  if (messages.size() > kMaxMessages) {
    warnings.push_back(fmt::format("{}: {} out-of-memory messages; the first {} are reported", source.name(),
                                   messages.size(), kMaxMessages));
    messages.resize(kMaxMessages);
  }
  return std::make_unique<MessageInput>(std::move(messages), std::move(not_failures), std::move(warnings),
                                        source.bytes().size());
}

}  // namespace fragscope::evidence::readers
