// preset=pytorch: PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) emulated as
// a policy of ours, from its documented behaviour ("CUDA memory management",
// PYTORCH_CUDA_ALLOC_CONF) and its public source; our own code. docs/allocator.md, "Presets".
//
// What it reproduces:
//   - sizes round up to 512 B (or to a power-of-two division, roundup_power2_divisions);
//   - two pools: small (<= 1 MiB, packed into 2 MiB segments) and large (1-10 MiB requests get a
//     20 MiB segment, larger ones a segment of the request rounded up to 2 MiB);
//   - best fit per stream and pool, ordered by (size, segment age, address); a block is split when
//     the remainder is >= 512 B (small pool, expandable segments) or > 1 MiB (large pool, and only
//     below max_split_size); oversize blocks (>= max_split_size) serve requests within
//     max_non_split_rounding (20 MiB) of their size only;
//   - on failure: garbage_collection_threshold's aged-block release, a new segment, release of
//     oversize cached blocks (max_split_size only), release of every unsplit cached segment, retry;
//   - expandable_segments: one address range per stream and pool (1 1/8 of the device), pages of
//     2 MiB (small) and 20 MiB (large) mapped at the lowest address that fits, free pages unmapped
//     only before an OOM (or on empty_cache).
// Where it knowingly differs: frees complete at once (no CUDA events, no record_stream), so a
// block is reusable at its free; no CUDA graph pools; the limit is a hard cap on mapped bytes,
// where PyTorch checks its memory fraction against the allocation size.
//
// Layout: this header and pytorch_caching_allocator.cpp (malloc, free, best fit, split, merge);
// pytorch_slow_path.cpp (segments, expandable segments, release, gc, OOM);
// pytorch_inspect.cpp (stats, snapshots, invariants, events).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/allocator/pytorch_sizes.hpp"

namespace fragscope::pytorch {

struct PytorchOptions {
  std::uint32_t device = 0;
  std::uint64_t limit = 0;
  std::uint64_t capacity = 0;  // the device's bytes: an expandable segment spans 1 1/8 of it
  PytorchSettings settings;
};

// For a fragmentation OOM without expandable segments, PyTorch's own advice first.
void AddPytorchAdvice(OomReport& report, const PytorchSettings& settings);

class PytorchCachingAllocator final : public DeviceAllocator {
 public:
  // Throws BackingError when expandable segments are asked of a backing that cannot page, or
  // whose page does not divide PyTorch's segment pages.
  PytorchCachingAllocator(Backing& backing, const PytorchOptions& options);
  ~PytorchCachingAllocator() override;
  PytorchCachingAllocator(const PytorchCachingAllocator&) = delete;
  PytorchCachingAllocator& operator=(const PytorchCachingAllocator&) = delete;

  void* TryAllocate(std::uint64_t bytes, const AllocOptions& options, OomReport* report) override;
  void Free(void* ptr) override;
  AllocatorStats Stats() const override;
  void ResetPeaks() override;
  AllocatorSnapshot Snapshot() const override;
  std::optional<OomReport> LastOom() const override;
  // torch.cuda.empty_cache(): release_cached_blocks.
  std::uint64_t ReleaseFreeRegions() override;
  void CheckInvariants() const override;
  void SetSink(traces::EventSink* sink) override;
  void Mark(std::string_view name) override;
  std::uint32_t device() const override { return options_.device; }
  std::uint64_t limit() const override { return options_.limit; }

 private:
  struct Pool;
  struct Segment;

