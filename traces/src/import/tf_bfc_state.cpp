// The allocator state at a TensorFlow BFC OOM, from a parsed dump: regions, totals, the
// cross-checks of chunks against the Stats block and the bin lines, and the OOM cause.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "tf_bfc_internal.hpp"
#include "tf_text.hpp"

namespace fragscope::traces {
namespace {

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) { return CheckedAdd(a, b).value_or(UINT64_MAX); }

// A region that a trace can hold: at most kMaxBytes, ending inside the 64-bit address space; else
// an error at `line` and false (the region is left out).
bool RegionFits(const TfBfcRegion& r, std::size_t line, const char* what, const Warner& warn) {
  if (!IsRepresentableSize(r.size)) {
    warn.Error(line, fmt::format("{} at {:#x}: {}", what, r.address, OversizeMessage(r.size)));
    return false;
  }
  if (!CheckedAdd(r.address, r.size)) {
    warn.Error(line, fmt::format("{} at {:#x} of {} bytes runs past the end of the 64-bit address space",
                                 what, r.address, r.size));
    return false;
  }
  return true;
}

// Regions from "Next region of size" lines (their chunks follow them) and, for chunks listed
// without such lines, from contiguity: chunks that touch form one region.
void BuildRegions(TfBfcDump& d, const Warner& warn) {
  std::vector<TfBfcRegion> regions;
  const std::size_t first_printed = d.regions.empty() ? d.chunks.size() : d.regions.front().first_chunk;
  for (std::size_t i = 0; i < d.regions.size(); ++i) {
    TfBfcRegion r = d.regions[i];
    const std::size_t end = i + 1 < d.regions.size() ? d.regions[i + 1].first_chunk : d.chunks.size();
    if (r.first_chunk >= end) {
      warn(d.line, fmt::format("a region of size {} is printed without chunks: its address is "
                               "unknown, left out", r.size));
      continue;
    }
    r.address = d.chunks[r.first_chunk].address;
    const std::uint64_t region_end = CheckedAdd(r.address, r.size).value_or(UINT64_MAX);
    // Each chunk is at most kMaxBytes and ends inside the address space (checked where parsed);
    // their sum is checked here. A chunk listed after the region but outside its printed range
    // belongs to a region whose line is not in the log (a cut list): it is kept, outside every
    // listed region, and the range it is not in is not counted as its.
    std::uint64_t sum = 0;
    bool contiguous = true;
    bool overflow = false;
    std::size_t outside = 0;
    const TfBfcChunk* first_outside = nullptr;
    const TfBfcChunk* previous = nullptr;
    for (std::size_t c = r.first_chunk; c < end; ++c) {
      const TfBfcChunk& chunk = d.chunks[c];
      if (chunk.address < r.address || chunk.address >= region_end || chunk.size > region_end - chunk.address) {
        if (outside++ == 0) first_outside = &chunk;
        continue;
      }
      if (const auto next = CheckedAdd(sum, chunk.size)) sum = *next;
      else overflow = true;
      if (previous != nullptr && previous->address + previous->size != chunk.address) contiguous = false;
      previous = &chunk;
    }
    if (outside > 0)
      warn(first_outside->line,
           fmt::format("{} chunk{} listed after the region at {:#x} (line {}) lie{} outside its {} bytes, the first "
                       "at {:#x}: kept outside every listed region (the region that holds {} is not in the log)",
                       outside, outside == 1 ? "" : "s", r.address, r.line, outside == 1 ? "s" : "", r.size,
                       first_outside->address, outside == 1 ? "it" : "them"));
    if (overflow || !IsRepresentableSize(sum)) {
      warn.Error(d.chunks[r.first_chunk].line,
                 fmt::format("the chunks listed for the region at {:#x} (line {}) add up to {}: more "
                             "than 4 EiB ({} bytes), the largest size fragscope represents",
                             r.address, r.line,
                             overflow ? std::string("more than 2^64 bytes") : fmt::format("{} bytes", sum),
                             kMaxBytes));
      continue;
    }
    if (!contiguous)
      warn(d.chunks[r.first_chunk].line,
           fmt::format("the chunks of the region at {:#x} do not follow each other", r.address));
    if (sum != r.size)
      warn(d.chunks[r.first_chunk].line,
           fmt::format("the chunks listed for the region at {:#x} cover {} of its {} bytes{}", r.address,
                       sum, r.size, sum < r.size ? " (the rest is not in the log)" : ""));
    r.size = std::max(r.size, sum);
    if (RegionFits(r, r.line, "the region", warn)) regions.push_back(r);
  }
  if (first_printed > 0) {
    std::vector<TfBfcChunk> loose(d.chunks.begin(),
                                  d.chunks.begin() + static_cast<std::ptrdiff_t>(first_printed));
    std::sort(loose.begin(), loose.end(),
              [](const TfBfcChunk& a, const TfBfcChunk& b) { return a.address < b.address; });
    // A region of touching chunks above 4 EiB is an error. (Chunks at one address, reported
    // below, can make the sum run past the span of the chunks, even past 2^64: saturated.)
    std::vector<std::size_t> first_line;  // per inferred region, the line of its first chunk
    const std::size_t before = regions.size();
    for (std::size_t c = 0; c < loose.size(); ++c) {
      if (c > 0 && loose[c - 1].address + loose[c - 1].size == loose[c].address) {
        regions.back().size = CheckedAdd(regions.back().size, loose[c].size).value_or(UINT64_MAX);
        continue;
      }
      if (c > 0 && loose[c].address == loose[c - 1].address) continue;  // duplicate, reported below
      TfBfcRegion r;
      r.address = loose[c].address;
      r.size = loose[c].size;
      regions.push_back(r);
      first_line.push_back(loose[c].line);
    }
    std::vector<TfBfcRegion> fitting(regions.begin(),
                                     regions.begin() + static_cast<std::ptrdiff_t>(before));
    for (std::size_t i = before; i < regions.size(); ++i)
      if (RegionFits(regions[i], first_line[i - before], "the chunks that touch from the one", warn))
        fitting.push_back(regions[i]);
    regions = std::move(fitting);
  }
  std::sort(d.chunks.begin(), d.chunks.end(),
            [](const TfBfcChunk& a, const TfBfcChunk& b) { return a.address < b.address; });
  std::vector<TfBfcChunk> unique;
  unique.reserve(d.chunks.size());
  for (const TfBfcChunk& c : d.chunks) {
    if (!unique.empty() && unique.back().address + unique.back().size > c.address) {
      warn(c.line, fmt::format("chunk at {:#x} overlaps the chunk at {:#x} (line {}): left out",
                               c.address, unique.back().address, unique.back().line));
      continue;
    }
    unique.push_back(c);
  }
  d.chunks = std::move(unique);
  std::sort(regions.begin(), regions.end(),
            [](const TfBfcRegion& a, const TfBfcRegion& b) { return a.address < b.address; });
  std::vector<TfBfcRegion> kept;
  for (TfBfcRegion& r : regions) {
    if (!kept.empty() && kept.back().address + kept.back().size > r.address) {
      warn(d.line, fmt::format("region at {:#x} overlaps the region at {:#x}: left out", r.address,
                               kept.back().address));
      continue;
    }
    const auto first = std::lower_bound(
        d.chunks.begin(), d.chunks.end(), r.address,
        [](const TfBfcChunk& c, std::uint64_t a) { return c.address < a; });
    auto last = first;
    while (last != d.chunks.end() && last->address + last->size <= r.address + r.size) ++last;
    r.first_chunk = static_cast<std::size_t>(first - d.chunks.begin());
    r.chunk_count = static_cast<std::size_t>(last - first);
    kept.push_back(r);
  }
  d.regions = std::move(kept);
  if (first_printed > 0 && !d.chunks.empty())
    warn(d.line, "no \"Next region of size\" lines: regions inferred from contiguous chunks (two "
                 "regions that happen to touch read as one)");
}

// The bytes in regions that the dump itself counts (Stats Reserved when TF printed it non-zero,
// else total_region_allocated_bytes_), or 0 when it prints neither.
std::uint64_t PrintedReserved(const TfBfcDump& d) {
  if (d.stats.reserved && *d.stats.reserved > 0) return *d.stats.reserved;
  return d.total_region_allocated.value_or(0);
}

// Whether the listed chunks hold less than the Stats block counts, or fewer chunks than the bin
// lines and the Chunk State table show: the chunk list was cut.
bool ChunkListCut(const TfBfcDump& d) {
  return (d.stats.in_use && *d.stats.in_use > d.in_use) || PrintedReserved(d) > d.reserved ||
         d.unlisted_free_chunks > 0 || d.unlisted_in_use_chunks > 0 || d.summary_in_use > d.in_use;
}

void CheckStats(TfBfcDump& d, const Warner& warn) {
  const TfBfcStats& s = d.stats;
  const bool chunks = !d.chunks.empty();
  // A list that holds less than the counts is a cut list (TakeStatsWhereCut), not a disagreement.
  if (chunks && ChunkListCut(d)) {
    if (s.in_use && *s.in_use < d.in_use)
      warn(d.line, fmt::format("Stats InUse is {} but the in-use chunks add up to {}", *s.in_use, d.in_use));
    if (s.limit && d.memory_limit && !Agrees(*s.limit, s.limit_margin + d.memory_limit_margin, *d.memory_limit))
      warn(d.line, fmt::format("Stats Limit is {} but memory_limit_ is {}", *s.limit, *d.memory_limit));
    return;
  }
  if (chunks && s.in_use && *s.in_use != d.in_use)
    warn(d.line, fmt::format("Stats InUse is {} but the in-use chunks add up to {}", *s.in_use, d.in_use));
  if (s.limit && d.memory_limit && !Agrees(*s.limit, s.limit_margin + d.memory_limit_margin, *d.memory_limit))
    warn(d.line, fmt::format("Stats Limit is {} but memory_limit_ is {}", *s.limit, *d.memory_limit));
  if (chunks && d.total_region_allocated &&
      !Agrees(*d.total_region_allocated, d.total_region_allocated_margin, d.reserved))
    warn(d.line, fmt::format("{} is {} but the regions add up to {}", d.pool_key, *d.total_region_allocated,
                             d.reserved));
  if (chunks && s.reserved && *s.reserved != 0 && !Agrees(*s.reserved, s.reserved_margin, d.reserved))
    warn(d.line, fmt::format("Stats Reserved is {} but the regions add up to {}", *s.reserved, d.reserved));
  if (chunks && s.largest_free_block && *s.largest_free_block != d.largest_free) {
    if (*s.largest_free_block == 0)
      warn(d.line, fmt::format("Stats LargestFreeBlock is printed as 0 (TensorFlow does not keep it "
                               "up to date); the largest free chunk is {}", d.largest_free));
    else
      warn(d.line, fmt::format("Stats LargestFreeBlock is {} but the largest free chunk is {}",
                               *s.largest_free_block, d.largest_free));
  }
}

// A chunk list that holds less than the Stats block (or total_region_allocated_bytes_) counts was
// cut (by the log, or by whoever pasted it): the dump's own counters are the truth. The OOM's
// numbers come from them; what only the list gives (a largest free chunk when Stats has none)
// is a lower bound. Keeps ClassifyOom's invariants: reserved >= in use + largest free.
void TakeStatsWhereCut(TfBfcDump& d, const Warner& warn) {
  if (!ChunkListCut(d)) return;
  const TfBfcStats& s = d.stats;
  d.from_stats = true;
  // The chunks the bin lines count beyond the list are in use or free at least as they print them.
  const std::uint64_t in_use = s.in_use ? std::max(*s.in_use, d.in_use)
                                        : std::max(SaturatingAdd(d.in_use, d.unlisted_in_use_bytes), d.summary_in_use);
  const std::uint64_t free_at_least = SaturatingAdd(d.listed_free, d.unlisted_free_bytes);
  const std::uint64_t printed = PrintedReserved(d);
  const bool stats_largest = s.largest_free_block && *s.largest_free_block > 0;
  std::uint64_t largest = stats_largest ? *s.largest_free_block : std::max(d.largest_free, d.unlisted_largest_free);
  std::uint64_t reserved = std::max(printed, d.reserved);
  // Without a printed reserved count the regions hold at least what is in use and the free chunks shown.
  const std::uint64_t at_least = SaturatingAdd(in_use, std::max(free_at_least, largest));
  const bool reserved_bound = reserved < at_least;
  if (reserved_bound) reserved = at_least;
  // Without a printed count the regions past the cut are not in the log either: the reserved bytes
  // (and the free bytes and headroom that follow from them) are a lower bound, not a number.
  d.reserved_at_least = printed == 0 || reserved_bound;
  const bool largest_unlisted = !stats_largest && d.unlisted_largest_free > d.largest_free;
  d.live_requested = SaturatingAdd(d.live_requested, in_use - d.in_use);
  d.in_use = in_use;
  d.reserved = reserved;
  d.free_in_regions = reserved - in_use;
  d.largest_free = std::min(largest, d.free_in_regions);
  std::string counts;
  if (s.in_use) counts += fmt::format("InUse {}", *s.in_use);
  if (printed > 0)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ",
                          s.reserved && *s.reserved > 0 ? "Reserved" : d.pool_key, printed);
  if (d.unlisted_free_chunks > 0 || d.unlisted_in_use_chunks > 0)
    counts += fmt::format("{}{} more chunks in its bin lines", counts.empty() ? "" : ", ",
                          d.unlisted_free_chunks + d.unlisted_in_use_chunks);
  if (d.summary_in_use > d.listed_in_use)
    counts += fmt::format("{}{} in use in its summary by size", counts.empty() ? "" : ", ", d.summary_in_use);
  warn(d.line, fmt::format(
                   "the chunk list is incomplete: the chunks listed hold {} in use in {} of regions where the dump "
                   "counts {}; the OOM's numbers are the dump's own counts: in use {}{}, {}, largest free {}",
                   d.listed_in_use, d.listed_reserved, counts, d.in_use,
                   !s.in_use && !SizeSummaryWhole(d) && in_use > d.listed_in_use ? " (at least)" : "",
                   d.reserved_at_least
                       ? fmt::format("reserved at least {} (not printed: free in regions and headroom unknown)",
                                     d.reserved)
                       : fmt::format("reserved {}, free in regions {}", d.reserved, d.free_in_regions),
                   stats_largest ? fmt::format("{} (Stats LargestFreeBlock)", d.largest_free)
                   : largest_unlisted
                       ? fmt::format("{} (the largest the bin lines or the Chunk State table show: at least)",
                                     d.largest_free)
                   : d.largest_free > 0 ? fmt::format("{} (the largest listed: at least)", d.largest_free)
                                        : std::string("unknown (no free chunk listed)")));
}

