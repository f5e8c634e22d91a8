// What a trace says about the run that produced it: who wrote it, under which allocator
// configuration, on which devices. Stored once at the start of every trace file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fragscope::traces {

struct DeviceDescription {
  std::uint32_t index = 0;       // the `device` field of events
  std::string name;              // "simulated device", "NVIDIA H200", "host (23.47 GiB RAM)"
  std::string backing;           // "sim", "host", "cuda", "vmm", "async", or the source ("pytorch")
  std::uint64_t capacity = 0;    // bytes; 0 when unknown
  std::uint64_t limit = 0;       // bytes; 0 when unknown
  bool operator==(const DeviceDescription&) const = default;  // (TraceHeader's == needs it)
};

// Host (CPU) memory that another framework's allocator handed out, in imported evidence: the CPU
// device of a torch.profiler trace (backing "pytorch host memory"), TensorFlow's pinned host pool
// ("tensorflow pinned host memory"). Its sequence is not a GPU allocator's, so replays of GPU
// policies leave it out, and its OOMs are of host RAM. (fragscope's own `host` backing is not this:
// that is our allocator, and replaying it is meaningful.)
bool IsForeignHostMemory(const DeviceDescription& device);

// What a piece of evidence is (DESIGN.md, "Evidence kinds"): events in time, one or more moments,
// or only the numbers of an error message. Decides which analyses mean anything: overhead,
// min-limit and replay need time, so a state or a message gets none of them.
enum class EvidenceKind : std::uint8_t {
  kHistory = 0,  // events in time: fragscope traces, snapshots with trace events, RMM logs
  kState = 1,    // moments: regions and chunks as they were (a snapshot without history, a TF dump)
  kMessage = 2,  // an out-of-memory error message: numbers, no layout
};
// "history", "state", "message".
std::string_view ToString(EvidenceKind kind);
// The kind named by `text` ("history", "state", "message"); nullopt for anything else.
std::optional<EvidenceKind> ParseEvidenceKind(std::string_view text);

// What was live on a device before the evidence started recording (PyTorch snapshots keep the
// blocks alive when recording began): the source reserved for them too, so a like-for-like
// comparison of the recorded window takes them out of both sides (docs/importers.md).
struct BlocksBeforeRecording {
  std::uint32_t device = 0;
  std::uint64_t blocks = 0;     // the allocations at event 0 that lay them out
  std::uint64_t bytes = 0;      // their rounded sizes
  std::uint64_t requested = 0;  // their requested sizes
  // False where one of those allocations stands for several blocks of unknown number (a
  // torch.profiler trace's "Total Allocated" gives bytes, not blocks): no block count to tell.
  bool blocks_known = true;
  bool operator==(const BlocksBeforeRecording&) const = default;
};

// The evidence's own numbers about one device at one moment of a state (a snapshot without
// history, a TensorFlow dump), each present only where the evidence gives it. They are the truth
// where the listed regions and chunks are incomplete (a dump its author cut).
struct StateSummary {
  std::uint32_t device = 0;
  std::string moment;                       // "at the OOM on line 412", "when the snapshot was taken"
  // The layout of the moment is what the trace's events built up to and including the event with
  // this sequence number (a reader lays a state out as events: regions, then live chunks).
  std::uint64_t at_seq = 0;
  std::optional<std::uint64_t> in_use;      // bytes in live chunks (rounded)
  std::optional<std::uint64_t> requested;   // bytes the live chunks' owners asked for
  std::optional<std::uint64_t> reserved;    // bytes the allocator held from the device
  std::optional<std::uint64_t> limit;       // the most it could hold
  std::optional<std::uint64_t> max_in_use;  // the peak in use the evidence remembers
  std::optional<std::uint64_t> largest_free;  // where the layout is incomplete: at least this
  // Lower bounds where the evidence shows only part of a number. in_use_at_least: in_use is at
  // least that (a pasted "Summary of in-use chunks by size" that may be cut). free_at_least: at
  // least this many bytes inside the regions are free, counting the free chunks the evidence's
  // summary lines show beyond its listed layout (TensorFlow's bin lines and Chunk State table), or
  // those a cut list shows where no reserved count is printed (so that in use + free_at_least is
  // the one lower bound of reserved); absent when only a whole layout gives free bytes.
  bool in_use_at_least = false;
  std::optional<std::uint64_t> free_at_least;
  bool layout_complete = true;              // the listed regions and chunks are all there were
  // False where the evidence gives no requested size per chunk (most TensorFlow versions print
  // only chunk sizes): the layout's allocations then carry their chunk sizes as requested, and
  // what their owners asked for (LOAD) is unknown, not the chunk sizes.
  bool requested_known = true;
  std::string missing;                      // what the evidence lacks, in words; empty if nothing
  // The allocator's own counters beyond those, where it prints them (PyTorch's memory_summary()):
  // the most it ever reserved; the free bytes inside segments that also hold live blocks
  // ("Non-releasable memory": fragmentation in PyTorch's terms, which empty_cache() cannot return);
  // the out-of-memory errors it raised and the times it freed its cache to retry the device's
  // malloc, counted since the process started (or its statistics were reset).
  std::optional<std::uint64_t> max_reserved, non_releasable, oom_count, alloc_retries;
  // The same numbers per pool (PyTorch: the small pool's blocks of at most 1 MiB, the large pool's
  // others), where the evidence splits them.
  struct Pool {
    std::optional<std::uint64_t> in_use, reserved, non_releasable;
    bool operator==(const Pool&) const = default;
  };
  std::optional<Pool> large_pool, small_pool;
  // Sizes printed rounded down to a unit (PyTorch's "14324 MiB"): each true size lies less than
  // this many bytes above the number given, the largest unit of the sizes above; 0 when exact.
  std::uint64_t size_margin = 0;
  std::uint64_t line = 0;  // the 1-based line of a text log where the moment is printed; 0 where none
  bool operator==(const StateSummary&) const = default;
};

