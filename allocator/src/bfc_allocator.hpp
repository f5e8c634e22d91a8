// The BFC (best-fit with coalescing) caching allocator of one device. See docs/allocator.md.
//
// Layout of the code: bfc_allocator.cpp holds the hot path (best fit, split, free, coalesce);
// bfc_slow_path.cpp growth, gc and OOM diagnosis; bfc_paging.cpp the paging region (address space
// apart from mapped pages: expandable=on); bfc_inspect.cpp stats, snapshots, the invariant checker
// and event emission for a newly attached sink.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "best_fit_bins.hpp"
#include "chunk.hpp"
#include "page_map.hpp"
#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/allocator/paging.hpp"
#include "pointer_table.hpp"
#include "spin_lock.hpp"

namespace fragscope::bfc {

struct BfcOptions {
  std::uint32_t device = 0;
  std::uint64_t limit = 0;              // most this allocator may reserve
  bool growth = true;                   // 2 MiB first region, doubling
  std::uint64_t preallocate_bytes = 0;  // one region reserved at construction; 0 = none
  bool gc = true;
  bool expandable = false;              // paging: one address range, pages mapped under live chunks
  bool unmap_eager = false;             // paging: unmap whole free pages at once, not under pressure
  // TensorFlow's split rule: a best-fit chunk is split only when it is at least twice the request
  // or the remainder is at least kTensorflowMaxInternalFragmentation; otherwise the whole chunk
  // is handed out (internal waste). Off: split whenever the remainder is kMinSplitRemainder.
  bool tensorflow_split = false;
  // After gc released regions, the doubling restarts from what is still reserved (off: TensorFlow
  // keeps its next region size).
  bool restart_growth_after_gc = true;
  // growth=on: the size of the first region (then doubling). TensorFlow without allow_growth is
  // growth with a first region of the whole limit.
  std::uint64_t first_region_bytes = 0;  // 0: kFirstRegionBytes
};

// TensorFlow's default max_internal_fragmentation_bytes (fragmentation_fraction unset).
inline constexpr std::uint64_t kTensorflowMaxInternalFragmentation = std::uint64_t{128} << 20;


inline constexpr std::uint64_t kFirstRegionBytes = 2 * 1024 * 1024;
inline constexpr std::uint64_t kRegionRoundingBytes = 2 * 1024 * 1024;  // growth=off region sizes
// A best-fit chunk is split when the remainder is at least this: one rounding unit. Coalescing
// repairs slivers as soon as a neighbour is freed, while an unsplit remainder would be internal
// waste that no other request can ever use.
inline constexpr std::uint64_t kMinSplitRemainder = kRoundingUnit;

class BfcAllocator final : public DeviceAllocator {
 public:
  // Throws BackingError when the preallocation or the expandable range cannot be obtained.
  BfcAllocator(Backing& backing, const BfcOptions& options);
  ~BfcAllocator() override;
  BfcAllocator(const BfcAllocator&) = delete;
  BfcAllocator& operator=(const BfcAllocator&) = delete;

  void* TryAllocate(std::uint64_t bytes, const AllocOptions& options, OomReport* report) override;
  void Free(void* ptr) override;

  AllocatorStats Stats() const override;
  void ResetPeaks() override;
  AllocatorSnapshot Snapshot() const override;
  std::optional<OomReport> LastOom() const override;
  std::uint64_t ReleaseFreeRegions() override;
  void CheckInvariants() const override;
  void SetSink(traces::EventSink* sink) override;
  void Mark(std::string_view name) override;
  std::uint32_t device() const override { return options_.device; }
  std::uint64_t limit() const override { return options_.limit; }

 private:
  // --- hot path (bfc_allocator.cpp) ---
  // CarveInline is Carve's body, inlined into TryAllocate (a call saved and restored a dozen
  // registers: about 20 instructions a pair); the slow paths in other files call Carve.
  void* Carve(Chunk* chunk, std::uint64_t rounded, std::uint64_t requested,
              const AllocOptions& options);
  [[gnu::always_inline]] void* CarveInline(Chunk* chunk, std::uint64_t rounded, std::uint64_t requested,
                                           const AllocOptions& options);
  void RefillForCarve();
  [[gnu::always_inline]] Chunk* MergeAndBin(Chunk* chunk);  // Free's alone
  // Cuts `chunk` after its first `front_bytes`: the back becomes a new chunk record, linked after
  // it in the region, and is returned. Binning is the caller's (the chunk must not be binned while
  // its size changes). Precondition: the pool is not empty; 0 < front_bytes < chunk->size.
  [[gnu::always_inline]] Chunk* SplitOff(Chunk* chunk, std::uint64_t front_bytes) {
    static_assert(sizeof(Chunk) == 104, "a field was added to Chunk: SplitOff must set it");
    Chunk* back = pool_.TakeUninitialized();
    back->address = chunk->address + front_bytes;
    back->size = chunk->size - front_bytes;
    back->requested = 0;  // free: Chunk's defaults, set here field by field
    back->alloc_id = 0;
    back->stream = 0;
    back->tag = traces::kNoTag;
    back->bin_class = 0;
    back->bin_sub = 0;
    back->region = chunk->region;
    back->prev = chunk;
    back->next = chunk->next;
    if (chunk->next != nullptr) chunk->next->prev = back;
    else chunk->region->last = back;
    chunk->next = back;
    chunk->size = front_bytes;
    ++chunk_count_;
    return back;
  }
  [[gnu::always_inline]] void ReleaseChunkRecord(Chunk* chunk) {
    pool_.Give(chunk);
    --chunk_count_;
  }

