// Private to the timeline model: the compact event store. A traces::Event is about 200 bytes; 10
// million of them would not fit a laptop. The store keeps one 40-byte record per event and
// rebuilds the Event on demand:
//   - time_ns and alloc_id as 32-bit offsets from the smallest value of their 64-event block (events
//     of several devices need not be in time order);
//   - rounded as the 32-bit excess over the requested size (or "0" by a flag);
//   - stream, thread, region base and device interned into small tables (a region equal to the
//     address, as every passthrough allocation has, by a flag);
//   - seq as runs of constant (seq - index), so a gap-free trace costs one run;
//   - OOM numbers in a side table (only oom events have them).
// An event that does not fit (a time jump of more than 4 s inside a block, a 300th stream, a
// nonzero field where its type has none, ...) is kept whole in an exception table, so event(i) is
// always exactly what was read. address, size, type and device are exact in every record, so the
// model reads those without decoding.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fragscope/traces/event.hpp"

namespace fragscope::analysis::timeline_detail {

// A vector that grows by fixed chunks: no reallocation, so building 10 million records never
// holds two copies of them.
template <typename T, unsigned kShift = 16>
class ChunkedVector {
 public:
  static constexpr std::uint64_t kChunk = std::uint64_t{1} << kShift;

  void push_back(const T& value) {
    if ((size_ & (kChunk - 1)) == 0) chunks_.push_back(std::make_unique<T[]>(kChunk));
    chunks_.back()[size_ & (kChunk - 1)] = value;
    ++size_;
  }
  T& operator[](std::uint64_t i) { return chunks_[i >> kShift][i & (kChunk - 1)]; }
  const T& operator[](std::uint64_t i) const { return chunks_[i >> kShift][i & (kChunk - 1)]; }
  std::uint64_t size() const { return size_; }
  std::uint64_t bytes() const { return chunks_.size() * kChunk * sizeof(T); }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::uint64_t size_ = 0;
};

// Record flags. The first group is the store's; the second is written by the model while it
// builds its state (the index) and read back by StateAt and the series scans.
enum RecordFlag : std::uint8_t {
  kException = 1 << 0,    // the whole event is in the exception table
  kRoundedZero = 1 << 1,  // event.rounded == 0
  kNoAllocId = 1 << 2,    // event.alloc_id == 0
  kApplied = 1 << 3,      // the event changed the model's state (else skipped with a warning)
  kMerge = 1 << 4,        // map: grows the mapped region that ends at its address (same address range)
  kOverride = 1 << 5,     // the series deltas differ from the event's own sizes: see overrides
  kRegionIsAddress = 1 << 6,  // event.region == event.address (store)
  kMergeNext = 1 << 7,    // map: joins the mapped region that starts at its end (same address range)
};

struct Record {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint32_t time_delta = 0;
  traces::TagId tag = 0;
  std::uint32_t rounded_delta = 0;
  std::uint32_t alloc_id_delta = 0;  // oom events: index into the OOM table
  std::uint16_t region = 0;
  std::uint16_t device = 0;          // index into device_ids(), by first appearance
  std::uint8_t stream = 0;
  std::uint8_t thread = 0;
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
};
static_assert(sizeof(Record) == 40, "the record is the model's per-event memory: keep it at 40 B");

class EventStore {
 public:
  EventStore();

  // Appends the next event (index size()). Call Finish() after the last one, before any read.
  void Append(const traces::Event& event);
  void Finish();
  // The event exactly as appended.
  traces::Event Get(std::uint64_t index) const;

  std::uint64_t size() const { return records_.size(); }
  // Records before this index are final (their block's bases are known); those after it are not
  // until the next 64 events, or Finish, flush their block.
  std::uint64_t flushed() const { return records_.size() - pending_.size(); }
  const Record& record(std::uint64_t index) const { return records_[index]; }
  // Hints that the record (and its block's bases) will be read soon: StateAt reads thousands of
  // scattered alloc records, and overlapping their cache misses makes it several times faster.
  void Prefetch(std::uint64_t index) const {
    __builtin_prefetch(&records_[index]);
    __builtin_prefetch(&id_base_[index >> 6]);
  }
  Record& record(std::uint64_t index) { return records_[index]; }

  std::uint64_t Seq(std::uint64_t index) const;
  std::uint64_t Rounded(std::uint64_t index) const;  // as recorded
  // What the chunk of an alloc holds: rounded, or the size rounded up to 256 when rounded is 0.
  std::uint64_t EffectiveRounded(std::uint64_t index) const {
    const Record& r = records_[index];
    if (!(r.flags & (kException | kRoundedZero))) return r.size + r.rounded_delta;
    return EffectiveRoundedSlow(index);
  }
  std::uint64_t AllocId(std::uint64_t index) const;
  std::uint64_t Stream(std::uint64_t index) const;
  std::uint64_t Region(std::uint64_t index) const;

  // Device ids by record device index (order of first appearance).
  const std::vector<std::uint32_t>& device_ids() const { return devices_; }
  std::uint64_t bytes() const;

 private:
  const traces::Event* Exception(std::uint64_t index) const;
  std::uint64_t EffectiveRoundedSlow(std::uint64_t index) const;
  void FlushBlock();  // encodes time and alloc id of the pending block

  ChunkedVector<Record> records_;
  std::vector<traces::Event> pending_;     // the current block, until its bases are known
  std::vector<std::uint64_t> time_base_;  // per 64 events: the smallest time_ns
  std::vector<std::uint64_t> id_base_;    // per 64 events: the smallest nonzero alloc_id
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seq_runs_;  // (first index, seq - index)

  template <typename V>
  struct Interner {
    std::vector<V> values;
    std::unordered_map<V, std::uint32_t> ids;
    std::uint32_t last_id = 0;
    // Index of `value`, or `full` when the table already holds `full` entries.
    std::uint32_t Intern(V value, std::uint32_t full);
  };
  Interner<std::uint64_t> streams_;  // index 0xff: does not fit
  Interner<std::uint32_t> threads_;  // index 0xff: does not fit
  Interner<std::uint64_t> regions_;  // index 0xffff: does not fit
  Interner<std::uint32_t> device_table_;
  std::vector<std::uint32_t> devices_;
  std::vector<traces::OomRecord> ooms_;
  std::unordered_map<std::uint64_t, traces::Event> exceptions_;
};

}  // namespace fragscope::analysis::timeline_detail
