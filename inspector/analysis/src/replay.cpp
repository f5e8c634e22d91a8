// Replay: an allocation sequence run through fresh allocators on simulated devices.
//
// The hot loop does one TryAllocate or Free per op and a few integer updates; it allocates nothing
// and never takes a second lock. Peaks come from the allocator's own counters at the end; what must
// be sampled at a moment (in use and the largest free chunk when reserved is at its peak) is read
// with Stats() only when reserved may have changed, which the backing tells us: every region
// reserve/release and page map/unmap goes through a thin wrapper that sets a flag.
#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/replay.hpp"

namespace fragscope::analysis {
namespace {

constexpr std::uint64_t kDefaultCapacity = 80 * GiB;
constexpr std::size_t kProgressOps = std::size_t{1} << 20;
constexpr std::size_t kMaxNearestHoles = 5;

// The replay's backing: forwards to the sim backing and raises `changed` whenever the bytes it
// holds change. Called under an allocator's lock, so it only sets a flag.
class WatchedBacking final : public Backing, public ExpandableBacking {
 public:
  explicit WatchedBacking(std::unique_ptr<Backing> inner)
      : inner_(std::move(inner)), inner_expandable_(inner_->expandable()) {}

  const BackingInfo& info() const override { return inner_->info(); }
  void* Reserve(std::uint64_t bytes, std::uint64_t stream) override {
    void* base = inner_->Reserve(bytes, stream);
    if (base != nullptr) changed = true;
    return base;
  }
  void Release(void* base, std::uint64_t bytes, std::uint64_t stream) override {
    inner_->Release(base, bytes, stream);
    changed = true;
  }
  std::uint64_t held() const override { return inner_->held(); }
  ExpandableBacking* expandable() override { return inner_expandable_ != nullptr ? this : nullptr; }

  std::uint64_t map_granularity() const override { return inner_expandable_->map_granularity(); }
  void* ReserveRange(std::uint64_t max_bytes) override {
    return inner_expandable_->ReserveRange(max_bytes);
  }
  bool Map(void* base, std::uint64_t offset, std::uint64_t bytes) override {
    const bool mapped = inner_expandable_->Map(base, offset, bytes);
    if (mapped) changed = true;
    return mapped;
  }
  void Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) override {
    inner_expandable_->Unmap(base, offset, bytes);
    changed = true;
  }
  void ReleaseRange(void* base, std::uint64_t max_bytes) override {
    inner_expandable_->ReleaseRange(base, max_bytes);
  }

  bool changed = false;

 private:
  std::unique_ptr<Backing> inner_;
  ExpandableBacking* inner_expandable_;
};

// Between an allocator and options.record: gives events the trace's device number, the original
// op's timestamp and one thread, so a replay's trace is deterministic; and, when asked, notes the
// sequence number of the op that caused each event (options.record_source_seq).
class ReplaySink final : public traces::EventSink {
 public:
  ReplaySink(traces::EventSink* target, std::uint32_t device, const std::uint64_t* now,
             const std::uint64_t* now_seq, std::vector<std::uint64_t>* source_seq)
      : target_(target), device_(device), now_(now), now_seq_(now_seq), source_seq_(source_seq) {}
  void Record(traces::Event& event) override {
    event.device = device_;
    event.time_ns = *now_;
    event.thread = 1;
    target_->Record(event);
    if (source_seq_ != nullptr) source_seq_->push_back(*now_seq_);
  }
  traces::TagId Intern(std::string_view text) override { return target_->Intern(text); }

