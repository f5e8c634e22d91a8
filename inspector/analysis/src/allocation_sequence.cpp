// Building the compact allocation sequence of a trace: one pass over the events, frees matched to
// the live allocation at the same (device, address) through an open-addressing hash table.
#include "fragscope/analysis/allocation_sequence.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

// (device, address) -> the live allocation there. Linear probing, backward-shift deletion, grown at
// half load, so inserts and erases are O(1) and allocate only when the live set doubles.
class LiveTable {
 public:
  struct Entry {
    std::uint64_t address = 0;
    std::uint64_t alloc_id = 0;
    std::uint64_t size = 0;
    std::uint32_t device = 0;
    std::uint32_t allocation = AllocationOp::kNoAllocation;  // kNoAllocation: empty slot
    traces::TagId tag = traces::kNoTag;
    std::uint16_t stream = 0;  // AllocationOp::stream
  };

  LiveTable() { Rehash(1024); }

  Entry* Find(std::uint32_t device, std::uint64_t address) {
    for (std::size_t i = Home(device, address);; i = (i + 1) & mask_) {
      Entry& entry = slots_[i];
      if (entry.allocation == AllocationOp::kNoAllocation) return nullptr;
      if (entry.address == address && entry.device == device) return &entry;
    }
  }

  // Precondition: no entry for (device, address).
  void Insert(const Entry& entry) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    std::size_t i = Home(entry.device, entry.address);
    while (slots_[i].allocation != AllocationOp::kNoAllocation) i = (i + 1) & mask_;
    slots_[i] = entry;
    ++size_;
  }

  // Precondition: `entry` points into this table.
  void Erase(Entry* entry) {
    std::size_t hole = static_cast<std::size_t>(entry - slots_.data());
    for (std::size_t j = (hole + 1) & mask_; slots_[j].allocation != AllocationOp::kNoAllocation;
         j = (j + 1) & mask_) {
      const std::size_t home = Home(slots_[j].device, slots_[j].address);
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Entry{};
    --size_;
  }

  std::size_t size() const { return size_; }

 private:
  std::size_t Home(std::uint32_t device, std::uint64_t address) const {
    // Addresses are at least 256-aligned in practice; a multiplicative hash spreads the high bits.
    const std::uint64_t key = address ^ (std::uint64_t{device} << 56) ^ device;
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }

  void Rehash(std::size_t capacity) {
    std::vector<Entry> old = std::move(slots_);
    slots_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (const Entry& entry : old) {
      if (entry.allocation != AllocationOp::kNoAllocation) Insert(entry);
    }
  }

  std::vector<Entry> slots_;
  std::size_t mask_ = 0;
  int shift_ = 0;
  std::size_t size_ = 0;
};

// Devices in order of first appearance, with a one-entry cache: traces run long stretches on one
// device. A hash set, so that traces of many devices cost no scan of them all per event.
class DeviceSet {
 public:
  void Add(std::uint32_t device) {
    if (device == last_ && !seen_.empty()) return;
    last_ = device;
    if (index_.insert(device).second) seen_.push_back(device);
  }
  std::vector<std::uint32_t> Sorted() const {
    std::vector<std::uint32_t> sorted = seen_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

 private:
  std::vector<std::uint32_t> seen_;
  std::unordered_set<std::uint32_t> index_;
  std::uint32_t last_ = 0;
};

}  // namespace

// Replays walk millions of ops: keep them at half a cache line.
static_assert(sizeof(AllocationOp) <= 32, "AllocationOp grew past 32 bytes");

struct AllocationSequenceBuilder::State {
  AllocationSequence sequence;
  LiveTable live;
  DeviceSet devices;
  std::uint64_t allocations = 0;
  std::unordered_map<std::uint64_t, std::uint16_t> stream_index{{0, 0}};

