// The BFC allocator's hot path: best fit from the bins, split, record; free, coalesce, rebin.
//
// HOT PATH. Keep it short: one lock, no heap allocation, no system call, no logging. Everything
// that may allocate or call the backing (refilling the chunk pool, growing the pointer table, new
// regions, gc, OOM reports) is on the slow path in bfc_slow_path.cpp or behind an [[unlikely]]
// branch that runs a bounded number of times per million operations.
#include "bfc_allocator.hpp"

#include "fragscope/allocator/errors.hpp"

namespace fragscope::bfc {

void* BfcAllocator::TryAllocate(std::uint64_t bytes, const AllocOptions& options,
                                OomReport* report) {
  // The one size check (kMaxRequestBytes): below it nothing on either path can wrap.
  if (bytes > kMaxRequestBytes) [[unlikely]] return RefuseUnrepresentable(bytes, options, report);
  const std::uint64_t rounded = RoundUp(bytes);
  std::lock_guard guard(lock_);
  if (Chunk* chunk = bins_.FindBestFit(rounded)) [[likely]] {
    // Paging: memory exists only where pages are mapped. One or two word tests of the page map for
    // any chunk up to 128 MiB; mapping is the slow path's.
    if (!paging_ || pages_.Covers(chunk->address, rounded)) [[likely]] {
      return CarveInline(chunk, rounded, bytes, options);
    }
  }
  return AllocateSlow(rounded, bytes, options, report);
}

void* BfcAllocator::Carve(Chunk* chunk, std::uint64_t rounded, std::uint64_t requested,
                          const AllocOptions& options) {
  return CarveInline(chunk, rounded, requested, options);
}

// Takes `chunk` (free, at least `rounded` bytes) out of the bins, splits off the remainder and
// marks the front part in use.
inline void* BfcAllocator::CarveInline(Chunk* chunk, std::uint64_t rounded, std::uint64_t requested,
                                       const AllocOptions& options) {
  // Both reserves are refilled together, so a single check keeps the fast path to one branch.
  if (pool_.Empty() || live_.NeedsGrowth()) [[unlikely]] RefillForCarve();

  bins_.Erase(chunk);
  const std::uint64_t free_size = chunk->size;
  const std::uint64_t remainder = free_size - rounded;
  if (remainder >= kMinSplitRemainder &&
      (!options_.tensorflow_split || remainder >= rounded || remainder >= kTensorflowMaxInternalFragmentation)) {
    bins_.Insert(SplitOff(chunk, rounded));
    // Refill again only when the next Carve asks: the pool never runs dry inside one.
  }

  // Paging: the chunk's pages are no longer free to recycle (a word or two of the map). A cached
  // page lies wholly inside one free chunk (free neighbours coalesce), so a free chunk smaller
  // than a page has none: most carves of small chunks skip the map.
  if (paging_ && free_size >= pages_.page_bytes()) {
    const PageMap::Span span = pages_.SpanOf(chunk->address, chunk->size);
    cached_.ClearSpan(span.first, span.last);
  }

  chunk->requested = requested;
  chunk->alloc_id = next_alloc_id_++;
  chunk->stream = options.stream;
  chunk->tag = options.tag;
  ++chunk->region->live_chunks;
  live_.Insert(chunk);
  if (const std::uint64_t reach = chunk->address + chunk->size - chunk->region->base; reach > stats_.peak_high_water) {
    stats_.peak_high_water = reach;
  }

  AllocatorStats& s = stats_;
  s.in_use += chunk->size;
  s.live_requested += requested;
  ++s.allocations;
  ++s.total_allocs;
  if (s.in_use > s.peak_in_use) s.peak_in_use = s.in_use;
  if (s.live_requested > s.peak_live_requested) s.peak_live_requested = s.live_requested;
  if (s.allocations > s.peak_allocations) s.peak_allocations = s.allocations;

  if (sink_ != nullptr) [[unlikely]] EmitChunk(traces::EventType::kAlloc, *chunk);
  return reinterpret_cast<void*>(chunk->address);
}

void BfcAllocator::Free(void* ptr) {
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  std::lock_guard guard(lock_);
  Chunk* chunk = live_.Erase(address);
  if (chunk == nullptr) [[unlikely]] ThrowInvalidFree(ptr);  // state untouched

  if (sink_ != nullptr) [[unlikely]] EmitChunk(traces::EventType::kFree, *chunk);

  AllocatorStats& s = stats_;
  s.in_use -= chunk->size;
  s.live_requested -= chunk->requested;
  --s.allocations;
  ++s.total_frees;
  --chunk->region->live_chunks;

  chunk->requested = 0;
  chunk->alloc_id = 0;
  chunk->stream = 0;
  chunk->tag = traces::kNoTag;
  const std::uint64_t freed_at = chunk->address, freed_bytes = chunk->size;
  Chunk* merged = MergeAndBin(chunk);
  // Paging: the whole pages that no live chunk touches any more are given back (unmap=eager, slow
  // path) or kept for reuse and recycling (unmap=lazy).
  // Either way only a coalesced chunk of a page or more can hold a page that no live chunk touches.
  if (paging_ && merged->size >= pages_.page_bytes()) {
    if (unmap_eager_) [[unlikely]] UnmapFreedPages(freed_at, freed_bytes, merged);
    else CacheFreedPages(freed_at, freed_bytes, merged);
  }
}

// unmap=lazy, after a free: the pages the freed chunk touched that now lie wholly inside the
// coalesced free chunk join the cached pages. They are all mapped (no live chunk sits on an
// unmapped page), so the mapped bitmap is not read. A word or two of the map.
inline void BfcAllocator::CacheFreedPages(std::uint64_t address, std::uint64_t bytes, const Chunk* merged) {
  const std::uint64_t first = std::max(pages_.FirstPage(address), pages_.FirstWholePage(merged->address));
  const std::uint64_t end = std::min(pages_.EndPage(address, bytes),
                                     pages_.EndWholePage(merged->address, merged->size));
  cached_.Fill(first, end);
}

// Coalesces a just-freed chunk with its free neighbours at once and bins the result, which it returns.
inline Chunk* BfcAllocator::MergeAndBin(Chunk* chunk) {
  if (Chunk* prev = chunk->prev; prev != nullptr && !prev->in_use()) {
    bins_.Erase(prev);
    prev->size += chunk->size;
    prev->next = chunk->next;
    if (chunk->next != nullptr) chunk->next->prev = prev;
    else prev->region->last = prev;
    ReleaseChunkRecord(chunk);
    chunk = prev;
  }
  if (Chunk* next = chunk->next; next != nullptr && !next->in_use()) {
    bins_.Erase(next);
    chunk->size += next->size;
    chunk->next = next->next;
    if (next->next != nullptr) next->next->prev = chunk;
    else chunk->region->last = chunk;
    ReleaseChunkRecord(next);
  }
  bins_.Insert(chunk);
  // Under paging a free chunk spans unmapped address space: the largest free extent of memory is
  // measured on the slow path (LargestMappedFree) instead.
  if (!paging_ && chunk->size > stats_.peak_largest_free) stats_.peak_largest_free = chunk->size;
  return chunk;
}

// Slow path of Carve: runs once per ~1,000 splits or per doubling of the live set.
[[gnu::noinline]] void BfcAllocator::RefillForCarve() {
  if (pool_.Empty()) pool_.Refill();
  if (live_.NeedsGrowth()) live_.Grow();
}

}  // namespace fragscope::bfc
