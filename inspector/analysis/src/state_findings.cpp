#include "fragscope/analysis/state_findings.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

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
    f.max_reserved = summary.max_reserved;
    f.non_releasable = summary.non_releasable;
    f.oom_count = summary.oom_count;
    f.alloc_retries = summary.alloc_retries;
    f.large_pool = summary.large_pool;
    f.small_pool = summary.small_pool;
    f.size_margin = summary.size_margin;
    f.line = summary.line;
    // The holes of an incomplete layout include ranges its listing left out: no largest free of
    // its own (the evidence's, a lower bound, where it gives one).
    f.largest_free = summary.largest_free                        ? summary.largest_free
                     : f.regions > 0 && summary.layout_complete ? std::optional(f.largest_hole)
                                                                : std::nullopt;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<std::string> CounterSentences(const StateFindings& s) {
  using traces::FormatBytes;
  std::vector<std::string> out;
  if (s.max_reserved) out.push_back(fmt::format("most ever reserved {}", FormatBytes(*s.max_reserved)));
  if (s.non_releasable && s.reserved) {
    // PyTorch's inactive split bytes: free blocks cut from segments whose other blocks are live.
    out.push_back(fmt::format(
        "non-releasable: {} of the {} reserved is free inside segments that also hold live blocks (PyTorch's "
        "\"Non-releasable memory\", fragmentation in its terms: torch.cuda.empty_cache() cannot return it, and "
        "a request larger than each free piece cannot use it)",
        FormatBytes(*s.non_releasable), FormatBytes(*s.reserved)));
  } else if (s.non_releasable) {
    out.push_back(fmt::format("non-releasable: {} is free inside segments that also hold live blocks (PyTorch's "
                              "\"Non-releasable memory\", fragmentation in its terms)",
                              FormatBytes(*s.non_releasable)));
  }
  const auto pool = [](const char* name, const std::optional<traces::StateSummary::Pool>& p) {
    const auto bytes = [](const std::optional<std::uint64_t>& v) { return v ? FormatBytes(*v) : std::string("-"); };
    return fmt::format("{} pool in use {}, reserved {}, non-releasable {}", name, bytes(p->in_use),
                       bytes(p->reserved), bytes(p->non_releasable));
  };
  if (s.large_pool && s.small_pool) {
    out.push_back(fmt::format("by pool: {}; {} (blocks of at most 1 MiB)", pool("large", s.large_pool),
                              pool("small", s.small_pool)));
  }
  if (s.oom_count) {
    const std::uint64_t ooms = *s.oom_count;
    const std::string retries =
        s.alloc_retries ? fmt::format(", and it freed its cached blocks to retry the device's malloc {} time{}",
                                      *s.alloc_retries, *s.alloc_retries == 1 ? "" : "s")
                        : std::string();
    out.push_back(fmt::format("the allocator had raised {} by then{} (its own counts, since the process started or "
                              "its statistics were reset)",
                              ooms == 0 ? std::string("no out-of-memory error")
                                        : fmt::format("{} out-of-memory error{}", ooms, ooms == 1 ? "" : "s"),
                              retries));
  }
  return out;
}

}  // namespace fragscope::analysis
