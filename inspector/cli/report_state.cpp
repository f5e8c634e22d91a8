// `fragscope report` of a state — one moment of memory (a PyTorch snapshot without trace events, a
// TensorFlow dump): the evidence's own numbers, what its layout shows, and what it lacks, in the
// source framework's words. Nothing that needs time (DESIGN.md, "Evidence kinds").
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/state_text.hpp"
#include "report_view.hpp"

namespace fragscope::cli {
namespace {

void PrintOne(const traces::TraceHeader& header, const analysis::StateFindings& s) {
  const analysis::StateText text = analysis::DescribeState(header, s);
  fmt::print("{}:\n", text.title);
  for (const std::string& line : text.lines) fmt::print("  {}\n", line);
}

}  // namespace

void PrintStateText(const ReportView& view) {
  const traces::TraceHeader& header = *view.header;
  fmt::print("kind       state: one moment, not a history (no overhead, minimal limit or replay: they need time)\n\n");
  for (const analysis::StateFindings& s : view.states) PrintOne(header, s);
  // A PyTorch snapshot with no segments and no trace list names no device; none is invented.
  if (view.devices.empty()) fmt::print("no device: the evidence describes none\n");
}

nlohmann::json StateJson(const analysis::StateFindings& s) {
  const auto optional = [](const std::optional<std::uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  // What the layout adds up to is known only where it is whole: with no layout, or one the evidence
  // says is incomplete (whose uncovered ranges are not known to be free), those numbers are null,
  // not 0. Free in regions is then reserved less in use where the evidence's counts give both.
  const bool layout = s.regions > 0 || s.chunks > 0;
  // A whole listing of nothing (a PyTorch snapshot with no segment) is a layout too: all 0.
  const bool whole = s.layout_complete && (layout || s.reserved == std::optional<std::uint64_t>(0));
  const auto of_layout = [whole](std::uint64_t v) { return whole ? nlohmann::json(v) : nlohmann::json(); };
  const std::optional<std::uint64_t> free = whole ? std::optional(s.free_in_regions) : analysis::FreeByOwnCounts(s);
  nlohmann::json out = {{"moment", s.moment},
                        {"in_use", optional(s.in_use)},
                        {"reserved", optional(s.reserved)},
                        {"limit", optional(s.limit)},
                        {"max_in_use", optional(s.max_in_use)},
                        {"largest_free", optional(s.largest_free)},
                        {"in_use_at_least", s.in_use_at_least},
                        {"free_at_least", optional(s.free_at_least)},
                        {"regions", s.regions},
                        {"chunks", s.chunks},
                        {"chunks_outside_regions", s.chunks_outside},
                        {"free_in_regions", optional(free)},
                        {"holes", of_layout(s.holes)},
                        {"largest_hole", of_layout(s.largest_hole)},
                        {"empty_regions", of_layout(s.empty_regions)},
                        {"empty_region_bytes", of_layout(s.empty_region_bytes)},
                        {"free_pages", of_layout(s.free_pages)},
                        {"free_page_bytes", of_layout(s.free_page_bytes)},
                        {"page_bytes_small", s.page_bytes_small},
                        {"page_bytes_large", s.page_bytes_large},
                        {"small_region_bytes", s.small_region_bytes},
                        {"layout_complete", s.layout_complete}};
  if (layout && !whole) {
    // The parts of the listed regions no listed chunk covers: free, or left out of the listing.
    out["uncovered_bytes"] = s.free_in_regions;
    out["uncovered_ranges"] = s.holes;
    out["largest_uncovered"] = s.largest_hole;
  }
  if (!s.missing.empty()) out["missing"] = s.missing;
  // The allocator's own counters (PyTorch's memory_summary()): null where the evidence has none.
  out["max_reserved"] = optional(s.max_reserved);
  out["non_releasable"] = optional(s.non_releasable);
  out["oom_count"] = optional(s.oom_count);
  out["alloc_retries"] = optional(s.alloc_retries);
  const auto pool = [&](const std::optional<traces::StateSummary::Pool>& p) {
    if (!p) return nlohmann::json();
    return nlohmann::json{{"in_use", optional(p->in_use)}, {"reserved", optional(p->reserved)},
                          {"non_releasable", optional(p->non_releasable)}};
  };
  out["pools"] = s.large_pool || s.small_pool ? nlohmann::json{{"large", pool(s.large_pool)}, {"small", pool(s.small_pool)}}
                                              : nlohmann::json();
  out["size_margin"] = s.size_margin;
  return out;
}

}  // namespace fragscope::cli
