// preset=pytorch, when no cached block fits: new segments (alloc_block), expandable segments
// (find_expandable_block, map_block, unmap_block), releasing cached memory
// (release_available_cached_blocks, release_cached_blocks, garbage_collect_cached_blocks) and the
// OOM report.
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/log.hpp"
#include "invalid_free.hpp"
#include "pytorch_caching_allocator.hpp"

namespace fragscope::pytorch {

PytorchCachingAllocator::PytorchCachingAllocator(Backing& backing, const PytorchOptions& options)
    : backing_(backing), options_(options) {
  small_.small = true;
  stats_.limit = options_.limit;
  if (options_.settings.expandable_segments) {
    expandable_backing_ = backing_.expandable();
    if (expandable_backing_ == nullptr) {
      throw ConfigError("expandable_segments",
                        fmt::format("expandable_segments=on needs a backing that maps pages (sim, "
                                    "host or vmm), not {}",
                                    ToString(backing_.info().kind)));
    }
    const std::uint64_t granularity = expandable_backing_->map_granularity();
    if (granularity == 0 || kSmallBuffer % granularity != 0) {
      throw BackingError(fmt::format("device {}: the {} backing maps pages of {} bytes, which do not "
                                     "divide PyTorch's 2 MiB expandable-segment pages",
                                     options_.device, ToString(backing_.info().kind), granularity));
    }
  }
}

PytorchCachingAllocator::~PytorchCachingAllocator() {
  if (!live_.empty()) {
    fragscope::Log().warn("device {}: PyTorch preset destroyed with {} live allocations still held",
                          options_.device, live_.size());
  }
  std::vector<Block*> blocks;
  for (Pool* pool : {&small_, &large_}) {
    blocks.insert(blocks.end(), pool->blocks.begin(), pool->blocks.end());
    blocks.insert(blocks.end(), pool->unmapped.begin(), pool->unmapped.end());
  }
  for (const auto& [address, block] : live_) blocks.push_back(block);
  try {
    for (const auto& segment : segments_) {
      void* base = reinterpret_cast<void*>(segment->base);
      if (!segment->expandable) {
        backing_.Release(base, segment->size, segment->stream);
        continue;
      }
      // Every mapped run of the range (whole pages), then the range.
      std::vector<const Block*> mapped;
      for (const Block* block : blocks) {
        if (block->segment == segment.get() && block->mapped) mapped.push_back(block);
      }
      std::sort(mapped.begin(), mapped.end(),
                [](const Block* a, const Block* b) { return a->address < b->address; });
      for (std::size_t i = 0; i < mapped.size();) {
        const std::uint64_t start = mapped[i]->address;
        std::uint64_t end = start + mapped[i]->size;
        for (++i; i < mapped.size() && mapped[i]->address == end; ++i) end += mapped[i]->size;
        expandable_backing_->Unmap(base, start - segment->base, end - start);
      }
      expandable_backing_->ReleaseRange(base, segment->size);
    }
  } catch (const std::exception& error) {  // a destructor must not throw; say what leaked
    fragscope::Log().error("device {}: releasing PyTorch preset segments: {}", options_.device, error.what());
  }
  for (Block* block : blocks) delete block;
}

// alloc_block: a new segment of the request's allocation size, unless that would pass the limit
// (PyTorch's memory fraction check, also made for expandable segments).
bool PytorchCachingAllocator::AllocBlock(Request& request) {
  const std::uint64_t size = request.alloc_size;
  if (size > options_.limit || stats_.reserved > options_.limit - size) return false;
  if (options_.settings.expandable_segments) {
    request.block = TryAllocateExpandable(request);
    return request.block != nullptr;
  }
  void* base = backing_.Reserve(size, request.stream);
  if (base == nullptr) {
    request.backing_refused = true;
    return false;
  }
  auto owned = std::make_unique<Segment>();
  Segment* segment = owned.get();
  segment->base = reinterpret_cast<std::uint64_t>(base);
  segment->size = size;
  segment->stream = request.stream;
  segment->pool = request.pool;
  segment->registration = next_registration_++;
  segments_.push_back(std::move(owned));

  auto* block = new Block();
  block->address = segment->base;
  block->size = size;
  block->stream = request.stream;
  block->pool = request.pool;
  block->segment = segment;
  block->registration = segment->registration;
  request.block = block;
  ++block_count_;

  AllocatorStats& s = stats_;
  s.reserved += size;
  s.address_space += size;
  ++s.regions;
  ++s.region_reserves;
  s.peak_reserved = std::max(s.peak_reserved, s.reserved);
  s.peak_address_space = std::max(s.peak_address_space, s.address_space);
  s.peak_regions = std::max(s.peak_regions, s.regions);
  if (sink_ != nullptr) EmitRange(traces::EventType::kRegionReserve, segment->base, size);
  return true;
}

// try_allocate_expandable_block: the lowest run of free and unmapped blocks long enough, mapped
// page by page and merged into one free block.
PytorchCachingAllocator::Block* PytorchCachingAllocator::TryAllocateExpandable(Request& request) {
  Block* candidate = FindExpandableBlock(request);
  if (candidate == nullptr) return nullptr;
  const std::uint64_t size = request.size;
  if (!candidate->mapped && !MapBlock(candidate, std::min(candidate->size, size), &request.backing_refused)) {
    return nullptr;
  }
  while (candidate->size < size) {
    // free -> unmapped -> ...: map the next piece; it absorbs the free block before it.
    Block* next = candidate->next;
    if (!MapBlock(next, std::min(size - candidate->size, next->size), &request.backing_refused)) {
      return nullptr;
    }
    candidate = next;
  }
  candidate->pool->blocks.erase(candidate);
  return candidate;
}

// find_expandable_block: the lowest address, in any expandable segment of this stream and pool,
// where free and unmapped blocks in a row hold `size`; else a new segment's whole range.
PytorchCachingAllocator::Block* PytorchCachingAllocator::FindExpandableBlock(Request& request) {
  Pool& pool = *request.pool;
  const auto allocatable = [](const Block* b) { return b != nullptr && !b->allocated; };
  Block key;
  key.stream = request.stream;
  for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == request.stream;
       ++it) {
    Block* candidate = *it;
    if (allocatable(candidate->prev)) candidate = candidate->prev;
    std::uint64_t bytes = 0;
    for (const Block* b = candidate; bytes < request.size && allocatable(b); b = b->next) bytes += b->size;
    if (bytes >= request.size) return candidate;
  }
  // Address space for 1 1/8 of the device, so pages unmapped early in the range can be mapped
  // again at its end.
  const std::uint64_t page = pool.small ? kSmallBuffer : kLargeBuffer;
  const std::uint64_t capacity = std::max(options_.capacity, options_.limit);
  const std::uint64_t wanted = capacity + capacity / 8;
  const std::uint64_t pages = wanted / page + (wanted % page != 0 ? 1 : 0);
  if (pages > kMaxRequestBytes / page) return nullptr;  // a device of exabytes: no range that large
  const std::uint64_t range = pages * page;
  void* base = expandable_backing_->ReserveRange(range);
  if (base == nullptr) {
    request.backing_refused = true;
    return nullptr;
  }
  auto owned = std::make_unique<Segment>();
  Segment* segment = owned.get();
  segment->base = reinterpret_cast<std::uint64_t>(base);
  segment->size = range;
  segment->stream = request.stream;
  segment->pool = &pool;
  segment->expandable = true;
  segment->page = page;
  segment->registration = next_registration_++;
  segments_.push_back(std::move(owned));

