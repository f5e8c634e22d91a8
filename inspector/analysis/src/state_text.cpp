#include "fragscope/analysis/state_text.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"

namespace fragscope::analysis {
namespace {

bool IsPytorch(const traces::TraceHeader& header) { return header.source.allocator.rfind("PyTorch", 0) == 0; }
bool IsTensorflow(const traces::TraceHeader& header) { return header.source.allocator.rfind("TensorFlow", 0) == 0; }

std::string Count(std::uint64_t n, const char* one) { return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s"); }

std::string Optional(const std::optional<std::uint64_t>& bytes) {
  return bytes ? FormatBytes(*bytes) : std::string("unknown");
}

std::string PageSizes(const StateFindings& s) {
  if (s.page_bytes_small == s.page_bytes_large) return fmt::format("pages of {}", FormatBytes(s.page_bytes_large));
  return fmt::format("pages of {} in segments of {}, {} in larger ones", FormatBytes(s.page_bytes_small),
                     FormatBytes(s.small_region_bytes), FormatBytes(s.page_bytes_large));
}

// What a whole layout adds up to beside its free bytes: regions a cache flush returns, and free
// pages a paging allocator could unmap, in the source framework's words.
void AddRegionsAndPages(const traces::TraceHeader& header, const StateFindings& s, const char* region,
                        std::vector<std::string>& lines) {
  if (!IsPytorch(header)) {
    lines.push_back(fmt::format("{} in {} with nothing allocated{}", FormatBytes(s.empty_region_bytes),
                                Count(s.empty_regions, region),
                                IsTensorflow(header)
                                    ? " (TensorFlow's BFC allocator keeps its regions until the process ends)"
                                    : ""));
    lines.push_back(fmt::format("{} in {} ({}) inside {}s in use: what a paging allocator could unmap",
                                FormatBytes(s.free_page_bytes), Count(s.free_pages, "free whole page"), PageSizes(s),
                                region));
    return;
  }
  lines.push_back(fmt::format("{} in {} with nothing allocated: what torch.cuda.empty_cache() would return",
                              FormatBytes(s.empty_region_bytes), Count(s.empty_regions, "segment")));
  // Advice only where it applies and is not applied already: free whole pages to give back, and
  // expandable segments off.
  const std::string* expandable = header.source.Setting("expandable_segments");
  const bool already = expandable != nullptr && (*expandable == "True" || *expandable == "true" || *expandable == "1");
  if (s.free_page_bytes == 0) {
    lines.push_back(fmt::format(
        "no free whole page inside segments in use ({}): nothing a paging allocator could give back", PageSizes(s)));
  } else if (already) {
    lines.push_back(fmt::format("{} in {} inside segments in use ({}): expandable_segments is on, so PyTorch "
                                "unmaps them when it needs the memory",
                                FormatBytes(s.free_page_bytes), Count(s.free_pages, "free whole page"), PageSizes(s)));
  } else {
    lines.push_back(fmt::format("{} in {} inside segments in use ({}): "
                                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True would let PyTorch unmap them and use "
                                "the memory elsewhere",
                                FormatBytes(s.free_page_bytes), Count(s.free_pages, "free whole page"), PageSizes(s)));
  }
}

}  // namespace

std::optional<std::uint64_t> FreeByOwnCounts(const StateFindings& s) {
  if (!s.reserved || !s.in_use || s.in_use_at_least || *s.reserved < *s.in_use) return std::nullopt;
  return *s.reserved - *s.in_use;
}

StateText DescribeState(const traces::TraceHeader& header, const StateFindings& s) {
  StateText out;
  const char* region = IsPytorch(header) ? "segment" : "region";
  const auto* device = header.Device(s.device);
  out.title = fmt::format("device {}{}, {}", s.device,
                          device != nullptr && !device->name.empty() ? " (" + device->name + ")" : "",
                          s.moment.empty() ? "one moment" : s.moment);
  // A cut chunk list gives lower bounds only: the listed in-use chunks and the listed regions.
  const bool cut = !s.layout_complete && (s.regions > 0 || s.chunks > 0);
  // A lower bound by the evidence's word or because its listing is cut (StateFindings).
  const std::string in_use = s.in_use && s.in_use_at_least ? "at least " + FormatBytes(*s.in_use) : Optional(s.in_use);
  // Regions hold at least what is listed, and what is in use and free besides (in use by its own
  // count where the listing is cut).
  std::uint64_t reserved_bound = cut ? s.layout_reserved : 0;
  if (s.free_at_least || cut)
    reserved_bound = std::max(reserved_bound, s.in_use.value_or(0) + s.free_at_least.value_or(0));
  const std::string reserved = !s.reserved && reserved_bound > 0 ? "at least " + FormatBytes(reserved_bound)
                                                                 : Optional(s.reserved);
  std::string numbers = fmt::format("in use {}{}, reserved {}{}, limit {}", in_use,
                                    s.in_use_from_summary && !s.in_use_at_least ? " (its own count)" : "", reserved,
                                    s.reserved_from_summary ? " (its own count)" : "", Optional(s.limit));
  if (s.max_in_use) numbers += fmt::format(", most ever in use {}", FormatBytes(*s.max_in_use));
  out.lines.push_back(std::move(numbers));
  if (s.regions == 0 && s.chunks == 0 && s.layout_complete && s.reserved == std::optional<std::uint64_t>(0)) {
    // A whole listing of nothing (a PyTorch snapshot with no segment): not a layout left out.
    out.lines.push_back(fmt::format("nothing reserved: the evidence lists no {}s, and its listing is whole", region));
  } else if (s.regions == 0 && s.chunks == 0) {
    out.lines.push_back(fmt::format("no layout: the evidence lists no {}s or chunks", region));
    if (const auto free = FreeByOwnCounts(s)) {
      out.lines.push_back(fmt::format(
          "reserved but unallocated: {} (reserved less in use, by its own counts; where, it does not say)",
          FormatBytes(*free)));
    }
  } else {
    out.lines.push_back(fmt::format(
        "listed{}: {} of {}, {} of {}{}", s.layout_complete ? "" : " (incomplete: what follows counts only what is listed)",
        Count(s.regions, region), FormatBytes(s.layout_reserved), Count(s.chunks, "live chunk"),
        FormatBytes(s.layout_in_use),
        s.chunks_outside == 0 ? std::string()
                              : fmt::format(" ({} of them outside every listed {})", s.chunks_outside, region)));
    const std::string largest =
        s.holes == 0 ? std::string() : fmt::format(", the largest {}", FormatBytes(s.largest_hole));
    if (cut) {
      // Regions, holes and pages of a cut listing are not known to be empty or free: nothing more.
      out.lines.push_back(fmt::format("not covered by a listed chunk: {} in {}{} (the chunk list is cut: not known to "
                                      "be free)",
                                      FormatBytes(s.free_in_regions), Count(s.holes, "range"), largest));
    } else {
      out.lines.push_back(fmt::format("reserved but unallocated: {} in {}{}", FormatBytes(s.free_in_regions),
                                      Count(s.holes, "free hole"), largest));
      AddRegionsAndPages(header, s, region, out.lines);
    }
  }
  // The allocator's own counters where the evidence gives them (PyTorch's memory_summary()).
  for (std::string& sentence : CounterSentences(s)) out.lines.push_back(std::move(sentence));
  if (s.free_at_least) {
    out.lines.push_back(fmt::format("free at least {} inside its {}s (the free chunks it shows, listed or only in its "
                                    "own summary lines){}",
                                    FormatBytes(*s.free_at_least), region,
                                    s.largest_free ? fmt::format(", the largest at least {}", FormatBytes(*s.largest_free))
                                                   : std::string()));
  }
  if (!s.missing.empty()) {
    out.lines.push_back(fmt::format("incomplete: {}{}", s.missing,
                                    s.in_use_from_summary && !s.layout_complete ? "; its own counts are taken as the truth"
                                                                                : ""));
  }
  return out;
}

}  // namespace fragscope::analysis
