#include "fragscope/allocator/oom_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fragscope/allocator/size.hpp"
#include "fragscope/traces/byte_math.hpp"

namespace fragscope {
namespace {

// Evidence from elsewhere may hold any numbers: sums in the words saturate instead of wrapping.
std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
  return traces::CheckedAdd(a, b).value_or(UINT64_MAX);
}

// Fragmentation under paging: the free bytes below the limit are there, but part of them sit in
// pages that live chunks also use (stranded), so the request's own pages do not fit in the rest.
void ExplainPagedFragmentation(OomReport& report) {
  const traces::OomRecord& n = report.numbers;
  const PageFacts& p = report.pages;
  const std::string page = FormatBytes(p.page_bytes);
  if (p.address_space_exhausted) {
    report.explanation = fmt::format(
        "no free range of the paging region's address space is {} long: the address space is "
        "fragmented (memory is not: {} in use of the {} limit)",
        FormatBytes(n.rounded), FormatBytes(n.in_use), FormatBytes(n.limit));
    report.suggestion = "free long-lived blocks in the order they were allocated, or raise the "
                        "limit (the address range is a multiple of it)";
    return;
  }
  const std::uint64_t need = traces::CheckedMul(p.new_pages_needed, p.page_bytes).value_or(UINT64_MAX);
  report.explanation = fmt::format(
      "{} are free below the limit ({} headroom, {} inside mapped pages) but {} of them are "
      "stranded in {} partly used {} pages; the request of {} needs {} new page{} ({}) wherever "
      "it goes, more than the headroom",
      FormatBytes(SaturatingAdd(n.free_in_regions, n.headroom)), FormatBytes(n.headroom),
      FormatBytes(n.free_in_regions), FormatBytes(p.stranded_bytes), p.partly_used_pages, page,
      FormatBytes(n.rounded), p.new_pages_needed, p.new_pages_needed == 1 ? "" : "s",
      FormatBytes(need));
  report.suggestion = fmt::format(
      "raise the limit by {} (fragscope min-limit finds the smallest limit by replay); stranded "
      "bytes shrink when small and large tensors do not share pages",
      FormatBytes(need - std::min(need, n.headroom)));
}

}  // namespace

OomReport DiagnoseOom(std::uint32_t device, const traces::OomRecord& numbers,
                      bool backing_refused, const PageFacts* pages) {
  OomReport report;
  report.device = device;
  if (pages != nullptr) report.pages = *pages;
  report.numbers = numbers;
  report.numbers.cause = traces::ClassifyOom(numbers, backing_refused);
  const traces::OomRecord& n = report.numbers;
  const std::string rounded = FormatBytes(n.rounded);
  switch (n.cause) {
    case OomCause::kRequestTooLarge:
      if (!traces::IsRepresentableSize(n.request)) {
        report.explanation = fmt::format(
            "one request of {} bytes ({}) is more than any device has (fragscope serves at most "
            "4 EiB)", n.request, FormatBytes(n.request));
        report.suggestion = "the size is almost certainly wrong: look for an overflow, a negative "
                            "number cast to unsigned or an uninitialized size in the caller";
        break;
      }
      report.explanation = fmt::format(
          "one request of {} alone exceeds the limit of {}", rounded, FormatBytes(n.limit));
      report.suggestion = fmt::format(
          "no policy can serve it: raise the limit to at least {} (with {} already in use: {}), "
          "or split the tensor",
          rounded, FormatBytes(n.in_use), FormatBytes(SaturatingAdd(n.in_use, n.rounded)));
      break;
    case OomCause::kCapacity:
      report.explanation = fmt::format(
          "live data ({} in use) plus the request ({}) exceed the limit of {} by {}",
          FormatBytes(n.in_use), rounded, FormatBytes(n.limit),
          FormatBytes(SaturatingAdd(n.in_use, n.rounded) - std::min(n.limit, SaturatingAdd(n.in_use, n.rounded))));
      report.suggestion = fmt::format(
          "no policy can fit it: hold less live data at this point (smaller batch, free tensors "
          "sooner, check for a leak) or raise the limit to at least {}",
          FormatBytes(SaturatingAdd(n.in_use, n.rounded)));
      break;
    case OomCause::kBacking:
      if (report.pages.on() && report.pages.new_pages_needed > 0) {
        // Under paging the device is asked for pages, not a region: say how many, and that many
        // bytes are what it must have free.
        const PageFacts& p = report.pages;
        const std::uint64_t need = traces::CheckedMul(p.new_pages_needed, p.page_bytes).value_or(UINT64_MAX);
        report.explanation = fmt::format(
            "the device refused to map {} new page{} ({}) for the request of {} although {} of the "
            "{} limit are mapped: the device has less free memory than the limit assumes (another "
            "process holds it)",
            p.new_pages_needed, p.new_pages_needed == 1 ? "" : "s", FormatBytes(need), rounded,
            FormatBytes(n.reserved), FormatBytes(n.limit));
        report.suggestion = fmt::format(
            "set the limit to what the device really has free, or stop the other process; at least "
            "{} more must be available to the allocator",
            FormatBytes(need));
        break;
      }
      report.explanation = fmt::format(
          "the device refused a new region for {} although {} of the {} limit are reserved: the "
          "device has less free memory than the limit assumes (another process holds it)",
          rounded, FormatBytes(n.reserved), FormatBytes(n.limit));
      // A region does not grow in place: the request is served from a new region, which must fit
      // whole in what the device has free (a free hole smaller than the request does not help).
      report.suggestion = fmt::format(
          "set the limit to what the device really has free, or stop the other process; regions do "
          "not grow in place, so the device must have at least {} free for a new region that holds "
          "the request",
          rounded);
      break;
    case OomCause::kUnknown:
      // Never from the numbers (ClassifyOom decides between the four above); evidence from
      // elsewhere sets it, and the analysis library words it.
      report.explanation = "cause unknown: the evidence lacks what would decide it";
      report.suggestion = "replay the trace under the limit the run had";
      break;
    case OomCause::kFragmentation:
      if (report.pages.on()) {
        ExplainPagedFragmentation(report);
        break;
      }
      {
      // A hole a few bytes short reads "7.50 MiB, less than 7.50 MiB" when rounded for display:
      // then both sizes are given in bytes as well.
      const std::uint64_t largest = std::max(n.largest_free, n.headroom);
      std::string largest_text = FormatBytes(largest), request_text = rounded;
      if (largest_text == request_text) {
        largest_text += fmt::format(" ({} bytes)", largest);
        request_text += fmt::format(" ({} bytes)", n.rounded);
      }
      report.explanation = fmt::format(
          "{} are free ({} inside {} regions, {} headroom below the limit) but the largest "
          "contiguous range is {}, less than the request of {}",
          FormatBytes(SaturatingAdd(n.free_in_regions, n.headroom)), FormatBytes(n.free_in_regions),
          n.region_count, FormatBytes(n.headroom), largest_text, request_text);
      report.suggestion = fmt::format(
          "raise the limit by {} so a new region fits (fragscope min-limit finds the smallest "
          "limit by replay)",
          FormatBytes(n.rounded - std::min(n.rounded, n.headroom)));
      break;
      }
  }
  return report;
}

