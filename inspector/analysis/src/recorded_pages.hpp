// A recorded OOM of a paging allocator, in pages: what the allocator's PageFacts said when it
// failed, rebuilt from the trace's state of memory at the oom event, so that `fragscope report`
// words a recorded paging OOM as the allocator did (stranded bytes in partly used pages, new pages
// needed, an exhausted address space), not in region terms. Internal to the analysis library.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {

// The page a trace's maps were made in: the largest power of two dividing `map_gcd` (every map and
// unmap's offset into its range and size), and for fragscope's own traces at most the page the
// allocator picks for `limit` (2 MiB up to a 16 TiB limit), should every map happen to be a multiple
// of a larger one. 0 when nothing was mapped into a range.
std::uint64_t RecordedPageBytes(std::uint64_t map_gcd, bool fragscope_trace, std::uint64_t limit);

// The page facts of a request of `rounded` bytes in `state`, whose address ranges (address_reserve)
// are `spaces`; nullopt when no live chunk or mapped piece lies in them (not a paging allocator).
std::optional<PageFacts> PageFactsAt(const MemoryState& state,
                                     const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spaces,
                                     std::uint64_t page_bytes, std::uint64_t rounded);

}  // namespace fragscope::analysis
