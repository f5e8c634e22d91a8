// Private to the timeline model: its data and the pieces shared by timeline.cpp (public API),
// timeline_build.cpp (the index, block by block behind the store), timeline_state.cpp (StateAt)
// and timeline_series.cpp (ValueAt, Downsample).
//
// Memory, per event of a trace: a 40-byte record (timeline_store.hpp) plus, per device, 72 bytes
// per 64 events and 48 per 4096 events of series pyramid (about 1.1 B per event and device), plus
// the keyframes. Series values are not stored per event: a value is the pyramid's checkpoint at the
// start of its 64-event block plus the deltas of at most 63 records.
//
// Keyframes: after every K-th event (K = keyframe_interval) each device whose state changed since
// its previous keyframe gets a new one; an unchanged device gets an entry that shares its previous
// state, so a scan from a keyframe never crosses more than K events. A keyframe holds the region
// list and a frozen PersistentMap of the live chunks (address -> alloc event index), which shares
// every leaf not written since the previous keyframe. Keyframe memory is capped by
// keyframe_budget_bytes, spent pro rata: the keyframe after event i is taken only if the keyframe
// bytes so far plus its own stay within budget * (i + 1) / N; otherwise the device keeps its older
// keyframe and a later one is taken when the allowance has grown. So a trace with a huge, churning
// live set gets sparser keyframes (longer StateAt scans) instead of unbounded memory.
#pragma once

#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include "fragscope/analysis/timeline.hpp"
#include "timeline_fragmentation.hpp"
#include "timeline_pmap.hpp"
#include "timeline_store.hpp"

namespace fragscope::analysis::timeline_detail {

inline constexpr unsigned kL1Shift = 6;   // 64 events
inline constexpr unsigned kL2Shift = 12;  // 4096 events
inline constexpr std::uint64_t kNone = ~std::uint64_t{0};

using RegionMap = std::map<std::uint64_t, std::uint64_t>;  // base -> size

struct KeyState {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions;  // (base, size) by base
  PersistentMap::Frozen chunks;                                  // address -> alloc event
};

struct Keyframe {
  std::uint64_t after = 0;  // the state right after this event
  // The last event after which `state` is still the device's state (the device changed nothing
  // between): kNone while it has not changed since.
  std::uint64_t until = ~std::uint64_t{0};
  std::shared_ptr<const KeyState> state;
};

// One 64-event block of one device's series: the values after its last event and the min and max
// over the values after each of its events (indexed by Series).
struct L1Block {
  std::uint64_t end[3];
  std::uint64_t min[3];
  std::uint64_t max[3];
};
struct L2Block {
  std::uint64_t min[3];
  std::uint64_t max[3];
};

// Per device, costs grow with the device's own events, never with the device count times the
// trace's length: series blocks are stored only where the device has events (elsewhere its
// values stay what they were at the end of its previous block), keyframes only where its state
// changed.
struct DeviceData {
  std::uint32_t id = 0;
  std::uint16_t index = 0;  // record device index
  std::uint64_t first_event = ~std::uint64_t{0};
  std::vector<L1Block> l1;             // the 64-event blocks holding events of this device
  std::vector<std::uint64_t> l1_at;    // their block numbers (event index >> kL1Shift), ascending
  std::vector<L2Block> l2;             // the whole 4096-event blocks holding events of it
  std::vector<std::uint64_t> l2_at;    // their numbers (event index >> kL2Shift), ascending
  std::vector<Keyframe> keyframes;
  DeviceMetrics metrics;
  std::uint64_t peak_reserved_event = kNone;
  std::uint64_t in_use_at_peak_reserved = 0;
  std::vector<std::uint64_t> oom_events;
  // The address ranges (address_reserve, not yet released) of the device at each OOM, parallel to
  // oom_events: a paging allocator's OOM is explained in its pages (PageFactsAt).
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> oom_spaces;
  // The greatest common divisor of every map and unmap's offset into its range and size: a multiple
  // of the page the allocator mapped (0: nothing mapped into a range).
  std::uint64_t map_gcd = 0;
};

// Series deltas of an event that differ from its own sizes (a free whose recorded sizes disagree
// with the chunk it ends, a release that covered part of its range), sorted by event index.
struct Override {
  std::uint64_t event = 0;
  std::uint64_t rounded = 0;    // free: in-use bytes removed; release: reserved bytes removed
  std::uint64_t requested = 0;  // free: live requested bytes removed
};

struct ModelData {
  traces::TraceHeader header;
  EventStore store;
  std::vector<std::string> tags;  // by id - 1
  std::vector<std::uint32_t> devices;          // public: ascending, with the header's devices
  std::vector<DeviceData> device_data;         // by record device index
  std::unordered_map<std::uint32_t, std::size_t> device_slot;  // device id -> index in device_data
  std::vector<Override> overrides;
  std::vector<Marker> markers;
  std::vector<std::string> warnings;
  std::uint32_t keyframe_interval = 4096;
  std::uint64_t keyframe_bytes = 0;
  std::uint64_t keyframe_count = 0;
  // External fragmentation over time, built by its first query (timeline_fragmentation.hpp).
  mutable std::once_flag fragmentation_once;
  mutable std::unique_ptr<FragmentationData> fragmentation;
  mutable std::atomic<bool> fragmentation_ready{false};
  const FragmentationData& Fragmentation() const;