// XLA 2026 prints its Stats block in human-readable units ("Limit: 89.77GiB"): where the dump gives
// the same number exactly elsewhere (memory_limit_ in bytes, total_region_allocated_bytes_, the
// listed chunks), the exact one replaces it; what stays approximate is said in a warning.
void PreferExactCounts(TfBfcDump& d, const Warner& warn) {
  TfBfcStats& s = d.stats;
  // The pool line: available = memory_limit_ - the pool total, printed in bytes even by XLA 2026
  // ("available size: 153B"), gives one of the two exactly when the other is.
  if (d.available && d.memory_limit && d.total_region_allocated) {
    const std::uint64_t available = *d.available;
    if (d.total_region_allocated_margin > 0 && d.memory_limit_margin == 0 && *d.memory_limit >= available &&
        Agrees(*d.total_region_allocated, d.total_region_allocated_margin, *d.memory_limit - available)) {
      d.total_region_allocated = *d.memory_limit - available;
      d.total_region_allocated_margin = 0;
    } else if (d.memory_limit_margin > 0 && d.total_region_allocated_margin == 0 &&
               CheckedAdd(*d.total_region_allocated, available) &&
               Agrees(*d.memory_limit, d.memory_limit_margin, *d.total_region_allocated + available)) {
      d.memory_limit = *d.total_region_allocated + available;
      d.memory_limit_margin = 0;
    }
  }
  if (d.total_region_allocated && d.total_region_allocated_margin > 0 && !d.chunks.empty() &&
      Agrees(*d.total_region_allocated, d.total_region_allocated_margin, d.reserved)) {
    d.total_region_allocated = d.reserved;
    d.total_region_allocated_margin = 0;
  }
  if (!s.approximate() && d.total_region_allocated_margin == 0 && d.memory_limit_margin == 0) return;
  const bool chunks = !d.chunks.empty();
  const auto exact = [](const std::optional<std::uint64_t>& value, std::uint64_t margin) {
    return margin == 0 ? value : std::nullopt;
  };
  auto prefer = [](std::optional<std::uint64_t>& field, std::uint64_t& margin, std::optional<std::uint64_t> truth) {
    if (field && margin > 0 && truth && Agrees(*field, margin, *truth)) {
      field = *truth;
      margin = 0;
    }
  };
  prefer(s.limit, s.limit_margin, exact(d.memory_limit, d.memory_limit_margin));
  if (s.reserved && *s.reserved > 0) {
    prefer(s.reserved, s.reserved_margin, exact(d.total_region_allocated, d.total_region_allocated_margin));
    if (chunks) prefer(s.reserved, s.reserved_margin, d.reserved);
  }
  // Both approximate, the same number printed twice: the Stats block's stands.
  if (d.memory_limit_margin > 0 && s.limit && s.limit_margin == 0 &&
      Agrees(*d.memory_limit, d.memory_limit_margin, *s.limit)) {
    d.memory_limit = s.limit;
    d.memory_limit_margin = 0;
  }
  // XLA 2026 prints the pool total and memory_limit_ rounded alike, but the bytes still available
  // between them exactly ("available size: 153B"): the pool total is the limit less those.
  if (d.total_region_allocated_margin > 0 && d.available && d.memory_limit && *d.memory_limit >= *d.available &&
      Agrees(*d.total_region_allocated, d.total_region_allocated_margin + d.memory_limit_margin,
             *d.memory_limit - *d.available)) {
    d.total_region_allocated = *d.memory_limit - *d.available;
    d.total_region_allocated_margin = std::min(d.total_region_allocated_margin, d.memory_limit_margin);
  }
  if (chunks) {
    prefer(s.in_use, s.in_use_margin, d.in_use);
    if (s.largest_free_block && *s.largest_free_block > 0 && d.largest_free > 0)
      prefer(s.largest_free_block, s.largest_free_block_margin, d.largest_free);
  }
  if (const std::string fields = ApproximateCounts(d); !fields.empty())
    warn(d.line, fmt::format("the dump prints sizes in human-readable units and nothing else in it gives them "
                             "exactly: {} are known only to their printed digits",
                             fields));
}