  // A trace has a handful of streams: the map is looked up once per alloc.
  std::uint16_t StreamIndex(std::uint64_t stream) {
    constexpr std::size_t kMaxStreams = 65536;
    auto [it, added] = stream_index.try_emplace(stream, static_cast<std::uint16_t>(kMaxStreams - 1));
    if (added && sequence.streams.size() < kMaxStreams) {
      it->second = static_cast<std::uint16_t>(sequence.streams.size());
      sequence.streams.push_back(stream);
    }
    return it->second;
  }

  void push(const AllocationOp& op, std::uint64_t time_ns) {
    sequence.ops.push_back(op);
    sequence.time_ns.push_back(time_ns);
  }
};

AllocationSequenceBuilder::AllocationSequenceBuilder(const traces::TraceHeader& header)
    : state_(std::make_unique<State>()) {
  state_->sequence.header = header;
}

AllocationSequenceBuilder::~AllocationSequenceBuilder() = default;

void AllocationSequenceBuilder::Add(const std::vector<traces::Event>& block) {
  AllocationSequence& sequence = state_->sequence;
  LiveTable& live = state_->live;
  DeviceSet& devices = state_->devices;
  std::uint64_t& allocations = state_->allocations;
  const auto push = [this](const AllocationOp& op, std::uint64_t time_ns) { state_->push(op, time_ns); };
  for (const Event& event : block) {
    switch (event.type) {
      case EventType::kAlloc: {
        if (allocations >= AllocationOp::kNoAllocation) {
          throw std::length_error("trace holds more than 4294967294 allocations");
        }
        if (const char* problem = traces::EventSizeProblem(event)) {
          throw traces::SizeOverflow(fmt::format("alloc event {} (device {}, {} bytes): {}",
                                                 event.seq, event.device, event.size, problem));
        }
        devices.Add(event.device);
        if (LiveTable::Entry* old = live.Find(event.device, event.address)) {
          // The address was handed out again without a free in between: the trace lost the free.
          push(AllocationOp{old->size, event.seq, old->allocation, event.device, old->tag, true, old->stream},
               event.time_ns);
          live.Erase(old);
          ++sequence.implicit_frees;
        }
        const auto index = static_cast<std::uint32_t>(allocations++);
        const std::uint16_t stream = state_->StreamIndex(event.stream);
        live.Insert(LiveTable::Entry{event.address, event.alloc_id, event.size, event.device,
                                     index, event.tag, stream});
        push(AllocationOp{event.size, event.seq, index, event.device, event.tag, false, stream},
             event.time_ns);
        break;
      }
      case EventType::kFree: {
        LiveTable::Entry* entry = live.Find(event.device, event.address);
        if (entry == nullptr) {
          ++sequence.unmatched_frees;
          break;
        }
        if (event.alloc_id != 0 && entry->alloc_id != 0 && event.alloc_id != entry->alloc_id) {
          ++sequence.alloc_id_mismatches;
        }
        push(AllocationOp{entry->size, event.seq, entry->allocation, event.device, entry->tag,
                          true, entry->stream},
             event.time_ns);
        live.Erase(entry);
        break;
      }
      case EventType::kOom: {
        devices.Add(event.device);
        const std::uint64_t request =
            event.oom.Has(traces::kOomRequest) && event.oom.request != 0 ? event.oom.request : event.size;
        push(AllocationOp{request, event.seq, AllocationOp::kNoAllocation, event.device,
                          event.tag, false, state_->StreamIndex(event.stream)},
             event.time_ns);
        ++sequence.recorded_ooms;
        break;
      }
      // Markers stay where they were among the ops: a replay that records a trace carries them
      // (step lines in `report`, step markers in the inspector).
      case EventType::kMarker:
        sequence.markers.push_back(
            SequenceMarker{sequence.ops.size(), event.seq, event.time_ns, event.device, event.tag});
        break;
      // Where memory came from is the replayed policy's business, not the sequence's: regions,
      // address ranges and mapped pages are left out alike.
      case EventType::kRegionReserve:
      case EventType::kRegionRelease:
      case EventType::kAddressReserve:
      case EventType::kAddressRelease:
      case EventType::kMap:
      case EventType::kUnmap:
        break;
    }
  }
}