  // A piece of a segment: allocated, free (cached, in its pool) or, in an expandable segment,
  // unmapped address space. Blocks of a segment are linked in address order and tile it.
  struct Block {
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    std::uint64_t alloc_id = 0;
    std::uint64_t stream = 0;
    traces::TagId tag = traces::kNoTag;
    bool allocated = false;
    bool mapped = true;            // false only for unmapped address space of an expandable segment
    Block* prev = nullptr;
    Block* next = nullptr;
    Pool* pool = nullptr;
    Segment* segment = nullptr;
    std::uint64_t registration = 0;   // the segment's age: ties in best fit go to older segments
    std::uint64_t gc_count_base = 0;  // pool's get_free_block calls when the block was cached
  };
  struct BySizeAgeAddress {
    bool operator()(const Block* a, const Block* b) const;
  };
  struct ByStreamAddress {
    bool operator()(const Block* a, const Block* b) const;
  };
  struct Pool {
    bool small = false;
    std::set<Block*, BySizeAgeAddress> blocks;    // free, mapped
    std::set<Block*, ByStreamAddress> unmapped;   // expandable segments' unmapped ranges
    std::uint64_t get_free_block_calls = 0;       // garbage_collection_threshold's clock
  };
  // One cudaMalloc, or one expandable segment's address range.
  struct Segment {
    std::uint64_t base = 0;
    std::uint64_t size = 0;          // bytes of the segment; the whole range when expandable
    std::uint64_t stream = 0;
    Pool* pool = nullptr;
    bool expandable = false;
    std::uint64_t page = 0;          // expandable: bytes per mapped page (2 or 20 MiB)
    std::uint64_t mapped = 0;        // expandable: mapped bytes
    std::uint64_t registration = 0;
  };
  // What one malloc looks for (AllocParams).
  struct Request {
    std::uint64_t size = 0;          // rounded
    std::uint64_t stream = 0;
    Pool* pool = nullptr;
    std::uint64_t alloc_size = 0;    // the segment to ask for
    Block* block = nullptr;          // found or made
    bool backing_refused = false;
  };

  // --- malloc and free (pytorch_caching_allocator.cpp) ---
  Pool& PoolFor(std::uint64_t size) { return size <= kSmallSize ? small_ : large_; }
  bool GetFreeBlock(Request& request);
  bool ShouldSplit(const Block& block, std::uint64_t size) const;
  Block* AllocFoundBlock(Request& request, std::uint64_t requested, const AllocOptions& options);
  void FreeBlock(Block* block);
  std::uint64_t TryMerge(Block* dst, Block* src);
  void InsertFree(Block* block);
  Block* NewBlock(const Block& from);
  void DeleteBlock(Block* block);

  // --- segments, release, gc, OOM (pytorch_slow_path.cpp) ---
  bool AllocBlock(Request& request);
  Block* TryAllocateExpandable(Request& request);
  Block* FindExpandableBlock(Request& request);
  bool MapBlock(Block* to_map, std::uint64_t bytes, bool* refused);
  void UnmapBlock(Block* block);
  bool ReleaseAvailableCachedBlocks(const Request& request);
  void ReleaseCachedBlocks();
  void ReleaseBlocks(Pool& pool);
  void ReleaseBlock(Block* block);
  void ReleaseExpandableSegment(Block* block);
  void GarbageCollectCachedBlocks();
  void* ReportOom(const Request& request, std::uint64_t requested, const AllocOptions& options,
                  OomReport* report);
  std::uint64_t LargestFreeLocked() const;
  std::vector<const Block*> AllBlocksLocked() const;  // by address
  [[noreturn]] void ThrowInvalidFree(void* ptr) const;

  // --- inspection and events (pytorch_inspect.cpp) ---
  void CheckInvariantsLocked() const;
  void EmitBlock(traces::EventType type, const Block& block);
  void EmitRange(traces::EventType type, std::uint64_t address, std::uint64_t size);
  void EmitOom(const OomReport& report);

  Backing& backing_;
  ExpandableBacking* expandable_backing_ = nullptr;
  const PytorchOptions options_;
  mutable std::mutex mutex_;
  Pool small_;
  Pool large_;
  std::unordered_map<std::uint64_t, Block*> live_;           // allocated blocks by address
  std::vector<std::unique_ptr<Segment>> segments_;           // in creation order
  std::uint64_t next_registration_ = 1;
  std::uint64_t next_alloc_id_ = 1;
  std::uint64_t block_count_ = 0;                            // mapped blocks, free and allocated
  AllocatorStats stats_;
  std::optional<OomReport> last_oom_;
  traces::EventSink* sink_ = nullptr;
};

}  // namespace fragscope::pytorch
