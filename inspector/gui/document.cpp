#include "document.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/evidence/evidence_input.hpp"

namespace fragscope::gui {

namespace {
const std::vector<analysis::OomDiagnosis> kNoOoms;
}  // namespace

const std::vector<analysis::OomDiagnosis>& Document::OomsOf(std::uint32_t device) const {
  const auto& devices = model->devices();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] == device && i < ooms.size()) return ooms[i];
  }
  return kNoOoms;
}

const analysis::StateFindings* Document::MomentAt(std::uint32_t device, std::uint64_t cursor) const {
  if (kind != traces::EvidenceKind::kState) return nullptr;
  const analysis::StateFindings* last = nullptr;
  for (const analysis::StateFindings& s : states) {
    if (s.device != device) continue;
    if (s.event_index >= cursor) return &s;
    last = &s;
  }
  return last;
}

Document::FreeMemory Document::FreeMemoryAt(std::uint32_t device, std::uint64_t cursor) const {
  if (kind == traces::EvidenceKind::kMessage || !messages.empty()) return FreeMemory::kMessage;
  if (model != nullptr && ReservedUnknown(device)) return FreeMemory::kNoRegions;
  const analysis::StateFindings* moment = MomentAt(device, cursor);
  if (moment != nullptr && !moment->layout_complete) return FreeMemory::kUnlisted;
  return FreeMemory::kKnown;
}

const std::string* Document::StackOf(std::uint64_t event_index) const {
  if (event_index >= event_stacks.size()) return nullptr;
  const std::uint32_t stack = event_stacks[event_index];
  return stack == 0 || stack > stacks.size() ? nullptr : &stacks[stack - 1];
}

std::unique_ptr<Document> LoadDocument(const std::string& path,
                                       const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto document = std::make_unique<Document>();
  auto input = evidence::EvidenceInput::Open(path);
  document->path = path;
  document->format = input->format();
  analysis::ContextOptions options;
  options.tags = &input->tags();
  options.source_warnings = &input->warnings();
  // The first frame waits for the model, not for the allocation sequence (a third of the memory
  // and about a tenth of the read on 10 M events); the minimal-limit job reads it again when a
  // trace has OOMs. Standard input cannot be read twice: there, it is kept as the read goes.
  options.build_sequence = path == "-";
  // The model indexes each block while the next is read, so the bytes read are the whole bar.
  options.expected_events = [&input] { return input->ExpectedEvents(); };
  options.index_progress = [&](std::uint64_t done, std::uint64_t total) {
    if (progress && total > 0) progress(done, total);
  };
  std::shared_ptr<const analysis::AnalysisContext> context = analysis::AnalysisContext::Read(
      input->header(),
      [&](const analysis::BlockObserver& observer) {
        return input->Blocks(
            [&](std::uint64_t done, std::uint64_t total) {
              // The last block's bytes are read before it is indexed: the bar ends with the index.
              if (progress && total > 0) progress(std::min(done, total - 1), total);
            },
            observer);
      },
      options);
  document->context = context;
  document->model = context->shared_model();
  for (const traces::OomMessage& message : input->messages()) {
    document->messages.push_back({message, analysis::DiagnoseMessage(message)});
  }
  document->stacks = input->stacks();
  document->event_stacks = input->event_stacks();
  // The OOMs as recorded, with the advice of the policy that ran where no replay can check it
  // (virtual devices); the App's background job replaces them with Diagnose's checked ones.
  analysis::DiagnosisOptions quick;
  quick.check_advice = false;
  quick.min_limit = false;
  quick.fragmentation = false;
  std::vector<std::uint64_t> oom_events;
  analysis::Diagnosis recorded = analysis::Diagnose(*context, quick);
  for (analysis::DeviceDiagnosis& device : recorded.devices) {
    for (const auto& oom : device.ooms) oom_events.push_back(oom.event_index);
    document->ooms.push_back(std::move(device.ooms));
  }
  document->kind = recorded.kind;
  document->states = std::move(recorded.states);
  document->cursor_index = analysis::CursorIndex::FromModel(*document->model, oom_events);
  document->warnings = document->model->warnings();
  if (!input->not_failures().empty()) {
    document->warnings.push_back(fmt::format(
        "{} TensorFlow warning{} \"ran out of memory trying to allocate … this is not a failure\" (first at line {}): "
        "no error, the caller went on with less memory", input->not_failures().size(),
        input->not_failures().size() == 1 ? "" : "s", input->not_failures().front().line));
  }
  document->load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return document;
}

const analysis::MemoryState& CursorState::Get(const Document& document, std::uint32_t device,
                                              std::uint64_t cursor) {
  if (&document != document_ || device != device_ || cursor != cursor_) {
    document_ = &document;
    device_ = device;
    cursor_ = cursor;
    state_ = document.model->event_count() == 0 ? analysis::MemoryState{}
                                                 : document.model->StateAt(device, cursor);
    ++version_;
  }
  return state_;
}

Job::~Job() { Wait(); }

void Job::Wait() {
  if (thread_.joinable()) thread_.join();
}

void Job::Start(std::string label, std::function<void(Job&)> work) {
  Wait();
  label_ = std::move(label);
  {
    std::lock_guard lock(mutex_);
    error_.clear();
  }
  progress_ = 0;
  started_ = true;
  running_ = true;
  thread_ = std::thread([this, work = std::move(work)] {
    try {
      work(*this);
    } catch (const std::exception& error) {
      std::lock_guard lock(mutex_);
      error_ = error.what();
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = "unknown error";
    }
    running_ = false;
  });
}

void Job::SetProgress(std::uint64_t done, std::uint64_t total) {
  if (total > 0) progress_ = static_cast<float>(static_cast<double>(done) / static_cast<double>(total));
}

std::string Job::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

}  // namespace fragscope::gui