  // --- slow path (bfc_slow_path.cpp) ---
  void* RefuseUnrepresentable(std::uint64_t requested, const AllocOptions& options,
                              OomReport* report);
  void* AllocateSlow(std::uint64_t rounded, std::uint64_t requested, const AllocOptions& options,
                     OomReport* report);
  bool Extend(std::uint64_t rounded, bool* backing_refused);
  bool ExtendWithRegion(std::uint64_t rounded, bool* backing_refused);
  std::uint64_t NextRegionBytes(std::uint64_t rounded) const;
  Region* AddRegion(std::uint64_t base, std::uint64_t size);
  std::uint64_t ReleaseFreeRegionsLocked();
  void* ReportOom(OomReport diagnosis, OomReport* report);  // counts, records, logs; nullptr
  // `gc_ran`: the slow path gave memory back before giving up (released empty regions, or unmapped
  // free pages), `gc_released` bytes of it.
  OomReport Diagnose(std::uint64_t rounded, std::uint64_t requested, const AllocOptions& options,
                     bool backing_refused, bool gc_ran, std::uint64_t gc_released) const;
  [[noreturn]] void ThrowInvalidFree(void* ptr) const;

  // --- paging (bfc_paging.cpp) ---
  void InitPaging();
  void ReleasePaging() noexcept;
  void* AllocateOnPages(std::uint64_t rounded, std::uint64_t requested, const AllocOptions& options,
                        OomReport* report);
  bool MapPages(std::uint64_t address, std::uint64_t bytes, bool* backing_refused);
  std::uint64_t NewPagesFor(std::uint64_t address, std::uint64_t bytes) const;
  Chunk* SplitAt(Chunk* chunk, std::uint64_t address);
  std::uint64_t UnmapFreePages();
  void RecyclePages(std::uint64_t wanted, std::uint64_t keep_first, std::uint64_t keep_end);
  void UnmapPages(std::uint64_t first_page, std::uint64_t end_page);
  [[gnu::noinline]] void UnmapFreedPages(std::uint64_t address, std::uint64_t bytes, const Chunk* merged);
  void CacheFreedPages(std::uint64_t address, std::uint64_t bytes, const Chunk* merged);
  std::uint64_t LargestMappedFree() const;
  PageFacts StrandedPages(std::uint64_t rounded) const;
  void CheckPagesLocked() const;

  // --- inspection and events (bfc_inspect.cpp) ---
  void CheckInvariantsLocked() const;
  void EmitChunk(traces::EventType type, const Chunk& chunk);
  void EmitRegion(traces::EventType type, std::uint64_t address, std::uint64_t size);
  void EmitOom(const OomReport& report);

  Backing& backing_;
  ExpandableBacking* expandable_backing_ = nullptr;
  const BfcOptions options_;

  mutable SpinLock lock_;  // the one lock: every public call takes it
  BestFitBins bins_;
  PointerTable live_;
  ChunkPool pool_;
  std::map<std::uint64_t, std::unique_ptr<Region>> regions_;  // by base address
  Region* expandable_region_ = nullptr;  // the paging region, when expandable=on
  bool paging_ = false;
  bool unmap_eager_ = false;
  PageMap pages_;                        // mapped pages of the paging region
  PageBits cached_;  // mapped pages no live chunk touches (unmap=lazy keeps them); not counted
  std::uint64_t next_region_bytes_ = kFirstRegionBytes;  // growth policy state
  std::uint64_t next_alloc_id_ = 1;
  AllocatorStats stats_;  // counters and peaks; largest_free and chunk counts filled on read
  std::uint64_t chunk_count_ = 0;
  std::optional<OomReport> last_oom_;
  traces::EventSink* sink_ = nullptr;
};

}  // namespace fragscope::bfc