AllocationSequence AllocationSequenceBuilder::Finish(const std::vector<std::string>* tags) {
  AllocationSequence& sequence = state_->sequence;
  const LiveTable& live = state_->live;
  const DeviceSet& devices = state_->devices;
  const std::uint64_t allocations = state_->allocations;

  sequence.devices = devices.Sorted();
  // A marker on a device with no allocation has no device in a replay to stand on.
  std::erase_if(sequence.markers, [&](const SequenceMarker& marker) {
    return !std::binary_search(sequence.devices.begin(), sequence.devices.end(), marker.device);
  });
  sequence.allocations = allocations;
  sequence.never_freed = live.size();
  if (sequence.unmatched_frees > 0) {
    sequence.warnings.push_back(fmt::format(
        "{} free event(s) name no live allocation (blocks allocated before recording started, or "
        "a double free); they were dropped",
        sequence.unmatched_frees));
  }
  if (sequence.alloc_id_mismatches > 0) {
    sequence.warnings.push_back(fmt::format(
        "{} free event(s) carry an alloc_id other than that of the live allocation at their "
        "address; they were matched by address",
        sequence.alloc_id_mismatches));
  }
  // Copied after reading, not before: a trace file's tags are interned as its blocks are read
  // (before, a replay recorded from a .fst trace lost every tag name).
  if (tags != nullptr) sequence.tags = *tags;
  if (sequence.implicit_frees > 0) {
    sequence.warnings.push_back(fmt::format(
        "{} alloc event(s) reuse the address of a live allocation with no free in between; the "
        "earlier allocation was taken as freed there",
        sequence.implicit_frees));
  }
  return std::move(sequence);
}

AllocationSequence BuildAllocationSequence(const traces::TraceHeader& header,
                                           const BlockSource& blocks,
                                           const std::vector<std::string>* tags) {
  AllocationSequenceBuilder builder(header);
  std::vector<Event> block;
  while (blocks(&block)) {
    builder.Add(block);
    block.clear();
  }
  return builder.Finish(tags);
}

AllocationSequence RecordedWindow(AllocationSequence sequence) {
  const std::uint64_t reconstructed = sequence.header.source.reconstructed_events;
  if (reconstructed == 0) return sequence;
  constexpr std::uint32_t kDropped = 0xfffffffeu;
  std::vector<std::uint32_t> renumbered(sequence.allocations, kDropped);
  std::uint32_t next = 0;
  std::vector<AllocationOp> ops;
  std::vector<std::uint64_t> times;
  ops.reserve(sequence.ops.size());
  std::size_t marker = 0;  // markers keep their place: before the first kept op after them
  std::uint64_t dropped_allocs = 0, dropped_frees = 0;
  for (std::size_t i = 0; i < sequence.ops.size(); ++i) {
    for (; marker < sequence.markers.size() && sequence.markers[marker].before_op <= i; ++marker) {
      sequence.markers[marker].before_op = ops.size();
    }
    AllocationOp op = sequence.ops[i];
    if (op.allocation != AllocationOp::kNoAllocation) {
      if (!op.is_free && op.seq >= reconstructed) renumbered[op.allocation] = next++;
      const std::uint32_t index = renumbered[op.allocation];
      if (index == kDropped) {
        ++(op.is_free ? dropped_frees : dropped_allocs);
        continue;
      }
      op.allocation = index;
    }
    ops.push_back(op);
    if (!sequence.time_ns.empty()) times.push_back(sequence.time_ns[i]);
  }
  for (; marker < sequence.markers.size(); ++marker) sequence.markers[marker].before_op = ops.size();
  sequence.ops = std::move(ops);
  sequence.time_ns = std::move(times);
  sequence.allocations = next;
  sequence.unmatched_frees += dropped_frees;
  if (sequence.never_freed >= dropped_allocs - std::min(dropped_allocs, dropped_frees)) {
    sequence.never_freed -= dropped_allocs - std::min(dropped_allocs, dropped_frees);
  }
  sequence.header.source.reconstructed_events = 0;
  return sequence;
}