// Header-only dumps: what the Stats block and the occupancy bar tell.
void FromSummary(TfBfcDump& d, const Warner& warn) {
  const TfBfcStats& s = d.stats;
  if (s.reserved && *s.reserved > 0) d.reserved = *s.reserved;
  else if (d.total_region_allocated) d.reserved = *d.total_region_allocated;
  std::uint64_t star = 0, pad = 0, longest_free = 0, run = 0;
  const bool bar = !d.occupancy.empty() && d.occupancy.front() != '<';
  for (char c : d.occupancy) {
    if (c == '*') ++star;
    if (c == 'x') ++pad;
    run = c == '_' ? run + 1 : 0;
    longest_free = std::max(longest_free, run);
  }
  if (bar && d.reserved == 0 && d.limit > 0) {
    d.reserved = d.limit;
    warn(d.line, "reserved bytes not printed: taken as the limit");
  }
  const std::uint64_t cells = bar ? d.occupancy.size() : 0;
  const std::uint64_t free_cells = cells - star - pad;
  if (s.in_use) d.in_use = *s.in_use;
  else if (bar && d.reserved > 0)
    d.in_use = static_cast<std::uint64_t>(static_cast<long double>(d.reserved) *
                                          static_cast<long double>(star + pad) / static_cast<long double>(cells));
  else d.in_use = d.unlisted_in_use_bytes;  // what the bin lines count, at least
  // The summary by size lists the in-use chunks exactly: all of them where its "Sum Total" agrees,
  // else at least these.
  if (!s.in_use && d.summary_lines > 0)
    d.in_use = SizeSummaryWhole(d) ? d.summary_in_use : std::max(d.in_use, d.summary_in_use);
  d.live_requested = bar && d.reserved > 0
                         ? static_cast<std::uint64_t>(static_cast<long double>(d.reserved) *
                                                      static_cast<long double>(star) / static_cast<long double>(cells))
                         : d.in_use;
  d.live_requested = std::min(d.live_requested, d.in_use);
  if (bar && d.reserved > 0)
    d.largest_free = static_cast<std::uint64_t>(static_cast<long double>(d.reserved) *
                                                static_cast<long double>(longest_free) / static_cast<long double>(cells));
  // Stats LargestFreeBlock, where TF printed it (non-zero), is exact: it wins over the bar.
  if (s.largest_free_block && *s.largest_free_block > 0) d.largest_free = *s.largest_free_block;
  else d.largest_free = std::max(d.largest_free, d.unlisted_largest_free);
  // The regions hold at least what is in use and the largest free block (ClassifyOom's invariant),
  // and the free chunks the bin lines count: without a printed reserved count that is all that is
  // known of them.
  if (const std::uint64_t at_least = SaturatingAdd(d.in_use, std::max(d.largest_free, d.unlisted_free_bytes));
      d.reserved < at_least && at_least > 0) {
    d.reserved = at_least;
    warn(d.line, fmt::format("reserved bytes not printed: taken as at least the bytes in use{} ({})",
                             d.largest_free > 0 ? " and the largest free block" : "", d.reserved));
  }
  d.free_in_regions = d.reserved > d.in_use ? d.reserved - d.in_use : 0;
  std::vector<std::string> parts;
  if (d.has_header) parts.emplace_back(d.oom_from_line ? "the OOM line" : "the OOM header");
  if (s.fields > 0) parts.emplace_back("the Stats block");
  if (d.total_region_allocated) parts.emplace_back(d.pool_key);
  if (!d.bins.empty()) parts.emplace_back("the bin lines");
  if (!d.chunk_state.empty()) parts.emplace_back("the Chunk State table");
  if (d.summary_lines > 0) parts.emplace_back("the summary of in-use chunks by size");
  if (bar)
    parts.push_back(fmt::format("the occupancy bar ({} of {} cells in use, {} of them requested bytes; {} "
                                "free, the longest free run {})",
                                star + pad, cells, star, free_cells, longest_free));
  if (!bar && !d.occupancy.empty()) parts.emplace_back("\"<allocator contains no memory>\"");
  std::string what = "chunk detail missing: only ";
  for (std::size_t i = 0; i < parts.size(); ++i)
    what += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  if (parts.empty()) what += "the dump's start";
  what += " survived";
  if (bar) what += d.reserved > 0 ? "; in use, live requested and largest free are estimated from the bar "
                                    "(1% resolution)"
                                  : "; no byte count is printed, so the bar gives fractions only";
  warn(d.line, what);
}

}  // namespace