  const DeviceData* Find(std::uint32_t device) const;
  std::string TagName(traces::TagId id) const;

  // Series delta of event `index` for its own device (wrapping arithmetic: add it).
  std::uint64_t Delta(std::uint64_t index, Series series) const {
    const Record& r = store.record(index);
    if (!(r.flags & kApplied)) return 0;
    if (r.flags & kOverride) return DeltaSlow(index, series);
    switch (static_cast<traces::EventType>(r.type)) {
      case traces::EventType::kAlloc:
        return series == Series::kInUse ? store.EffectiveRounded(index) : series == Series::kLoad ? r.size : 0;
      case traces::EventType::kFree:
        return series == Series::kInUse ? 0 - store.EffectiveRounded(index) : series == Series::kLoad ? 0 - r.size : 0;
      // Mapped pages are reserved memory, as regions are (DESIGN.md); address space is not.
      case traces::EventType::kRegionReserve:
      case traces::EventType::kMap: return series == Series::kReserved ? r.size : 0;
      case traces::EventType::kRegionRelease:
      case traces::EventType::kUnmap: return series == Series::kReserved ? 0 - r.size : 0;
      default: return 0;
    }
  }
  std::uint64_t DeltaSlow(std::uint64_t index, Series series) const;  // events with an override
  const Override* FindOverride(std::uint64_t index) const;
};

// Region bookkeeping shared by the build and StateAt's replay, so that both evolve the same way.
bool RegionOverlaps(const RegionMap& regions, std::uint64_t address, std::uint64_t size);
// The region that ends exactly at `address`, or regions.end().
RegionMap::iterator RegionEndingAt(RegionMap& regions, std::uint64_t address);
// Adds [address, address + size) as a region; `merge_prev` joins it to the region ending at
// `address`, `merge_next` to the one starting at its end (pages mapped next to mapped pages of the
// same address range: the region grows in place). A region_reserve never merges.
void ApplyReserve(RegionMap& regions, std::uint64_t address, std::uint64_t size, bool merge_prev,
                  bool merge_next);
// Removes [address, address + size) from every region it intersects; returns the bytes removed.
std::uint64_t ApplyRelease(RegionMap& regions, std::uint64_t address, std::uint64_t size);

// Builds series, keyframes, metrics, markers and warnings from the stored events, as they are
// stored: Advance(upto, expected) indexes the records before `upto` (flushed by the store), with
// `expected` the best guess of the final event count (the keyframe budget is spent pro rata over
// it); Finish after Advance(size, size) once the last event is stored.
class StreamingIndex {
 public:
  StreamingIndex(ModelData& model, std::uint64_t keyframe_budget, Progress progress);
  ~StreamingIndex();
  StreamingIndex(const StreamingIndex&) = delete;
  StreamingIndex& operator=(const StreamingIndex&) = delete;
  void Advance(std::uint64_t upto, std::uint64_t expected);
  void Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
MemoryState StateAt(const ModelData& model, std::uint32_t device, std::uint64_t index);
std::uint64_t ValueAt(const ModelData& model, std::uint32_t device, Series series,
                      std::uint64_t index);
void Downsample(const ModelData& model, std::uint32_t device, Series series, std::uint64_t begin,
                std::uint64_t end, std::uint32_t columns, std::vector<std::uint64_t>* min,
                std::vector<std::uint64_t>* max);
void DownsampleAll(const ModelData& model, std::uint32_t device, std::uint64_t begin, std::uint64_t end,
                   std::uint32_t columns, std::vector<std::uint64_t> min[3], std::vector<std::uint64_t> max[3]);
std::uint64_t ArgMax(const ModelData& model, std::uint32_t device, Series series, std::uint64_t begin,
                     std::uint64_t end);

}  // namespace fragscope::analysis::timeline_detail
