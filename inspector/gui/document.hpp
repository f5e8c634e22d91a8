// What the panels share: the read-only model of the open trace (Document), the cursor and
// selection the panels talk through (Selection), the memory state at the cursor (CursorState), and
// the background jobs that load a trace or replay it (Job), so the UI thread never waits.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fragscope/analysis/diagnosis.hpp"
#include "fragscope/analysis/message_diagnosis.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "fragscope/analysis/view_model.hpp"

namespace fragscope::gui {

// One loaded trace. Read-only once built; every panel reads it.
struct Document {
  std::string path;
  std::string format;
  // What the one read of the evidence kept (analysis/diagnosis.hpp): the model below is its model.
  // Null for a document that a replay made (the compare view's sides).
  std::shared_ptr<const analysis::AnalysisContext> context;
  std::shared_ptr<const analysis::TimelineModel> model;
  std::vector<std::vector<analysis::OomDiagnosis>> ooms;  // per device, same order as devices()
  // An error message (evidence of the message kind): each message found and its diagnosis, the
  // same as `fragscope report` gives. Empty for histories and states.
  struct Message {
    traces::OomMessage message;
    analysis::MessageDiagnosis diagnosis;
  };
  std::vector<Message> messages;
  // What the evidence is (DESIGN.md, "Evidence kinds"): a state is one moment and is drawn as one,
  // with its findings, never as a timeline of the events it was laid out as.
  traces::EvidenceKind kind = traces::EvidenceKind::kHistory;
  std::vector<analysis::StateFindings> states;  // a state's moments, per device, in order
  analysis::CursorIndex cursor_index;
  std::vector<std::string> warnings;
  // Call stacks (PyTorch snapshots): per event index 0 = none, else index + 1 into `stacks`.
  std::vector<std::string> stacks;
  std::vector<std::uint32_t> event_stacks;
  const std::string* StackOf(std::uint64_t event_index) const;
  double load_seconds = 0;
  // Smallest limit at which the trace's own policy runs it (computed after load, for OOM traces).
  std::optional<std::uint64_t> min_limit;
  std::string min_limit_error;
  const std::vector<analysis::OomDiagnosis>& OomsOf(std::uint32_t device) const;
  // Evidence that records allocations but no reserved memory (a torch.profiler trace without its
  // totals, an RMM log): reserved, overhead, holes and fragmentation are unknown there, never 0
  // (the report's "-").
  bool ReservedUnknown(std::uint32_t device) const {
    const analysis::DeviceMetrics m = model->Metrics(device);
    return m.peak_reserved == 0 && m.peak_load > 0;
  }
  // A state's moment that the cursor shows on `device`: the device's first moment at or after the
  // cursor, else its last; nullptr for a history, a message, or a device with no moment.
  const analysis::StateFindings* MomentAt(std::uint32_t device, std::uint64_t cursor) const;
  // What the evidence tells of the free memory inside regions on `device` at `cursor`, so that the
  // panels that draw holes never draw an unknown as free (or as "no hole").
  enum class FreeMemory {
    kKnown,      // the regions' holes are free memory
    kNoRegions,  // allocations without regions (ReservedUnknown): free memory unknown
    kUnlisted,   // a state whose listing is cut: its holes are ranges left out of the dump
    kMessage,    // an error message: numbers, no layout (the OOM panel has them)
  };
  FreeMemory FreeMemoryAt(std::uint32_t device, std::uint64_t cursor) const;
  // The live allocations' requested sizes are unknown (a TensorFlow dump that prints chunk sizes
  // only): LOAD and each requested size are "-", never the chunk sizes they were laid out with.
  bool RequestedUnknown(std::uint32_t device, std::uint64_t cursor) const {
    const analysis::StateFindings* moment = MomentAt(device, cursor);
    return moment != nullptr && !moment->requested_known;
  }
};

// Reads a trace of any format (by content) into a Document; `progress` gets (done, total).
// Throws on a bad file (traces::TraceError and friends).
std::unique_ptr<Document> LoadDocument(const std::string& path,
                                       const std::function<void(std::uint64_t, std::uint64_t)>& progress);

enum class ColourMode : int { kState = 0, kTag = 1, kAge = 2 };

// The cursor and the selection; panels change it, the app keeps the view consistent.
struct Selection {
  std::uint32_t device = 0;
  std::uint64_t cursor = 0;            // event index
  analysis::ViewRange view{0, 0};      // timeline range (events or ns, see time_axis); empty: all
  bool time_axis = false;
  ColourMode colour = ColourMode::kState;
  std::optional<std::uint64_t> selected_address;  // a chunk picked on the map or the table
  bool follow_cursor = false;          // set when the cursor moved by key: the timeline keeps it in view
};

// The memory state of the selected device at the cursor, computed once per cursor move.
class CursorState {
 public:
  const analysis::MemoryState& Get(const Document& document, std::uint32_t device, std::uint64_t cursor);
  std::uint64_t version() const { return version_; }  // changes when the state does

 private:
  analysis::MemoryState state_;
  const Document* document_ = nullptr;
  std::uint32_t device_ = 0xffffffffu;
  std::uint64_t cursor_ = ~std::uint64_t{0};
  std::uint64_t version_ = 0;
};

// A piece of work on its own thread with a progress fraction and an error message; the UI polls.
class Job {
 public:
  Job() = default;
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  // Runs `work` on a new thread (after the previous one finished). `work` reports progress through
  // the setter it gets and throws to fail.
  void Start(std::string label, std::function<void(Job&)> work);
  bool running() const { return running_.load(); }
  bool finished() const { return started_ && !running_.load(); }
  void SetProgress(std::uint64_t done, std::uint64_t total);
  float progress() const { return progress_.load(); }
  const std::string& label() const { return label_; }
  std::string error() const;
  void Wait();

 private:
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<float> progress_{0};
  bool started_ = false;
  std::string label_;
  mutable std::mutex mutex_;
  std::string error_;
};

}  // namespace fragscope::gui