  auto* candidate = new Block();
  candidate->address = segment->base;
  candidate->size = range;
  candidate->stream = request.stream;
  candidate->mapped = false;
  candidate->pool = &pool;
  candidate->segment = segment;
  candidate->registration = segment->registration;
  pool.unmapped.insert(candidate);

  stats_.address_space += range;
  ++stats_.regions;
  stats_.peak_address_space = std::max(stats_.peak_address_space, stats_.address_space);
  stats_.peak_regions = std::max(stats_.peak_regions, stats_.regions);
  if (sink_ != nullptr) EmitRange(traces::EventType::kAddressReserve, segment->base, range);
  return candidate;
}

// map_block: maps the pages under the first `bytes` of the unmapped block `to_map`; the rest stays
// unmapped. The mapped part merges with free neighbours and is cached.
bool PytorchCachingAllocator::MapBlock(Block* to_map, std::uint64_t bytes, bool* refused) {
  Segment& segment = *to_map->segment;
  const std::uint64_t page = segment.page;
  const std::uint64_t offset = to_map->address - segment.base;  // page-aligned: unmapped blocks are
  const std::uint64_t mapped_bytes = (bytes + page - 1) / page * page;
  if (mapped_bytes > options_.limit || stats_.reserved > options_.limit - mapped_bytes) return false;
  if (!expandable_backing_->Map(reinterpret_cast<void*>(segment.base), offset, mapped_bytes)) {
    *refused = true;
    return false;
  }
  Pool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  ++block_count_;
  const std::uint64_t address = to_map->address;
  if (mapped_bytes < to_map->size) {
    Block* rest = NewBlock(*to_map);
    rest->mapped = false;
    rest->address = address + mapped_bytes;
    rest->size = to_map->size - mapped_bytes;
    rest->prev = to_map;
    rest->next = to_map->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    to_map->next = rest;
    pool.unmapped.insert(rest);
    to_map->size = mapped_bytes;
  }
  TryMerge(to_map, to_map->prev);
  TryMerge(to_map, to_map->next);
  InsertFree(to_map);

  segment.mapped += mapped_bytes;
  stats_.reserved += mapped_bytes;
  ++stats_.maps;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  if (sink_ != nullptr) EmitRange(traces::EventType::kMap, address, mapped_bytes);
  return true;
}