 private:
  traces::EventSink* target_;
  std::uint32_t device_;
  const std::uint64_t* now_;
  const std::uint64_t* now_seq_;
  std::vector<std::uint64_t>* source_seq_;
};

struct LiveSlot {
  void* ptr = nullptr;
  std::uint64_t size = 0;
};

struct Lane {
  DeviceAllocator* allocator = nullptr;
  WatchedBacking* backing = nullptr;
  std::size_t result = 0;         // index in ReplayResult::devices
  std::uint64_t reserved = 0;     // as of the last Stats()
  std::uint64_t peak_reserved = 0;
  std::uint64_t best_in_use = 0;  // most in use seen while reserved was at its peak
  std::uint64_t in_use = 0;       // tracked here: sum of rounded sizes
  std::uint64_t waste = 0;        // in use - live requested
  std::uint64_t peak_waste = 0;
  double utilization = 1.0;
  double fragmentation = 0.0;
};

std::vector<Hole> NearestHoles(const AllocatorSnapshot& snapshot, std::uint64_t rounded) {
  std::vector<Hole> holes;
  for (const RegionView& region : snapshot.regions) {
    for (const ChunkView& chunk : region.chunks) {
      if (!chunk.in_use) holes.push_back(Hole{chunk.address, chunk.size});
    }
  }
  const auto distance = [rounded](const Hole& h) {
    return h.size > rounded ? h.size - rounded : rounded - h.size;
  };
  const std::size_t keep = std::min(kMaxNearestHoles, holes.size());
  std::partial_sort(holes.begin(), holes.begin() + static_cast<std::ptrdiff_t>(keep), holes.end(),
                    [&](const Hole& a, const Hole& b) {
                      const std::uint64_t da = distance(a), db = distance(b);
                      if (da != db) return da < db;
                      if (a.size != b.size) return a.size > b.size;
                      return a.address < b.address;
                    });
  holes.resize(keep);
  std::sort(holes.begin(), holes.end(), [](const Hole& a, const Hole& b) {
    return a.size != b.size ? a.size > b.size : a.address < b.address;
  });
  return holes;
}

std::uint64_t HeaderCapacity(const traces::TraceHeader& header, const std::uint32_t* device) {
  std::uint64_t capacity = 0;
  for (const auto& description : header.devices) {
    if (device == nullptr || description.index == *device) {
      capacity = std::max(capacity, description.capacity);
    }
  }
  return capacity;
}

class Replayer {
 public:
  Replayer(const AllocationSequence& sequence, const ReplayOptions& options)
      : sequence_(sequence), options_(options) {}

  ReplayResult Run() {
    const auto start = std::chrono::steady_clock::now();
    Setup();
    live_.assign(sequence_.allocations, LiveSlot{});
    if (options_.record != nullptr) {
      tag_map_.assign(sequence_.tags.size() + 1, traces::kNoTag);
      for (std::size_t i = 0; i < sequence_.tags.size(); ++i) {
        tag_map_[i + 1] = options_.record->Intern(sequence_.tags[i]);
      }
      for (std::size_t i = 0; i < lanes_.size(); ++i) {
        sinks_.push_back(std::make_unique<ReplaySink>(options_.record, result_.devices[i].metrics.device,
                                                      &now_, &now_seq_, options_.record_source_seq));
        lanes_[i].allocator->SetSink(sinks_.back().get());
      }
    }
    const std::vector<AllocationOp>& ops = sequence_.ops;
    const std::size_t total = ops.size();
    std::size_t done = 0;
    bool stopped = false;
    while (done < total && !stopped) {
      const std::size_t end = std::min(total, done + kProgressOps);
      stopped = !RunOps(done, end, &done);
      if (options_.progress) options_.progress(done, total);
    }
    if (options_.record != nullptr && !stopped) EmitMarkers(total);  // the markers after the last op
    result_.ops_replayed = done;
    result_.stopped_at_oom = stopped;
    Finish();
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(result_);
  }

 private:
  AllocConf ConfFor(const std::uint32_t* device) const {
    AllocConf conf = options_.conf;
    std::uint64_t capacity = HeaderCapacity(sequence_.header, device);
    if (conf.capacity) capacity = *conf.capacity;
    if (options_.capacity) capacity = *options_.capacity;
    conf.capacity = capacity != 0 ? capacity : kDefaultCapacity;
    conf.backing = BackingKind::kSim;
    return conf;
  }

  MemorySystem& AddSystem(const AllocConf& conf, WatchedBacking** watched) {
    auto backing = std::make_unique<WatchedBacking>(MakeBacking(conf));
    *watched = backing.get();
    systems_.push_back(MemorySystem::Create(conf, std::move(backing)));
    return *systems_.back();
  }