// Facts a reader found about the allocator that produced the evidence, typed so that no later
// step matches metadata keys by prefix. Stored in the trace header (key "source", .fst 1.1 and
// JSON Lines) so that a converted trace keeps them.
struct SourceFacts {
  // The source allocator in words ("PyTorch CUDA caching allocator", "TensorFlow BFC allocator");
  // empty for fragscope's own traces.
  std::string allocator;
  // Its own settings, as it wrote them (PyTorch's allocator_settings: "expandable_segments" →
  // "True"), in order.
  std::vector<std::pair<std::string, std::string>> settings;
  // The granularity it rounds requests to, in bytes; 0 when unknown.
  std::uint64_t rounding = 0;
  std::vector<BlocksBeforeRecording> before_recording;  // at most one per device
  // The first this many events of a history only lay out what was live before recording started
  // (a PyTorch snapshot's segments and blocks, all at the first timestamp): not a history of their own.
  std::uint64_t reconstructed_events = 0;
  std::vector<StateSummary> states;                     // one per device and moment, in order
  // Devices whose reserved memory the evidence gives as a running total only, not where it lies
  // (torch.profiler's "Total Reserved"): the reader lays it out as regions of invented addresses
  // apart from the allocations, so reserved, overhead and utilization hold, but the free holes
  // (fragmentation) are unknown.
  std::vector<std::uint32_t> reserved_without_layout;

  bool empty() const {
    return allocator.empty() && settings.empty() && rounding == 0 && before_recording.empty() && states.empty() &&
           reconstructed_events == 0 && reserved_without_layout.empty();
  }
  bool ReservedWithoutLayout(std::uint32_t device) const {
    for (std::uint32_t d : reserved_without_layout) if (d == device) return true;
    return false;
  }
  const BlocksBeforeRecording* BeforeRecording(std::uint32_t device) const {
    for (const auto& b : before_recording) if (b.device == device) return &b;
    return nullptr;
  }
  // The value of setting `key`, or nullptr.
  const std::string* Setting(std::string_view key) const {
    for (const auto& [k, v] : settings) if (k == key) return &v;
    return nullptr;
  }
  bool operator==(const SourceFacts&) const = default;
};

struct TraceHeader {
  std::string producer;          // "fragscope-train 0.1.0", "fragscope synth 0.1.0", ...
  std::string source_format;     // "fragscope" for native traces; importers name theirs
  std::string alloc_conf;        // canonical allocator configuration (AllocConf::ToString)
  std::vector<DeviceDescription> devices;
  std::uint64_t created_unix_ns = 0;
  std::vector<std::pair<std::string, std::string>> metadata;  // free-form, in order: for people
  EvidenceKind kind = EvidenceKind::kHistory;
  SourceFacts source;            // what the reader found out about the source allocator

  const DeviceDescription* Device(std::uint32_t index) const {
    for (const auto& device : devices) if (device.index == index) return &device;
    return nullptr;
  }
  // The indices of the devices that hold another framework's host memory (IsForeignHostMemory):
  // replays of GPU policies leave them out, in `fragscope replay` / `compare` / `min-limit` and in
  // the inspector's compare alike.
  std::vector<std::uint32_t> ForeignHostDevices() const;
  bool operator==(const TraceHeader&) const = default;
};

}  // namespace fragscope::traces
