// Opens evidence of any format fragscope reads — found from the content by the registered readers
// (fragscope/evidence/readers.hpp), not from the extension — and hands out its events block by
// block, every block through the same limits and size checks whichever reader produced it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_header.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::evidence {

// The same types as analysis::Progress and analysis::BlockSource (std::function of the same
// signatures): the evidence layer hands blocks to the analysis without depending on it.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;
using BlockSource = std::function<bool(std::vector<traces::Event>*)>;

// What the command is reading or working on, for messages about failures that happen anywhere
// (out of host memory, an internal limit): the file and what it described so far.
struct InputActivity {
  std::string path;
  std::string format;             // empty until the format is known
  std::uint64_t file_bytes = 0;
  std::uint64_t events = 0;       // events read so far
  std::uint64_t devices = 0;      // distinct devices among them
  bool reading = true;            // false once every block was read (the work goes on with them)
  // "1000000 events on 3 devices" / "a PyTorch memory snapshot of 4096 bytes"
  std::string Describe() const;
};

class EvidenceInput {
 public:
  // Opens evidence of any registered format from its content: the readers of Readers() are asked
  // in order, the first whose sniff accepts the first bytes opens it. `path` "-" is standard
  // input; standard input, pipes and other streams (/dev/stdin) are read whole into memory once,
  // and opening the same name again reads that copy (commands read a trace more than once).
  // `limits` caps the events and devices the input may describe (checked here on every block;
  // readers of formats read whole check what the file claims before they expand it). Throws
  // traces::TraceError naming the file (missing, a directory, unreadable, empty, unknown format —
  // the message lists every registered reader —, over a limit).
  static std::unique_ptr<EvidenceInput> Open(const std::string& path);
  static std::unique_ptr<EvidenceInput> Open(const std::string& path, const traces::ReadLimits& limits);
  // The limits Open(path) applies: a command's --max-events and --max-devices.
  static void SetDefaultLimits(const traces::ReadLimits& limits);
  static traces::ReadLimits DefaultLimits();
  // The input most recently opened and what it described so far; nullopt before any.
  static std::optional<InputActivity> CurrentActivity();
  virtual ~EvidenceInput() = default;

  virtual const traces::TraceHeader& header() const = 0;
  // Tag names by id - 1, of the blocks read so far (all of them once NextBlock returned false).
  virtual const std::vector<std::string>& tags() const = 0;
  // The next block of events; false at the end. Throws traces::TraceError when the input passes
  // the limits it was opened with (events, devices) or an event's sizes cannot be real.
  bool NextBlock(std::vector<traces::Event>* events);
  virtual const std::vector<std::string>& warnings() const = 0;
  virtual std::uint64_t bytes_total() const = 0;
  virtual std::uint64_t bytes_done() const = 0;
  // Call stacks where the format has them (PyTorch snapshots): each "file:line:function" per line,
  // innermost first; per event index, 0 = none, else index + 1 into stacks(). Empty otherwise.
  virtual const std::vector<std::string>& stacks() const { return kNoStacks; }
  virtual const std::vector<std::uint32_t>& event_stacks() const { return kNoEventStacks; }
  // The out-of-memory error messages the input holds (evidence of the "message" kind, which has no
  // events, or a state read from a log that also holds them: a PyTorch memory summary); empty for
  // every other reader.
  virtual const std::vector<traces::OomMessage>& messages() const {
    static const std::vector<traces::OomMessage> kNone;
    return kNone;
  }
  // TensorFlow's "ran out of memory … this is not a failure" warnings beside them (message evidence
  // only): no error. Message evidence may hold these alone: then it records no failure at all.
  virtual const std::vector<traces::TfNotAFailure>& not_failures() const {
    static const std::vector<traces::TfNotAFailure> kNone;
    return kNone;
  }

  // The name in messages: the path, or "<stdin>".
  const std::string& path() const { return path_; }
  // The name of the reader that opened it: "fragscope trace", "JSON Lines", ...
  const std::string& format() const { return format_; }

  // Called with each block on the thread that read it, where tags() may be read.
  using BlockObserver = std::function<void(const std::vector<traces::Event>&)>;
  // NextBlock as a BlockSource that reads ahead on a thread of its own (traces::PrefetchedBlocks),
  // so that decoding overlaps with what the caller does with the events. `progress` and
  // `observer` run on that thread. tags(), warnings(), stacks() and the input itself belong to
  // that thread until the source has returned false: read them after that, or in `observer`.
  // The source must not outlive this input.
  BlockSource Blocks(const Progress& progress = {}, const BlockObserver& observer = {});
  // The total event count a Blocks source will likely hand out, from the events and bytes it has
  // read so far (exact once it has read everything; 0 before its first block). Safe to call on any
  // thread while that source reads: what lets the model index each block as it arrives
  // (analysis::TimelineOptions::expected_events).
  std::uint64_t ExpectedEvents() const;

 protected:
  // The reader's own blocks; NextBlock checks them.
  virtual bool ReadBlock(std::vector<traces::Event>* events) = 0;

  static const std::vector<std::string> kNoStacks;
  static const std::vector<std::uint32_t> kNoEventStacks;

 private:
  // Set by Open from the source and the reader, whichever reader opened it.
  std::string path_;
  std::string format_;
  traces::ReadLimits limits_;

  std::uint64_t events_ = 0;
  // Written by the Blocks thread after each block, for ExpectedEvents on another.
  std::atomic<std::uint64_t> seen_events_{0};
  std::atomic<std::uint64_t> seen_bytes_{0};
  std::atomic<std::uint64_t> seen_total_{0};
  std::unordered_set<std::uint32_t> devices_;
  std::uint32_t last_device_ = 0;
  bool any_device_ = false;
};

// An input over a whole trace already in memory (the formats read whole: snapshots, JSON Lines,
// logs), handed out in blocks of 65,536 events; what a reader's `open` returns when it builds a
// traces::Trace. `messages`: out-of-memory error messages found beside the trace in the same text
// (a PyTorch memory summary printed after the error), handed out by messages().
std::unique_ptr<EvidenceInput> InputFromTrace(traces::Trace trace, std::vector<traces::OomMessage> messages = {});

}  // namespace fragscope::evidence