std::string ApproximateCounts(const TfBfcDump& d) {
  const TfBfcStats& s = d.stats;
  std::string out;
  auto add = [&out](const char* name, const std::optional<std::uint64_t>& value, std::uint64_t margin) {
    if (!value || margin == 0) return;
    out += fmt::format("{}{} {} (give or take {} bytes)", out.empty() ? "" : ", ", name, *value, margin);
  };
  add("Limit", s.limit, s.limit_margin);
  add("InUse", s.in_use, s.in_use_margin);
  add("MaxInUse", s.max_in_use, s.max_in_use_margin);
  add("MaxAllocSize", s.max_alloc_size, s.max_alloc_size_margin);
  // A zero is 0 however it is printed ("0B").
  if (s.reserved && *s.reserved > 0) add("Reserved", s.reserved, s.reserved_margin);
  if (s.peak_reserved && *s.peak_reserved > 0) add("PeakReserved", s.peak_reserved, s.peak_reserved_margin);
  if (s.largest_free_block && *s.largest_free_block > 0)
    add("LargestFreeBlock", s.largest_free_block, s.largest_free_block_margin);
  add(d.pool_key.c_str(), d.total_region_allocated, d.total_region_allocated_margin);
  add("memory_limit_", d.memory_limit, d.memory_limit_margin);
  return out;
}