// unmap_block: the whole pages inside the free block `block` are unmapped; a free head and tail
// of partial pages stay cached.
void PytorchCachingAllocator::UnmapBlock(Block* block) {
  Segment& segment = *block->segment;
  const std::uint64_t page = segment.page;
  const std::uint64_t offset = block->address - segment.base;
  const std::uint64_t first = (offset + page - 1) / page;
  const std::uint64_t end = (offset + block->size) / page;
  if (first >= end) return;
  Pool& pool = *block->pool;
  pool.blocks.erase(block);
  const std::uint64_t unmapped_address = segment.base + first * page;
  const std::uint64_t unmapped_size = (end - first) * page;
  expandable_backing_->Unmap(reinterpret_cast<void*>(segment.base), first * page, unmapped_size);

  if (const std::uint64_t before = unmapped_address - block->address; before > 0) {
    Block* head = NewBlock(*block);
    head->address = block->address;
    head->size = before;
    head->prev = block->prev;
    if (head->prev != nullptr) head->prev->next = head;
    head->next = block;
    block->prev = head;
    InsertFree(head);
    ++block_count_;
  }
  if (const std::uint64_t after = block->address + block->size - (unmapped_address + unmapped_size); after > 0) {
    Block* tail = NewBlock(*block);
    tail->address = unmapped_address + unmapped_size;
    tail->size = after;
    tail->next = block->next;
    if (tail->next != nullptr) tail->next->prev = tail;
    tail->prev = block;
    block->next = tail;
    InsertFree(tail);
    ++block_count_;
  }
  block->address = unmapped_address;
  block->size = unmapped_size;
  block->mapped = false;
  --block_count_;
  TryMerge(block, block->prev);
  TryMerge(block, block->next);
  pool.unmapped.insert(block);

  segment.mapped -= unmapped_size;
  stats_.reserved -= unmapped_size;
  ++stats_.unmaps;
  if (sink_ != nullptr) EmitRange(traces::EventType::kUnmap, unmapped_address, unmapped_size);
}