  void AddLane(DeviceAllocator& allocator, WatchedBacking* backing, std::uint32_t device) {
    Lane lane;
    lane.allocator = &allocator;
    lane.backing = backing;
    lane.result = result_.devices.size();
    DeviceReplay& out = result_.devices.emplace_back();
    out.metrics.device = device;
    const AllocatorStats stats = allocator.Stats();  // a preallocated region counts from the start
    lane.reserved = lane.peak_reserved = stats.reserved;
    lane.utilization = stats.utilization();
    lane.fragmentation = stats.external_fragmentation();
    lanes_.push_back(lane);
  }

 public:
  // Builds the simulated devices and the header of the replay's trace; replays nothing.
  void Setup() {
    const std::vector<std::uint32_t>& devices = sequence_.devices;
    if (options_.conf.backing != BackingKind::kSim) {
      result_.warnings.push_back(fmt::format(
          "backing={} replaced by backing=sim: a replay runs on a simulated device",
          ToString(options_.conf.backing)));
    }
    if (!sequence_.time_ns.empty() && sequence_.time_ns.size() != sequence_.ops.size()) {
      throw std::invalid_argument("AllocationSequence: time_ns and ops differ in length");
    }
    result_.header.producer = "fragscope replay 0.1.0";
    result_.header.source_format = "fragscope";
    if (!sequence_.ops.empty()) {
      now_ = sequence_.time_ns.empty() ? 0 : sequence_.time_ns.front();
      now_seq_ = sequence_.ops.front().seq;
    }

    if (!options_.conf.virtual_devices.empty()) {
      // One physical device split in virtual ones: trace device i runs on virtual device i.
      const std::size_t count = options_.conf.virtual_devices.size();
      if (!devices.empty() && devices.back() >= count) {
        throw ConfigError("virtual_devices",
                          fmt::format("the trace uses device {} but virtual_devices defines only "
                                      "{} device(s) (0 to {}): trace device i runs on virtual "
                                      "device i",
                                      devices.back(), count, count - 1));
      }
      WatchedBacking* watched = nullptr;
      MemorySystem& system = AddSystem(ConfFor(nullptr), &watched);
      for (std::uint32_t device : devices) AddLane(system.device(device), watched, device);
      const traces::TraceHeader header = system.MakeTraceHeader(result_.header.producer);
      result_.header.alloc_conf = header.alloc_conf;
      result_.header.created_unix_ns = header.created_unix_ns;
      result_.header.devices = header.devices;
    } else {
      // One simulated device per trace device, each with the configuration's policy and limit.
      for (std::uint32_t device : devices) {
        WatchedBacking* watched = nullptr;
        MemorySystem& system = AddSystem(ConfFor(&device), &watched);
        AddLane(system.device(0), watched, device);
        traces::TraceHeader header = system.MakeTraceHeader(result_.header.producer);
        result_.header.alloc_conf = header.alloc_conf;
        result_.header.created_unix_ns = header.created_unix_ns;
        header.devices.front().index = device;
        result_.header.devices.push_back(header.devices.front());
      }
    }

    const std::uint32_t max_device = devices.empty() ? 0 : devices.back();
    if (max_device < (1u << 16)) {
      lane_of_.assign(std::size_t{max_device} + 1, 0);
      for (std::size_t i = 0; i < devices.size(); ++i) {
        lane_of_[devices[i]] = static_cast<std::uint32_t>(i);
      }
    }
    for (Lane& lane : lanes_) lane.backing->changed = false;  // construction is not an op
  }

  const traces::TraceHeader& header() const { return result_.header; }

 private:
  Lane& LaneOf(std::uint32_t device) {
    if (device < lane_of_.size()) [[likely]] return lanes_[lane_of_[device]];
    const auto& devices = sequence_.devices;
    auto it = std::lower_bound(devices.begin(), devices.end(), device);
    if (it == devices.end() || *it != device) {
      throw std::invalid_argument(fmt::format("AllocationSequence: op on device {} not listed "
                                              "in devices", device));
    }
    return lanes_[static_cast<std::size_t>(it - devices.begin())];
  }