void AddPolicyAdvice(OomReport& report, const PolicyFacts& facts) {
  if (report.cause() != OomCause::kFragmentation) return;
  // gc releases empty regions; a paging allocator gives back free pages before an OOM whatever gc
  // says, so turning gc on would change nothing there.
  if (!facts.gc && !facts.expandable && report.numbers.free_in_regions > 0) {
    report.suggestion = "turn gc on (gc=on): empty regions would be released and the request "
                        "retried; or " + report.suggestion;
  } else if (!facts.expandable && facts.backing_can_expand) {
    report.suggestion = "try expandable=on (the default where the backing can page): pages are "
                        "mapped only under live data, so holes between blocks strand no memory; "
                        "or " + report.suggestion;
  }
}

std::string OomReport::Summary() const {
  return fmt::format("out of memory on device {}: {}: {}", device, traces::ToString(cause()),
                     explanation);
}

std::string OomReport::Describe() const {
  const traces::OomRecord& n = numbers;
  std::string out = Summary() + "\n";
  // A number the evidence did not give is left out, never printed as 0 (OomRecord::present).
  auto row = [&out, &n](std::string_view name, traces::OomField field, std::uint64_t bytes) {
    if (n.Has(field)) out += fmt::format("  {:<18} {:>14}\n", name, FormatBytes(bytes));
  };
  row("request", traces::kOomRequest, n.request);
  row("rounded", traces::kOomRounded, n.rounded);
  row("limit", traces::kOomLimit, n.limit);
  row("reserved", traces::kOomReserved, n.reserved);
  row("in use", traces::kOomInUse, n.in_use);
  row("live requested", traces::kOomLiveRequested, n.live_requested);
  row("free in regions", traces::kOomFreeInRegions, n.free_in_regions);
  row("largest free", traces::kOomLargestFree, n.largest_free);
  row("headroom", traces::kOomHeadroom, n.headroom);
  if (n.Has(traces::kOomChunkCount)) out += fmt::format("  {:<18} {:>14}\n", "chunks", n.chunk_count);
  if (n.Has(traces::kOomRegionCount)) out += fmt::format("  {:<18} {:>14}\n", "regions", n.region_count);
  if (gc_ran) out += fmt::format("  gc ran and released {}\n", FormatBytes(gc_released));
  out += "  suggestion: " + suggestion + "\n";
  return out;
}

std::string ToJson(const OomReport& r) {
  const traces::OomRecord& n = r.numbers;
  // Every key is always there; a number the evidence did not give is null (OomRecord::present).
  auto number = [&n](traces::OomField field, std::uint64_t value) {
    return n.Has(field) ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  return nlohmann::json{{"device", r.device},
                        {"request", number(traces::kOomRequest, n.request)},
                        {"rounded", number(traces::kOomRounded, n.rounded)},
                        {"limit", number(traces::kOomLimit, n.limit)},
                        {"reserved", number(traces::kOomReserved, n.reserved)},
                        {"in_use", number(traces::kOomInUse, n.in_use)},
                        {"live_requested", number(traces::kOomLiveRequested, n.live_requested)},
                        {"free_in_regions", number(traces::kOomFreeInRegions, n.free_in_regions)},
                        {"largest_free", number(traces::kOomLargestFree, n.largest_free)},
                        {"headroom", number(traces::kOomHeadroom, n.headroom)},
                        {"chunk_count", number(traces::kOomChunkCount, n.chunk_count)},
                        {"region_count", number(traces::kOomRegionCount, n.region_count)},
                        {"cause", traces::ToString(n.cause)},
                        {"explanation", r.explanation},
                        {"suggestion", r.suggestion}}
      .dump();
}

}  // namespace fragscope