AllocationSequence WithoutDevices(AllocationSequence sequence, const std::vector<std::uint32_t>& devices) {
  const auto dropped = [&](std::uint32_t device) {
    return std::find(devices.begin(), devices.end(), device) != devices.end();
  };
  if (std::none_of(sequence.devices.begin(), sequence.devices.end(), dropped)) return sequence;
  // An allocation's alloc and free are on one device, so the alloc decides for both.
  constexpr std::uint32_t kDropped = 0xfffffffeu;
  std::vector<std::uint32_t> renumbered(sequence.allocations, kDropped);
  std::uint32_t next = 0;
  std::uint64_t kept_frees = 0, kept_failed = 0;
  std::vector<AllocationOp> ops;
  std::vector<std::uint64_t> times;
  ops.reserve(sequence.ops.size());
  std::size_t marker = 0;  // markers keep their place: before the first kept op after them
  for (std::size_t i = 0; i < sequence.ops.size(); ++i) {
    for (; marker < sequence.markers.size() && sequence.markers[marker].before_op <= i; ++marker) {
      sequence.markers[marker].before_op = ops.size();
    }
    AllocationOp op = sequence.ops[i];
    if (dropped(op.device)) continue;
    if (op.allocation == AllocationOp::kNoAllocation) {
      ++kept_failed;
    } else {
      if (!op.is_free) renumbered[op.allocation] = next++;
      op.allocation = renumbered[op.allocation];
      if (op.is_free) ++kept_frees;
    }
    ops.push_back(op);
    if (!sequence.time_ns.empty()) times.push_back(sequence.time_ns[i]);
  }
  for (; marker < sequence.markers.size(); ++marker) sequence.markers[marker].before_op = ops.size();
  std::erase_if(sequence.markers, [&](const SequenceMarker& m) { return dropped(m.device); });
  std::erase_if(sequence.devices, dropped);
  sequence.ops = std::move(ops);
  sequence.time_ns = std::move(times);
  sequence.allocations = next;
  sequence.never_freed = next - kept_frees;
  sequence.recorded_ooms = kept_failed;
  return sequence;
}

std::vector<std::uint64_t> PeakLoadByDevice(const AllocationSequence& sequence) {
  const std::size_t count = sequence.devices.size();
  std::vector<std::uint64_t> live(count, 0), peak(count, 0);
  std::vector<std::uint64_t> sizes(sequence.allocations, 0);
  const auto slot = [&](std::uint32_t device) -> std::size_t {
    auto it = std::lower_bound(sequence.devices.begin(), sequence.devices.end(), device);
    if (it == sequence.devices.end() || *it != device) {
      throw std::invalid_argument(fmt::format("op on device {} not listed in devices", device));
    }
    return static_cast<std::size_t>(it - sequence.devices.begin());
  };
  std::uint32_t last_device = 0;
  std::size_t last_slot = count;  // none yet
  for (const AllocationOp& op : sequence.ops) {
    if (last_slot == count || op.device != last_device) {
      last_slot = slot(op.device);
      last_device = op.device;
    }
    std::uint64_t& load = live[last_slot];
    if (op.allocation == AllocationOp::kNoAllocation) {  // a failed request: wanted for a moment
      peak[last_slot] = std::max(peak[last_slot], traces::CheckedAdd(load, op.size).value_or(UINT64_MAX));
      continue;
    }
    if (op.allocation >= sizes.size()) {
      throw std::invalid_argument(fmt::format("op names allocation {} of {}", op.allocation,
                                              sizes.size()));
    }
    if (op.is_free) {
      load -= sizes[op.allocation];
      sizes[op.allocation] = 0;
    } else {
      sizes[op.allocation] = op.size;
      load += op.size;
      peak[last_slot] = std::max(peak[last_slot], load);
    }
  }
  return peak;
}

}  // namespace fragscope::analysis
