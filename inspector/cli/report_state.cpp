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
#include "report_view.hpp"

namespace fragscope::cli {
namespace {

bool IsPytorch(const traces::TraceHeader& header) { return header.source.allocator.rfind("PyTorch", 0) == 0; }
bool IsTensorflow(const traces::TraceHeader& header) { return header.source.allocator.rfind("TensorFlow", 0) == 0; }

std::string Count(std::uint64_t n, const char* one) {
  return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s");
}

std::string Optional(const std::optional<std::uint64_t>& bytes) {
  return bytes ? FormatBytes(*bytes) : std::string("unknown");
}

// Reserved less in use where the evidence's own counts give both exactly; nullopt otherwise.
std::optional<std::uint64_t> FreeByItsCounts(const analysis::StateFindings& s) {
  if (!s.reserved || !s.in_use || s.in_use_at_least || *s.reserved < *s.in_use) return std::nullopt;
  return *s.reserved - *s.in_use;
}

std::string PageSizes(const analysis::StateFindings& s) {
  if (s.page_bytes_small == s.page_bytes_large) return fmt::format("pages of {}", FormatBytes(s.page_bytes_large));
  return fmt::format("pages of {} in segments of {}, {} in larger ones", FormatBytes(s.page_bytes_small),
                     FormatBytes(s.small_region_bytes), FormatBytes(s.page_bytes_large));
}

void PrintOne(const traces::TraceHeader& header, const analysis::StateFindings& s) {
  const bool pytorch = IsPytorch(header);
  const char* region = pytorch ? "segment" : "region";
  const auto* device = header.Device(s.device);
  fmt::print("device {}{}, {}:\n", s.device, device != nullptr && !device->name.empty() ? " (" + device->name + ")" : "",
             s.moment.empty() ? "one moment" : s.moment);
  // A cut chunk list gives lower bounds only: the listed in-use chunks and the listed regions.
  const bool cut = !s.layout_complete && (s.regions > 0 || s.chunks > 0);
  const bool in_use_bound = s.in_use && (s.in_use_at_least || (cut && !s.in_use_from_summary));
  const std::string in_use = in_use_bound ? "at least " + FormatBytes(*s.in_use) : Optional(s.in_use);
  // Regions hold at least what is listed, and what is in use and free besides.
  std::uint64_t reserved_bound = cut ? s.layout_reserved : 0;
  if (s.free_at_least) reserved_bound = std::max(reserved_bound, s.in_use.value_or(0) + *s.free_at_least);
  const std::string reserved = !s.reserved && reserved_bound > 0 ? "at least " + FormatBytes(reserved_bound)
                                                                 : Optional(s.reserved);
  std::string numbers = fmt::format("  in use {}{}, reserved {}{}, limit {}", in_use,
                                    s.in_use_from_summary && !s.in_use_at_least ? " (its own count)" : "", reserved,
                                    s.reserved_from_summary ? " (its own count)" : "", Optional(s.limit));
  if (s.max_in_use) numbers += fmt::format(", most ever in use {}", FormatBytes(*s.max_in_use));
  fmt::print("{}\n", numbers);
  if (s.regions == 0 && s.chunks == 0) {
    fmt::print("  no layout: the evidence lists no {}s or chunks\n", region);
    if (const auto free = FreeByItsCounts(s))
      fmt::print("  reserved but unallocated: {} (reserved less in use, by its own counts; where, it does not say)\n",
                 FormatBytes(*free));
  } else {
    fmt::print("  listed{}: {} of {}, {} of {}{}\n",
               s.layout_complete ? "" : " (incomplete: what follows counts only what is listed)",
               Count(s.regions, region), FormatBytes(s.layout_reserved), Count(s.chunks, "live chunk"),
               FormatBytes(s.layout_in_use),
               s.chunks_outside == 0 ? std::string()
                                     : fmt::format(" ({} of them outside every listed {})", s.chunks_outside, region));
    if (cut) {
      fmt::print("  not covered by a listed chunk: {} in {}{} (the chunk list is cut: not known to be free)\n",
                 FormatBytes(s.free_in_regions), Count(s.holes, "range"),
                 s.holes == 0 ? std::string() : fmt::format(", the largest {}", FormatBytes(s.largest_hole)));
    } else {
      fmt::print("  reserved but unallocated: {} in {}{}\n", FormatBytes(s.free_in_regions), Count(s.holes, "free hole"),
                 s.holes == 0 ? std::string() : fmt::format(", the largest {}", FormatBytes(s.largest_hole)));
    }
    if (cut) {
      // Regions, holes and pages of a cut listing are not known to be empty or free: nothing to add.
    } else if (pytorch) {
      fmt::print("  {} in {} with nothing allocated: what torch.cuda.empty_cache() would return\n",
                 FormatBytes(s.empty_region_bytes), Count(s.empty_regions, "segment"));
      // Advice only where it applies and is not applied already: free whole pages to give back,
      // and expandable segments off.
      const std::string* expandable = header.source.Setting("expandable_segments");
      const bool already = expandable != nullptr && (*expandable == "True" || *expandable == "true" || *expandable == "1");
      if (s.free_page_bytes == 0) {
        fmt::print("  no free whole page inside segments in use ({}): nothing a paging allocator could give back\n",
                   PageSizes(s));
      } else if (already) {
        fmt::print("  {} in {} inside segments in use ({}): expandable_segments is on, so PyTorch "
                   "unmaps them when it needs the memory\n",
                   FormatBytes(s.free_page_bytes), Count(s.free_pages, "free whole page"), PageSizes(s));
      } else {
        fmt::print("  {} in {} inside segments in use ({}): "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True would let PyTorch unmap them and use "
                   "the memory elsewhere\n",
                   FormatBytes(s.free_page_bytes), Count(s.free_pages, "free whole page"), PageSizes(s));
      }
    } else {
      fmt::print("  {} in {} with nothing allocated{}\n", FormatBytes(s.empty_region_bytes),
                 Count(s.empty_regions, region), IsTensorflow(header) ? " (TensorFlow's BFC allocator keeps its regions until the process ends)" : "");
      fmt::print("  {} in {} ({}) inside {}s in use: what a paging allocator could unmap\n",
                 FormatBytes(s.free_page_bytes), Count(s.free_pages, "free whole page"), PageSizes(s), region);
    }
  }
  if (s.free_at_least) {
    fmt::print("  free at least {} inside its {}s (with the free chunks its own summary lines show beyond the "
               "listed layout){}\n",
               FormatBytes(*s.free_at_least), region,
               s.largest_free ? fmt::format(", the largest at least {}", FormatBytes(*s.largest_free)) : std::string());
  }
  if (!s.missing.empty()) {
    fmt::print("  incomplete: {}{}\n", s.missing,
               s.in_use_from_summary && !s.layout_complete ? "; its own counts are taken as the truth" : "");
  }
}

}  // namespace

void PrintStateText(const ReportView& view) {
  const traces::TraceHeader& header = *view.header;
  fmt::print("kind       state: one moment, not a history (no overhead, minimal limit or replay: they need time)\n\n");
  for (const analysis::StateFindings& s : view.states) PrintOne(header, s);
}

nlohmann::json StateJson(const analysis::StateFindings& s) {
  const auto optional = [](const std::optional<std::uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  // What the layout adds up to is known only where it is whole: with no layout, or one the evidence
  // says is incomplete (whose uncovered ranges are not known to be free), those numbers are null,
  // not 0. Free in regions is then reserved less in use where the evidence's counts give both.
  const bool layout = s.regions > 0 || s.chunks > 0;
  const bool whole = layout && s.layout_complete;
  const auto of_layout = [whole](std::uint64_t v) { return whole ? nlohmann::json(v) : nlohmann::json(); };
  const std::optional<std::uint64_t> free = whole ? std::optional(s.free_in_regions) : FreeByItsCounts(s);
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
  return out;
}

}  // namespace fragscope::cli
