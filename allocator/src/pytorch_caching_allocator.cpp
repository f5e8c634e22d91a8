// preset=pytorch, the common path: round, pick the pool, best fit, split, free and merge
// (PyTorch's malloc, get_free_block, should_split, alloc_found_block, free_block,
// try_merge_blocks). What happens when no cached block fits is in pytorch_slow_path.cpp.
#include "pytorch_caching_allocator.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "event_clock.hpp"
#include "fragscope/allocator/errors.hpp"

namespace fragscope::pytorch {
namespace {

// Divisions between two powers of two, as roundup_power2_next_division: 1200 with 4 divisions
// lies between 1024 and 2048, whose quarters are 1024, 1280, 1536, 1792: it rounds to 1280.
std::uint64_t RoundUpPower2Division(std::uint64_t size, std::uint64_t divisions) {
  if (std::has_single_bit(size)) return size;
  const std::uint64_t floor = std::bit_floor(size);
  const std::uint64_t step = floor >> std::bit_width(divisions - 1);  // floor / divisions
  if (step == 0) return floor << 1;
  const std::uint64_t down = size & ~(step - 1);
  return down == size ? size : down + step;
}

// PyTorch's roundup_power2_divisions(size): intervals start at 1 MiB; [0] holds everything below
// 2 MiB and [15] everything from 32 GiB.
std::uint64_t DivisionsFor(std::uint64_t size, const PytorchSettings& settings) {
  const auto log_size = static_cast<std::uint64_t>(std::bit_width(size) - 1);
  const std::uint64_t index = log_size > 20 ? std::min<std::uint64_t>(log_size - 20, 15) : 0;
  return settings.roundup_power2_divisions[index];
}

}  // namespace

std::uint64_t RoundSize(std::uint64_t size, const PytorchSettings& settings) {
  if (size < kMinBlockSize) return kMinBlockSize;
  const std::uint64_t divisions = DivisionsFor(size, settings);
  if (divisions > 1 && size > kMinBlockSize * divisions) return RoundUpPower2Division(size, divisions);
  return (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::uint64_t AllocationSize(std::uint64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// Best fit order (BlockComparatorSizeCounterAddress): stream, size, then the older segment, then
// the lower address. A search key has registration 0, before every real block of its size.
bool PytorchCachingAllocator::BySizeAgeAddress::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  if (a->registration != b->registration) return a->registration < b->registration;
  return a->address < b->address;
}

bool PytorchCachingAllocator::ByStreamAddress::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  return a->address < b->address;
}

void* PytorchCachingAllocator::TryAllocate(std::uint64_t bytes, const AllocOptions& options,
                                           OomReport* report) {
  std::lock_guard lock(mutex_);
  Request request;
  request.stream = options.stream;
  if (bytes > kMaxRequestBytes) {  // cannot be rounded: request-too-large, as it is
    request.size = request.alloc_size = bytes;
    request.pool = &large_;
    return ReportOom(request, bytes, options, report);
  }
  const PytorchSettings& settings = options_.settings;
  request.size = RoundSize(bytes, settings);
  request.pool = &PoolFor(request.size);
  request.alloc_size = AllocationSize(request.size);

  bool found = GetFreeBlock(request);
  if (!found) {
    if (settings.garbage_collection_threshold > 0.0) GarbageCollectCachedBlocks();
    // A new segment; else release oversize cached blocks (max_split_size only) and retry; else
    // release every unsplit cached segment (and unmap free pages) and retry.
    found = AllocBlock(request) || (ReleaseAvailableCachedBlocks(request) && AllocBlock(request));
    if (!found) {
      ReleaseCachedBlocks();
      found = AllocBlock(request);
    }
  }
  if (!found) return ReportOom(request, bytes, options, report);
  return reinterpret_cast<void*>(AllocFoundBlock(request, bytes, options)->address);
}

bool PytorchCachingAllocator::GetFreeBlock(Request& request) {
  Pool& pool = *request.pool;
  const PytorchSettings& settings = options_.settings;
  if (settings.garbage_collection_threshold > 0.0) ++pool.get_free_block_calls;
  Block key;
  key.stream = request.stream;
  key.size = request.size;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != request.stream) return false;
  if ((*it)->segment->expandable) {
    // In an expandable segment a block before the unmapped tail can grow: best fit ranks it by
    // what it could become, so a smaller-looking block that cannot grow as far may be the better
    // fit.
    const auto expandable_size = [](const Block* b) {
      return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
    };
    auto next = std::next(it);
    while ((*it)->segment->expandable && next != pool.blocks.end() &&
           (*next)->stream == request.stream && expandable_size(*next) < expandable_size(*it)) {
      it = next++;
    }
  }
  const std::uint64_t max_split = settings.max_split_size;
  // An oversize block (>= max_split_size) serves only requests of its own kind, within
  // max_non_split_rounding of its size.
  if (request.size < max_split && (*it)->size >= max_split) return false;
  if (request.size >= max_split && (*it)->size >= request.size + kLargeBuffer) return false;
  request.block = *it;
  pool.blocks.erase(it);
  return true;
}

bool PytorchCachingAllocator::ShouldSplit(const Block& block, std::uint64_t size) const {
  const std::uint64_t remaining = block.size - size;
  if (block.pool->small || options_.settings.expandable_segments) return remaining >= kMinBlockSize;
  return size < options_.settings.max_split_size && remaining > kSmallSize;
}

PytorchCachingAllocator::Block* PytorchCachingAllocator::AllocFoundBlock(Request& request,
                                                                         std::uint64_t requested,
                                                                         const AllocOptions& options) {
  Block* block = request.block;
  if (ShouldSplit(*block, request.size)) {
    // The front becomes the allocation; the rest stays cached under the old record.
    Block* remaining = block;
    block = NewBlock(*remaining);
    block->address = remaining->address;
    block->size = request.size;
    block->prev = remaining->prev;
    if (block->prev != nullptr) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->address += request.size;
    remaining->size -= request.size;
    InsertFree(remaining);
    ++block_count_;
  }
  block->allocated = true;
  block->requested = requested;
  block->alloc_id = next_alloc_id_++;
  block->tag = options.tag;
  live_.emplace(block->address, block);

  AllocatorStats& s = stats_;
  s.in_use += block->size;
  s.live_requested += requested;
  ++s.allocations;
  ++s.total_allocs;
  s.peak_in_use = std::max(s.peak_in_use, s.in_use);
  s.peak_live_requested = std::max(s.peak_live_requested, s.live_requested);
  s.peak_allocations = std::max(s.peak_allocations, s.allocations);
  s.peak_high_water = std::max(s.peak_high_water, block->address + block->size - block->segment->base);
  if (sink_ != nullptr) EmitBlock(traces::EventType::kAlloc, *block);
  return block;
}

void PytorchCachingAllocator::Free(void* ptr) {
  std::lock_guard lock(mutex_);
  const auto it = live_.find(reinterpret_cast<std::uint64_t>(ptr));
  if (it == live_.end()) ThrowInvalidFree(ptr);
  Block* block = it->second;
  live_.erase(it);
  FreeBlock(block);
}

// free_block: the block is cached at once (the emulation has no CUDA events to wait for) and
// merged with free neighbours of its segment.
void PytorchCachingAllocator::FreeBlock(Block* block) {
  if (sink_ != nullptr) EmitBlock(traces::EventType::kFree, *block);
  AllocatorStats& s = stats_;
  s.in_use -= block->size;
  s.live_requested -= block->requested;
  --s.allocations;
  ++s.total_frees;
  block->allocated = false;
  block->requested = 0;
  block->alloc_id = 0;
  block->tag = traces::kNoTag;
  TryMerge(block, block->prev);
  TryMerge(block, block->next);
  InsertFree(block);
}

// try_merge_blocks: `src`, a neighbour of `dst` in the same state (free, and mapped or not alike),
// is absorbed into `dst`. `dst` is in no set while this runs. Returns the bytes absorbed.
std::uint64_t PytorchCachingAllocator::TryMerge(Block* dst, Block* src) {
  if (src == nullptr || src->allocated || src->mapped != dst->mapped) return 0;
  if (src->mapped) {
    src->pool->blocks.erase(src);
    --block_count_;
  } else {
    src->pool->unmapped.erase(src);
  }
  if (dst->prev == src) {
    dst->address = src->address;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  const std::uint64_t absorbed = src->size;
  dst->size += absorbed;
  DeleteBlock(src);
  return absorbed;
}

void PytorchCachingAllocator::InsertFree(Block* block) {
  block->gc_count_base = block->pool->get_free_block_calls;
  block->pool->blocks.insert(block);
}

PytorchCachingAllocator::Block* PytorchCachingAllocator::NewBlock(const Block& from) {
  auto* block = new Block();
  block->stream = from.stream;
  block->mapped = from.mapped;
  block->pool = from.pool;
  block->segment = from.segment;
  block->registration = from.registration;
  return block;
}

void PytorchCachingAllocator::DeleteBlock(Block* block) { delete block; }

}  // namespace fragscope::pytorch
