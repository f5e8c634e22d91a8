#include "fragscope/analysis/state_findings.hpp"

#include <algorithm>

namespace fragscope::analysis {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// The index of the event whose seq is `seq` (readers number a state's events in order); the last
// event at or before it when none has it exactly.
std::uint64_t IndexOfSeq(const TimelineModel& model, std::uint64_t seq) {
  std::uint64_t lo = 0, hi = model.event_count();
  while (lo < hi) {  // first index whose seq is above `seq`
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (model.event(mid).seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo == 0 ? 0 : lo - 1;
}

// Whole pages of `page` bytes, aligned to `base`, inside [begin, end).
std::uint64_t WholePages(std::uint64_t base, std::uint64_t begin, std::uint64_t end, std::uint64_t page) {
  if (page == 0 || end <= begin) return 0;
  const std::uint64_t first = (begin - base + page - 1) / page;
  const std::uint64_t last = (end - base) / page;
  return last > first ? last - first : 0;
}

}  // namespace

PageRule PageRuleFor(const traces::SourceFacts& source) {
  if (source.allocator.rfind("PyTorch", 0) == 0) return {2 * kMiB, 2 * kMiB, 20 * kMiB};
  return {0, 2 * kMiB, 2 * kMiB};
}

std::vector<StateFindings> FindStates(const TimelineModel& model, const std::vector<std::uint32_t>& devices) {
  const traces::TraceHeader& header = model.header();
  const PageRule rule = PageRuleFor(header.source);
  std::vector<StateFindings> out;
  for (std::size_t i = 0; i < header.source.states.size() && i < kMaxStates; ++i) {
    const traces::StateSummary& summary = header.source.states[i];
    if (std::find(devices.begin(), devices.end(), summary.device) == devices.end()) continue;
    StateFindings f;
    f.device = summary.device;
    f.moment = summary.moment;
    f.layout_complete = summary.layout_complete;
    f.missing = summary.missing;
    f.page_bytes_small = rule.page_bytes_small;
    f.page_bytes_large = rule.page_bytes_large;
    f.small_region_bytes = rule.small_region_bytes;
    // A state whose evidence listed no layout (a dump that printed only numbers) keeps its summary.
    if (model.event_count() > 0) {
      f.event_index = IndexOfSeq(model, summary.at_seq);
      const MemoryState state = model.StateAt(summary.device, f.event_index);
      f.regions = state.regions.size();
      f.layout_in_use = state.in_use;
      f.layout_reserved = state.reserved;
      f.free_in_regions = state.free_in_regions;
      f.largest_hole = state.largest_hole;
      for (const RegionState& region : state.regions) {
        f.chunks += region.chunks.size();
        f.holes += region.holes.size();
        if (region.chunks.empty()) {
          ++f.empty_regions;
          f.empty_region_bytes += region.size;
          continue;
        }
        const std::uint64_t page =
            region.size <= rule.small_region_bytes ? rule.page_bytes_small : rule.page_bytes_large;
        for (const Hole& hole : region.holes) {
          const std::uint64_t pages = WholePages(region.address, hole.address, hole.address + hole.size, page);
          f.free_pages += pages;
          f.free_page_bytes += pages * page;
        }
      }
      f.chunks += state.outside_regions.size();
      f.chunks_outside = state.outside_regions.size();
    }
    const bool has_layout = f.regions > 0 || f.chunks > 0;
    f.in_use_from_summary = summary.in_use.has_value();
    f.in_use = summary.in_use ? summary.in_use : has_layout ? std::optional(f.layout_in_use) : std::nullopt;
    // What a cut listing holds in use is a lower bound too: the chunks it left out are in use or
    // free, nobody knows (the report's text said "at least" while its JSON said false).
    f.in_use_at_least = summary.in_use_at_least ||
                        (f.in_use && !f.in_use_from_summary && has_layout && !summary.layout_complete);
    f.requested_known = summary.requested_known;
    f.free_at_least = summary.free_at_least;
    f.reserved_from_summary = summary.reserved.has_value();
    // The listed regions stand for reserved only when the listing is whole: a cut dump whose own
    // counters give no reserved figure leaves it unknown (its listed regions may hold less than
    // the in-use count it did print).
    f.reserved = summary.reserved                          ? summary.reserved
                 : f.regions > 0 && summary.layout_complete ? std::optional(f.layout_reserved)
                                                            : std::nullopt;
    f.limit = summary.limit;
    if (!f.limit) {
      if (const auto* d = header.Device(summary.device); d != nullptr && d->limit > 0) f.limit = d->limit;
    }
    f.max_in_use = summary.max_in_use;
    // The holes of an incomplete layout include ranges its listing left out: no largest free of
    // its own (the evidence's, a lower bound, where it gives one).
    f.largest_free = summary.largest_free                        ? summary.largest_free
                     : f.regions > 0 && summary.layout_complete ? std::optional(f.largest_hole)
                                                                : std::nullopt;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace fragscope::analysis
