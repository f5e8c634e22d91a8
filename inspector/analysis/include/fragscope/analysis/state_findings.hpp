// What a state shows — one moment of a device's memory: a PyTorch snapshot without trace events, a
// TensorFlow dump. The evidence's own numbers first (its summary is the truth where the layout it
// listed is incomplete), then what the layout adds up to: free memory inside regions and in how
// many holes, regions with nothing allocated, and free whole pages a paging allocator could give
// back. Nothing here needs time: a state gets no overhead, no minimal limit and no replay
// (DESIGN.md, "Evidence kinds").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fragscope/analysis/timeline.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

struct StateFindings {
  std::uint32_t device = 0;
  std::string moment;                       // "at the OOM on line 412", "when the snapshot was taken"
  std::uint64_t event_index = 0;            // the layout is the model's state after this event
  // The evidence's word where it gave one, else the layout's; absent when neither knows.
  std::optional<std::uint64_t> in_use, reserved, limit, max_in_use, largest_free;
  bool in_use_from_summary = false;         // in_use is the evidence's summary, not the layout's sum
  bool reserved_from_summary = false;
  // in_use is a lower bound: the evidence's summary says so (traces::StateSummary), or in_use is
  // what a cut listing holds (the chunks it left out are in use or free, nobody knows).
  bool in_use_at_least = false;
  // Free bytes inside the regions, at least: the free chunks the evidence's own summary lines show
  // beyond its listed layout (TensorFlow's bin lines and Chunk State table); absent when none do.
  std::optional<std::uint64_t> free_at_least;
  // The layout (what the evidence listed).
  std::uint64_t regions = 0;
  std::uint64_t chunks = 0;                 // live chunks
  std::uint64_t chunks_outside = 0;         // of them, outside every listed region
  std::uint64_t layout_in_use = 0;
  std::uint64_t layout_reserved = 0;
  std::uint64_t free_in_regions = 0;        // reserved but unallocated, in the layout
  std::uint64_t holes = 0;                  // free ranges inside regions
  std::uint64_t largest_hole = 0;
  // Regions with nothing allocated: what a cache flush returns (torch.cuda.empty_cache()).
  std::uint64_t empty_regions = 0;
  std::uint64_t empty_region_bytes = 0;
  // Free whole pages inside regions that hold something: what a paging allocator (PyTorch's
  // expandable segments, fragscope's paging) could unmap. Pages are aligned to the region start,
  // page_bytes_small for regions of at most small_region_bytes, page_bytes_large for the others.
  std::uint64_t free_page_bytes = 0;
  std::uint64_t free_pages = 0;
  std::uint64_t page_bytes_small = 0;
  std::uint64_t page_bytes_large = 0;
  std::uint64_t small_region_bytes = 0;
  bool layout_complete = true;
  // The layout's chunks carry what their owners requested (traces::StateSummary): false, their
  // requested sizes (and LOAD) are unknown, not their chunk sizes.
  bool requested_known = true;
  std::string missing;                      // what the evidence lacks, in words
  // The allocator's own counters, where the evidence prints them (traces::StateSummary: PyTorch's
  // memory_summary()).
  std::optional<std::uint64_t> max_reserved, non_releasable, oom_count, alloc_retries;
  std::optional<traces::StateSummary::Pool> large_pool, small_pool;
  std::uint64_t size_margin = 0;            // sizes rounded down: the truth less than this above
  std::uint64_t line = 0;                   // the log line of the moment; 0 where none
};

// The allocator's own counters in plain words, one sentence each, for the report and the
// inspector: non-releasable memory as the fragmentation it is, the most ever reserved, the split
// by pool, the out-of-memory and retry counts. Empty where the evidence prints none of them.
std::vector<std::string> CounterSentences(const StateFindings& state);

// The page sizes a paging allocator of the evidence's source would unmap in (PyTorch's expandable
// segments map 2 MiB pages in small-pool segments and 20 MiB in large ones; everything else 2 MiB,
// the granularity of cuMemCreate on current GPUs).
struct PageRule {
  std::uint64_t small_region_bytes = 0;  // regions of at most this size use page_bytes_small
  std::uint64_t page_bytes_small = 0;
  std::uint64_t page_bytes_large = 0;
};
PageRule PageRuleFor(const traces::SourceFacts& source);

// At most this many moments are examined (each costs a state reconstruction): far more than any
// real evidence holds (one per dump in a log); a header listing more is hostile or broken.
inline constexpr std::size_t kMaxStates = 4096;

// Findings for every state the header lists (the first kMaxStates) (traces::SourceFacts::states) on one of `devices`,
// in order; the layout of each is the model's state after the event with the state's at_seq.
std::vector<StateFindings> FindStates(const TimelineModel& model, const std::vector<std::uint32_t>& devices);

}  // namespace fragscope::analysis
