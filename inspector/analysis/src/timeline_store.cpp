#include "timeline_store.hpp"

#include <algorithm>
#include <stdexcept>

#include "fragscope/allocator/device_allocator.hpp"  // RoundUp


namespace fragscope::analysis::timeline_detail {
namespace {

constexpr unsigned kBlockShift = 6;  // 64 events share a time and an alloc-id base
constexpr std::uint32_t kTimeMiss = 0xffffffffu;
constexpr std::uint32_t kRoundedMiss = 0xffffffffu;
constexpr std::uint32_t kSmallFull = 0xff;
constexpr std::uint32_t kRegionFull = 0xffff;

bool IsZero(const traces::OomRecord& o) {
  return o.request == 0 && o.rounded == 0 && o.limit == 0 && o.reserved == 0 && o.in_use == 0 &&
         o.live_requested == 0 && o.free_in_regions == 0 && o.largest_free == 0 &&
         o.headroom == 0 && o.chunk_count == 0 && o.region_count == 0 &&
         o.cause == traces::OomCause::kCapacity;
}

}  // namespace

template <typename V>
std::uint32_t EventStore::Interner<V>::Intern(V value, std::uint32_t full) {
  if (last_id < values.size() && values[last_id] == value) return last_id;
  auto it = ids.find(value);
  if (it != ids.end()) return last_id = it->second;
  if (values.size() >= full) return full;
  const auto id = static_cast<std::uint32_t>(values.size());
  values.push_back(value);
  ids.emplace(value, id);
  return last_id = id;
}

EventStore::EventStore() {
  // Index 0 of each table is the zero value, the common case of events without the field.
  streams_.Intern(0, kSmallFull);
  threads_.Intern(0, kSmallFull);
  regions_.Intern(0, kRegionFull);
}

void EventStore::Append(const traces::Event& e) {
  const std::uint64_t index = records_.size();
  if (seq_runs_.empty() || seq_runs_.back().second != e.seq - index) {
    seq_runs_.emplace_back(index, e.seq - index);
  }

  bool lossy = false;
  Record r;
  r.address = e.address;
  r.size = e.size;
  r.type = static_cast<std::uint8_t>(e.type);
  r.tag = e.tag;

  const std::uint32_t device = device_table_.Intern(e.device, 0x10000);
  if (device == 0x10000) throw std::length_error("trace has more than 65536 devices");
  if (device == devices_.size()) devices_.push_back(e.device);
  r.device = static_cast<std::uint16_t>(device);

  if (e.rounded == 0) {
    r.flags |= kRoundedZero;
  } else if (e.rounded >= e.size && e.rounded - e.size < kRoundedMiss) {
    r.rounded_delta = static_cast<std::uint32_t>(e.rounded - e.size);
  } else {
    lossy = true;
  }

  if (e.type == traces::EventType::kOom) {
    r.flags |= kNoAllocId;
    r.alloc_id_delta = static_cast<std::uint32_t>(ooms_.size());
    ooms_.push_back(e.oom);
    lossy |= e.alloc_id != 0;
  } else {
    lossy |= !IsZero(e.oom);
    if (e.alloc_id == 0) r.flags |= kNoAllocId;  // else encoded by FlushBlock
  }

  const std::uint32_t stream = streams_.Intern(e.stream, kSmallFull);
  const std::uint32_t thread = threads_.Intern(e.thread, kSmallFull);
  lossy |= stream == kSmallFull || thread == kSmallFull;
  r.stream = static_cast<std::uint8_t>(stream);
  r.thread = static_cast<std::uint8_t>(thread);
  if (e.region != 0 && e.region == e.address) {
    r.flags |= kRegionIsAddress;
  } else {
    const std::uint32_t region = regions_.Intern(e.region, kRegionFull);
    lossy |= region == kRegionFull;
    r.region = static_cast<std::uint16_t>(region);
  }

  if (lossy) r.flags |= kException;
  records_.push_back(r);
  pending_.push_back(e);
  if (pending_.size() == (1u << kBlockShift)) FlushBlock();
}

void EventStore::Finish() {
  if (!pending_.empty()) FlushBlock();
}

void EventStore::FlushBlock() {
  const std::uint64_t first = records_.size() - pending_.size();
  std::uint64_t time_base = ~std::uint64_t{0}, id_base = ~std::uint64_t{0};
  for (const traces::Event& e : pending_) {
    time_base = std::min(time_base, e.time_ns);
    if (e.alloc_id != 0 && e.type != traces::EventType::kOom) id_base = std::min(id_base, e.alloc_id);
  }
  if (id_base == ~std::uint64_t{0}) id_base = 0;
  time_base_.push_back(time_base);
  id_base_.push_back(id_base);
  for (std::size_t k = 0; k < pending_.size(); ++k) {
    const traces::Event& e = pending_[k];
    Record& r = records_[first + k];
    if (e.time_ns - time_base < kTimeMiss) {
      r.time_delta = static_cast<std::uint32_t>(e.time_ns - time_base);
    } else {
      r.flags |= kException;
    }
    if (!(r.flags & kNoAllocId)) {
      if (e.alloc_id - id_base < kTimeMiss) {
        r.alloc_id_delta = static_cast<std::uint32_t>(e.alloc_id - id_base);
      } else {
        r.flags |= kException;
      }
    }
    if (r.flags & kException) exceptions_.emplace(first + k, e);
  }
  pending_.clear();
}

const traces::Event* EventStore::Exception(std::uint64_t index) const {
  auto it = exceptions_.find(index);
  return it == exceptions_.end() ? nullptr : &it->second;
}

std::uint64_t EventStore::Seq(std::uint64_t index) const {
  auto it = std::upper_bound(seq_runs_.begin(), seq_runs_.end(), index,
                             [](std::uint64_t i, const auto& run) { return i < run.first; });
  return index + std::prev(it)->second;
}

std::uint64_t EventStore::Rounded(std::uint64_t index) const {
  const Record& r = records_[index];
  if (r.flags & kException) return Exception(index)->rounded;
  return (r.flags & kRoundedZero) ? 0 : r.size + r.rounded_delta;
}

std::uint64_t EventStore::EffectiveRoundedSlow(std::uint64_t index) const {
  const std::uint64_t rounded = Rounded(index);
  return rounded != 0 ? rounded : RoundUp(records_[index].size);
}

std::uint64_t EventStore::AllocId(std::uint64_t index) const {
  const Record& r = records_[index];
  if (r.flags & kException) return Exception(index)->alloc_id;
  if (r.flags & kNoAllocId) return 0;
  return id_base_[index >> kBlockShift] + r.alloc_id_delta;
}

std::uint64_t EventStore::Region(std::uint64_t index) const {
  const Record& r = records_[index];
  if (r.flags & kException) return Exception(index)->region;
  return (r.flags & kRegionIsAddress) ? r.address : regions_.values[r.region];
}

std::uint64_t EventStore::Stream(std::uint64_t index) const {
  const Record& r = records_[index];
  if (r.flags & kException) return Exception(index)->stream;
  return streams_.values[r.stream];
}

traces::Event EventStore::Get(std::uint64_t index) const {
  const Record& r = records_[index];
  if (r.flags & kException) return *Exception(index);
  traces::Event e;
  e.type = static_cast<traces::EventType>(r.type);
  e.device = devices_[r.device];
  e.seq = Seq(index);
  e.time_ns = time_base_[index >> kBlockShift] + r.time_delta;
  e.stream = streams_.values[r.stream];
  e.address = r.address;
  e.size = r.size;
  e.rounded = Rounded(index);
  e.region = (r.flags & kRegionIsAddress) ? r.address : regions_.values[r.region];
  e.alloc_id = AllocId(index);
  e.thread = threads_.values[r.thread];
  e.tag = r.tag;
  if (e.type == traces::EventType::kOom) e.oom = ooms_[r.alloc_id_delta];
  return e;
}

std::uint64_t EventStore::bytes() const {
  const std::uint64_t exception_bytes = exceptions_.size() * (sizeof(traces::Event) + 32);
  return records_.bytes() + (time_base_.capacity() + id_base_.capacity()) * 8 +
         seq_runs_.capacity() * 16 + ooms_.capacity() * sizeof(traces::OomRecord) +
         exception_bytes + regions_.values.capacity() * 40;
}

}  // namespace fragscope::analysis::timeline_detail