// release_available_cached_blocks (max_split_size set only): give back one oversize cached segment
// large enough for the request, else the largest ones until their sum is.
bool PytorchCachingAllocator::ReleaseAvailableCachedBlocks(const Request& request) {
  const std::uint64_t max_split = options_.settings.max_split_size;
  if (max_split == kNoMaxSplit) return false;
  Pool& pool = *request.pool;
  Block key;
  key.stream = request.stream;
  key.size = std::max(request.size, max_split);
  auto it = pool.blocks.lower_bound(&key);
  if (it != pool.blocks.end() && (*it)->stream == request.stream && !(*it)->segment->expandable) {
    if ((*it)->prev != nullptr || (*it)->next != nullptr) return false;  // never: oversize blocks are whole
    ReleaseBlock(*it);
    return true;
  }
  if (it == pool.blocks.begin()) return false;
  std::uint64_t released = 0;
  --it;  // the largest block of this stream
  while (released < key.size && (*it)->size >= max_split && (*it)->stream == request.stream) {
    const auto current = it;
    const bool first = current == pool.blocks.begin();
    if (!first) --it;
    Block* block = *current;
    if (!block->segment->expandable && block->prev == nullptr && block->next == nullptr) {
      released += block->size;
      ReleaseBlock(block);
    }
    if (first) break;
  }
  return released >= key.size;
}

// release_cached_blocks (before an OOM, and torch.cuda.empty_cache): every cached segment that is
// one free block goes back to the device, and the whole free pages of expandable segments are
// unmapped; a segment left with no mapped page gives back its address range.
void PytorchCachingAllocator::ReleaseCachedBlocks() {
  ++stats_.gc_runs;
  ReleaseBlocks(large_);
  ReleaseBlocks(small_);
}

void PytorchCachingAllocator::ReleaseBlocks(Pool& pool) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* block = *it;
    ++it;  // ReleaseBlock erases `block` only
    if (block->segment->expandable) {
      to_unmap.push_back(block);  // unmapping reshapes the set: later
    } else if (block->prev == nullptr && block->next == nullptr) {
      ReleaseBlock(block);
    }
  }
  for (Block* block : to_unmap) {
    UnmapBlock(block);
    if (!block->mapped && block->prev == nullptr && block->next == nullptr) ReleaseExpandableSegment(block);
  }
}

// release_block: cudaFree of a segment that is one free, cached block.
void PytorchCachingAllocator::ReleaseBlock(Block* block) {
  Segment* segment = block->segment;
  block->pool->blocks.erase(block);
  backing_.Release(reinterpret_cast<void*>(segment->base), segment->size, segment->stream);
  AllocatorStats& s = stats_;
  s.reserved -= segment->size;
  s.address_space -= segment->size;
  --s.regions;
  ++s.region_releases;
  --block_count_;
  if (sink_ != nullptr) EmitRange(traces::EventType::kRegionRelease, segment->base, segment->size);
  delete block;
  std::erase_if(segments_, [segment](const std::unique_ptr<Segment>& owned) { return owned.get() == segment; });
}

void PytorchCachingAllocator::ReleaseExpandableSegment(Block* block) {
  Segment* segment = block->segment;
  block->pool->unmapped.erase(block);
  expandable_backing_->ReleaseRange(reinterpret_cast<void*>(segment->base), segment->size);
  stats_.address_space -= segment->size;
  --stats_.regions;
  if (sink_ != nullptr) EmitRange(traces::EventType::kAddressRelease, segment->base, segment->size);
  delete block;
  std::erase_if(segments_, [segment](const std::unique_ptr<Segment>& owned) { return owned.get() == segment; });
}