  // Replays ops [begin, end); false when it stopped at an OOM. `*done` gets the ops replayed.
  bool RunOps(std::size_t begin, std::size_t end, std::size_t* done) {
    const AllocationOp* ops = sequence_.ops.data();
    const bool recording = options_.record != nullptr;
    for (std::size_t i = begin; i < end; ++i) {
      const AllocationOp& op = ops[i];
      Lane& lane = LaneOf(op.device);
      if (recording) [[unlikely]] {
        EmitMarkers(i);
        now_ = sequence_.time_ns.empty() ? i : sequence_.time_ns[i];
        now_seq_ = op.seq;
      }
      if (op.is_free) {
        if (op.allocation >= live_.size()) [[unlikely]] BadOp(op);
        LiveSlot& slot = live_[op.allocation];
        if (slot.ptr == nullptr) [[unlikely]] {  // its allocation failed with OOM
          ++result_.devices[lane.result].skipped_frees;
          continue;
        }
        lane.allocator->Free(slot.ptr);
        lane.in_use -= RoundUp(slot.size);
        lane.waste -= RoundUp(slot.size) - slot.size;
        slot.ptr = nullptr;
        if (lane.backing->changed) [[unlikely]] OnBackingChange(lane);  // passthrough only
        continue;
      }
      AllocOptions alloc_options;
      alloc_options.tag = recording ? MapTag(op.tag) : op.tag;
      // The trace's stream: PyTorch's pools are per stream. A sequence built by hand may list none.
      alloc_options.stream = op.stream < sequence_.streams.size() ? sequence_.streams[op.stream] : op.stream;
      void* ptr = lane.allocator->TryAllocate(op.size, alloc_options, &report_);
      if (ptr == nullptr) [[unlikely]] {
        OnOom(lane, op, i);
        if (!options_.continue_past_oom) {
          *done = i + 1;
          return false;
        }
        continue;
      }
      const std::uint64_t rounded = RoundUp(op.size);
      lane.in_use += rounded;
      lane.waste += rounded - op.size;
      if (lane.waste > lane.peak_waste) lane.peak_waste = lane.waste;
      if (lane.backing->changed) [[unlikely]] {
        OnBackingChange(lane);
      } else if (lane.in_use > lane.best_in_use && lane.reserved == lane.peak_reserved) [[unlikely]] {
        Sample(lane, lane.allocator->Stats());
      }
      if (op.allocation == AllocationOp::kNoAllocation) {
        // A request that failed in the trace: the program never held it.
        lane.allocator->Free(ptr);
        lane.in_use -= rounded;
        lane.waste -= rounded - op.size;
        if (lane.backing->changed) [[unlikely]] OnBackingChange(lane);
      } else {
        if (op.allocation >= live_.size() || live_[op.allocation].ptr != nullptr) [[unlikely]] {
          lane.allocator->Free(ptr);
          BadOp(op);
        }
        live_[op.allocation] = LiveSlot{ptr, op.size};
      }
    }
    *done = end;
    return true;
  }

  // Records the trace's markers that come before ops[op] (all that are left for ops.size()), on
  // their own device, with their own name and timestamp (never before the last event recorded, so
  // that time, and the source seq, only move forward).
  void EmitMarkers(std::size_t op) {
    const std::vector<SequenceMarker>& markers = sequence_.markers;
    for (; next_marker_ < markers.size() && markers[next_marker_].before_op <= op; ++next_marker_) {
      const SequenceMarker& marker = markers[next_marker_];
      traces::Event event;
      event.type = traces::EventType::kMarker;
      event.device = marker.device;
      now_ = std::max(now_, sequence_.time_ns.empty() ? marker.before_op : marker.time_ns);
      event.time_ns = now_;
      event.thread = 1;
      event.tag = MapTag(marker.tag);
      options_.record->Record(event);
      now_seq_ = std::max(now_seq_, marker.seq);  // in order after the set-up events too
      if (options_.record_source_seq != nullptr) options_.record_source_seq->push_back(now_seq_);
    }
  }

  traces::TagId MapTag(traces::TagId tag) const {
    return tag < tag_map_.size() ? tag_map_[tag] : traces::kNoTag;
  }

  [[noreturn]] static void BadOp(const AllocationOp& op) {
    throw std::invalid_argument(fmt::format(
        "AllocationSequence: op seq {} names allocation {}, which is out of range or {}", op.seq,
        op.allocation, op.is_free ? "not live" : "already live"));
  }

  // In use and the largest free chunk at the moment of peak reserved: when reserved stays at its
  // peak a while, the moment with the most in use.
  static void Sample(Lane& lane, const AllocatorStats& stats) {
    lane.reserved = stats.reserved;
    lane.best_in_use = stats.in_use;
    lane.utilization = stats.utilization();
    lane.fragmentation = stats.external_fragmentation();
  }