void FinalizeTfBfcDump(TfBfcDump& d, const std::string& name) {
  const Warner warn{d, name};
  bool request_from_bin = false;
  if (!d.has_header && d.bin_for > 0) {
    // TF prints "Bin for N was M" only when it dumps at an OOM: N is the size it searched for.
    d.has_header = true;
    d.request = d.bin_for;
    d.request_exact = false;
    request_from_bin = true;
    warn(d.bin_for_line,
         fmt::format("no \"ran out of memory\" line: the request is taken from \"Bin for\" (the rounded size "
                     "TensorFlow searched its bins for at the OOM), known only as printed (rounded to 2 "
                     "decimals): {} bytes; the allocator is unknown", d.request));
  }
  if (!d.has_header)
    warn(d.line, fmt::format("no \"ran out of memory\" header: a fragment of a dump; request, allocator{} "
                             "unknown, no oom event",
                             d.stats.limit || d.memory_limit ? " (the limit is the dump's own)" : " and limit"));
  // "(rounded to N)" gives the rounded request exactly, and the rounded size is what the cause is
  // decided by: the printed digits of the request then matter to nothing.
  else if (!d.request_exact && d.request > 0 && !request_from_bin && d.rounded == 0)
    warn(d.line, fmt::format("the request is known only as printed (rounded to 2 decimals): {} bytes",
                             d.request));
  if (d.has_header && d.rounded == 0) d.rounded = tftext::RoundUp256(d.request);

  BuildRegions(d, warn);
  // Regions and chunks are disjoint ranges of the address space, so these sums fit in 64 bits;
  // checked all the same, and above 4 EiB they are an error (no device has that much).
  bool overflow = false;
  auto add = [&overflow](std::uint64_t& total, std::uint64_t bytes) {
    if (const auto sum = CheckedAdd(total, bytes)) total = *sum;
    else overflow = true;
  };
  for (const TfBfcRegion& r : d.regions) add(d.reserved, r.size);
  for (const TfBfcChunk& c : d.chunks) {
    if (c.in_use) {
      ++d.in_use_chunks;
      add(d.in_use, c.size);
      add(d.live_requested, c.requested != 0 ? c.requested : c.size);
      d.requested_listed = d.requested_listed || c.requested != 0;
    } else {
      ++d.free_chunks;
      d.largest_free = std::max(d.largest_free, c.size);
    }
  }
  if (overflow || !IsRepresentableSize(d.reserved) || !IsRepresentableSize(d.in_use))
    warn.Error(d.line, fmt::format("the regions ({} bytes) or the in-use chunks ({} bytes) of the dump add "
                                   "up to more than 4 EiB ({} bytes), the largest size fragscope represents",
                                   d.reserved, d.in_use, kMaxBytes));
  d.free_in_regions = d.reserved > d.in_use ? d.reserved - d.in_use : 0;
  d.listed_in_use = d.in_use;
  d.listed_reserved = d.reserved;
  d.host_memory = TfHostAllocator(d.allocator);

  PreferExactCounts(d, warn);
  CountUnlistedChunks(d, warn);
  CheckSizeSummary(d, warn);
  if (d.stats.limit) d.limit = *d.stats.limit;
  else if (d.memory_limit) d.limit = *d.memory_limit;
  if (d.chunks.empty()) {
    FromSummary(d, warn);
  } else {
    CheckStats(d, warn);
    CheckBins(d, warn);
    TakeStatsWhereCut(d, warn);
  }
  d.reserved_known = !d.reserved_at_least && (!d.regions.empty() || PrintedReserved(d) > 0);
  const bool bar = !d.occupancy.empty() && d.occupancy.front() != '<';
  d.in_use_known = !d.chunks.empty() || d.stats.in_use || d.summary_lines > 0 || d.unlisted_in_use_chunks > 0 ||
                   (bar && d.reserved_known);
  d.largest_free_known = (d.stats.largest_free_block && *d.stats.largest_free_block > 0) ||
                         d.unlisted_largest_free > 0 || (!d.chunks.empty() && (!d.from_stats || d.largest_free > 0)) ||
                         (d.chunks.empty() && bar && d.reserved_known);
  // (Not for a fragment whose request came from "Bin for": its listed regions are what was pasted.)
  if (d.limit == 0 && d.reserved > 0 && d.reserved_known && d.has_header && !request_from_bin) {
    d.limit = d.reserved;
    warn(d.line, "no limit printed (no Stats block): the reserved bytes stand for it");
  }
  if (d.reserved > d.limit && d.limit > 0)
    warn(d.line, fmt::format("the regions ({} bytes) exceed the limit ({})", d.reserved, d.limit));

  // The cause, by ClassifyOom's rules (oom.hpp), in this order (docs/importers.md explains the TF reading).
  // A request above 4 EiB is request-too-large whatever the limit (no device holds it).
  d.cause = OomCause::kUnknown;
  d.cause_known = d.has_header && d.rounded > 0 && (d.limit > 0 || !IsRepresentableSize(d.rounded));
  if (d.has_header && !d.cause_known)
    warn(d.line, d.rounded == 0 ? "the cause cannot be determined (the request is unknown): cause unknown"
                                : "the cause cannot be determined (no limit in the dump): cause unknown");
  if (!d.cause_known) return;
  // TF would have grown a new region if the headroom alone held the request: it was refused.
  const std::uint64_t headroom = d.limit > d.reserved ? d.limit - d.reserved : 0;
  d.cause = ClassifyOom(d.ToOomRecord(), headroom >= d.rounded);
  // Within the limit, what decides between a device that refused a new region and fragmentation
  // is the reserved bytes: without them (no region listed, no count printed), neither is known.
  if (!d.reserved_known && (d.cause == OomCause::kBacking || d.cause == OomCause::kFragmentation)) {
    d.cause = OomCause::kUnknown;
    d.cause_known = false;
    warn(d.line, fmt::format("{}: with the bytes in use and the request within the limit, a device that refused a "
                             "new region (backing) and fragmentation cannot be told apart: cause unknown",
                             d.reserved_at_least
                                 ? fmt::format("the chunk list is cut and the dump prints no reserved count (its "
                                               "regions hold at least {})", d.reserved)
                                 : std::string("the dump lists no region and prints no reserved count")));
  }
  if (!d.chunks.empty() && d.largest_free >= d.rounded)
    warn(d.line, fmt::format("a free chunk of {} bytes would hold the {}-byte request: the dump does "
                             "not match an OOM of this request", d.largest_free, d.rounded));
}