// garbage_collect_cached_blocks: above garbage_collection_threshold x the limit, release unsplit
// cached segments of the large pool, the longest unused first (older than the average, repeated),
// until reserved is back under the threshold. Costs no synchronisation in PyTorch, so it runs
// before a new segment is made, not only before an OOM.
void PytorchCachingAllocator::GarbageCollectCachedBlocks() {
  const auto threshold = static_cast<std::uint64_t>(options_.settings.garbage_collection_threshold *
                                                    static_cast<double>(options_.limit));
  if (stats_.reserved <= threshold) return;
  const std::uint64_t target = stats_.reserved - threshold;
  const auto age = [this](const Block* b) { return large_.get_free_block_calls - b->gc_count_base; };
  const auto freeable = [](const Block* b) {
    return b->prev == nullptr && b->next == nullptr && !b->segment->expandable;
  };
  std::uint64_t total_age = 0;
  std::uint64_t count = 0;
  for (const Block* block : large_.blocks) {
    if (block->prev == nullptr && block->next == nullptr) {
      total_age += age(block);
      ++count;
    }
  }
  std::uint64_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && count > 0) {
    const double age_threshold = static_cast<double>(total_age) / static_cast<double>(count);
    freed = false;
    for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
      Block* block = *it;
      ++it;
      if (freeable(block) && static_cast<double>(age(block)) >= age_threshold) {
        freed = true;
        reclaimed += block->size;
        total_age -= age(block);
        --count;
        ReleaseBlock(block);
      }
    }
  }
}

void* PytorchCachingAllocator::ReportOom(const Request& request, std::uint64_t requested,
                                         const AllocOptions& options, OomReport* report) {
  traces::OomRecord numbers;
  numbers.request = requested;
  numbers.rounded = request.size;
  numbers.limit = options_.limit;
  numbers.reserved = stats_.reserved;
  numbers.in_use = stats_.in_use;
  numbers.live_requested = stats_.live_requested;
  numbers.free_in_regions = stats_.free_in_regions();
  numbers.largest_free = LargestFreeLocked();
  numbers.headroom = stats_.headroom();
  numbers.chunk_count = block_count_;
  numbers.region_count = stats_.regions;
  OomReport diagnosis = DiagnoseOom(options_.device, numbers, request.backing_refused);
  diagnosis.stream = options.stream;
  diagnosis.tag = options.tag;
  diagnosis.gc_ran = requested <= kMaxRequestBytes;  // cached segments were released first
  AddPytorchAdvice(diagnosis, options_.settings);
  ++stats_.total_ooms;
  if (sink_ != nullptr) EmitOom(diagnosis);
  // info, not warn: the caller gets the report; replays meet thousands.
  fragscope::Log().info("{}", diagnosis.Summary());
  last_oom_ = diagnosis;
  if (report != nullptr) *report = std::move(diagnosis);
  return nullptr;
}

void AddPytorchAdvice(OomReport& report, const PytorchSettings& settings) {
  if (report.cause() != OomCause::kFragmentation || settings.expandable_segments) return;
  report.suggestion =
      "set expandable_segments=on (PyTorch: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): "
      "segments then grow in place and the pages under free blocks are given back before an "
      "OOM; or " + report.suggestion;
}

std::uint64_t PytorchCachingAllocator::LargestFreeLocked() const {
  std::uint64_t largest = 0;
  for (const Pool* pool : {&small_, &large_}) {
    for (const Block* block : pool->blocks) largest = std::max(largest, block->size);
  }
  return largest;
}

[[noreturn]] void PytorchCachingAllocator::ThrowInvalidFree(void* ptr) const {
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  std::optional<FreedPlace> place;
  if (ptr != nullptr) {
    for (const Block* block : AllBlocksLocked()) {
      if (address < block->address || address >= block->address + block->size) continue;
      place = FreedPlace{block->address, block->allocated};
      break;
    }
  }
  fragscope::ThrowInvalidFree(options_.device, ptr, place);
}

}  // namespace fragscope::pytorch