  [[gnu::noinline]] void OnBackingChange(Lane& lane) {
    lane.backing->changed = false;
    const AllocatorStats stats = lane.allocator->Stats();
    lane.reserved = stats.reserved;
    if (stats.reserved > lane.peak_reserved ||
        (stats.reserved == lane.peak_reserved && stats.in_use > lane.best_in_use)) {
      lane.peak_reserved = stats.reserved;
      Sample(lane, stats);
    }
  }

  [[gnu::noinline]] void OnOom(Lane& lane, const AllocationOp& op, std::size_t index) {
    if (lane.backing->changed) OnBackingChange(lane);  // gc may have released regions
    DeviceReplay& out = result_.devices[lane.result];
    ++out.metrics.ooms;
    if (out.ooms.size() >= options_.max_diagnoses) return;
    OomDiagnosis& diagnosis = out.ooms.emplace_back();
    diagnosis.seq = op.seq;
    diagnosis.event_index = op.seq;
    diagnosis.op_index = index;
    diagnosis.report = report_;
    diagnosis.report.device = out.metrics.device;
    diagnosis.nearest_holes = NearestHoles(lane.allocator->Snapshot(), report_.numbers.rounded);
  }

  void Finish() {
    for (Lane& lane : lanes_) {
      DeviceReplay& out = result_.devices[lane.result];
      const AllocatorStats stats = lane.allocator->Stats();
      out.final_stats = stats;
      DeviceMetrics& m = out.metrics;
      m.peak_load = stats.peak_live_requested;
      m.peak_in_use = stats.peak_in_use;
      m.peak_reserved = stats.peak_reserved;
      m.utilization_at_peak = lane.utilization;
      m.fragmentation_at_peak = lane.fragmentation;
      m.peak_internal_waste = lane.peak_waste;
      m.allocations = stats.total_allocs;
      lane.allocator->SetSink(nullptr);
    }
    // Give everything back so that the allocators go quietly (they warn about live allocations).
    for (std::size_t i = 0; i < sequence_.ops.size() && !live_.empty(); ++i) {
      // Walk the ops once to find each live slot's device.
      const AllocationOp& op = sequence_.ops[i];
      if (op.is_free || op.allocation >= live_.size()) continue;
      LiveSlot& slot = live_[op.allocation];
      if (slot.ptr == nullptr) continue;
      LaneOf(op.device).allocator->Free(slot.ptr);
      slot.ptr = nullptr;
    }
  }

  const AllocationSequence& sequence_;
  const ReplayOptions& options_;
  ReplayResult result_;
  std::vector<std::unique_ptr<ReplaySink>> sinks_;  // outlive the allocators that point to them
  std::vector<std::unique_ptr<MemorySystem>> systems_;
  std::vector<Lane> lanes_;
  std::vector<std::uint32_t> lane_of_;
  std::vector<LiveSlot> live_;
  std::vector<traces::TagId> tag_map_;
  OomReport report_;
  std::uint64_t now_ = 0;
  std::uint64_t now_seq_ = 0;  // the seq of the op being replayed, while recording
  std::size_t next_marker_ = 0;  // sequence_.markers recorded so far, while recording
};

}  // namespace

ReplayResult Replay(const AllocationSequence& sequence, const ReplayOptions& options) {
  return Replayer(sequence, options).Run();
}

traces::TraceHeader ReplayTraceHeader(const AllocationSequence& sequence,
                                      const ReplayOptions& options) {
  Replayer replayer(sequence, options);
  replayer.Setup();
  return replayer.header();
}

const std::vector<ComparisonPreset>& ComparisonPresets() {
  static const std::vector<ComparisonPreset> presets = {
      {"fragscope default policy", ""},
      {"TensorFlow, allow_growth", "preset=tensorflow"},
      {"TensorFlow, whole device (no allow_growth)", "preset=tensorflow,growth=off"},
      {"PyTorch, default", "preset=pytorch"},
      {"PyTorch, expandable_segments", "preset=pytorch,expandable_segments=on"},
  };
  return presets;
}

}  // namespace fragscope::analysis