OomRecord TfBfcDump::ToOomRecord() const {
  OomRecord r;
  r.request = request;
  r.rounded = rounded;
  r.limit = limit;
  r.reserved = reserved;
  r.in_use = in_use;
  r.live_requested = live_requested;
  r.free_in_regions = free_in_regions;
  r.largest_free = largest_free;
  r.headroom = limit > reserved ? limit - reserved : 0;
  r.chunk_count = in_use_chunks + free_chunks;
  r.region_count = regions.size();
  r.cause = cause;
  // A dump without a limit (no Stats block, no memory_limit, no regions to stand for it) says
  // nothing of the limit or of the headroom below it: absent, not 0 (OomRecord::present).
  if (limit == 0) r.present &= static_cast<std::uint16_t>(~(kOomLimit | kOomHeadroom));
  // Nor of the request where no line gave it ("RESOURCE_EXHAUSTED: failed to allocate memory" after
  // a fragment, a header whose size is no size): unknown, not a request of 0 bytes.
  if (request == 0 && rounded == 0) r.present &= static_cast<std::uint16_t>(~(kOomRequest | kOomRounded));
  // Live requested bytes only where the dump printed requested sizes: the chunks' sizes stood in
  // for them, and equal to in use, they read as a measured "no internal waste".
  if (!requested_listed) r.present &= static_cast<std::uint16_t>(~kOomLiveRequested);
  // Nor are the numbers the dump does not give (a header and a bar, a Stats block without a reserved
  // count: reserved_known and the others): assumptions, or zeros that are unknowns, are left out.
  if (!reserved_known) r.present &= static_cast<std::uint16_t>(~(kOomReserved | kOomFreeInRegions | kOomHeadroom));
  if (!in_use_known) r.present &= static_cast<std::uint16_t>(~(kOomInUse | kOomLiveRequested | kOomFreeInRegions));
  if (!largest_free_known) r.present &= static_cast<std::uint16_t>(~kOomLargestFree);
  if (chunks.empty() && regions.empty())
    r.present &= static_cast<std::uint16_t>(~(kOomChunkCount | kOomRegionCount));
  return r;
}

}  // namespace fragscope::traces
