// The bin lines, the "Chunk State" table and the summary of in-use chunks by size of a TensorFlow
// BFC dump against its chunk list: a cross-check where they agree, and where they count chunks that
// the list lacks (a list cut by the log or by whoever pasted it), what those chunks hold at least
// (docs/importers.md, "Dumps in part").
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "tf_bfc_internal.hpp"

namespace fragscope::traces {
namespace {

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) { return CheckedAdd(a, b).value_or(UINT64_MAX); }
std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) { return CheckedMul(a, b).value_or(UINT64_MAX); }
std::uint64_t Minus(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

// What the chunk list holds of one size class.
struct Listed {
  std::uint64_t total = 0, in_use = 0, free = 0;
  std::uint64_t bytes = 0, in_use_bytes = 0, free_bytes = 0;
  std::uint64_t largest_free = 0;
};

std::map<std::uint64_t, Listed> ListedByClass(const TfBfcDump& d) {
  std::map<std::uint64_t, Listed> out;
  for (const TfBfcChunk& c : d.chunks) {
    Listed& n = out[TfBinSize(c.size)];
    ++n.total;
    n.bytes += c.size;
    if (c.in_use) {
      ++n.in_use;
      n.in_use_bytes += c.size;
    } else {
      ++n.free;
      n.free_bytes += c.size;
      n.largest_free = std::max(n.largest_free, c.size);
    }
  }
  return out;
}

// TF <= 1.2's bin lines count free chunks only (in-use chunks leave their bin): then every line
// says "Chunks in use: 0", and only free chunks can be compared.
bool BinsCountInUse(const TfBfcDump& d) {
  bool count = d.in_use_chunks == 0;
  for (const TfBfcBin& b : d.bins) count = count || b.chunks_in_use > 0;
  return count;
}

// The parts of printed regions ("Next region of size N") that no listed chunk covers.
struct Uncovered {
  std::uint64_t bytes = 0;
  std::uint64_t ranges = 0;
};

Uncovered UncoveredRanges(const TfBfcDump& d) {
  Uncovered out;
  for (const TfBfcRegion& r : d.regions) {
    if (!r.size_printed) continue;
    std::uint64_t cursor = r.address;
    auto gap = [&](std::uint64_t end) {
      if (end <= cursor) return;
      out.bytes += end - cursor;
      ++out.ranges;
    };
    for (std::size_t c = r.first_chunk; c < r.first_chunk + r.chunk_count; ++c) {
      gap(d.chunks[c].address);
      cursor = std::max(cursor, d.chunks[c].address + d.chunks[c].size);
    }
    gap(r.address + r.size);
  }
  return out;
}

}  // namespace

std::uint64_t TfBinSize(std::uint64_t bytes) {
  std::uint64_t v = std::max<std::uint64_t>(bytes, 256) >> 8;
  int index = 0;
  while (v > 1 && index < 20) {
    v >>= 1;
    ++index;
  }
  return std::uint64_t{256} << index;
}

void CheckSizeSummary(TfBfcDump& d, const Warner& warn) {
  if (d.summary_lines == 0) return;
  if (!IsRepresentableSize(d.summary_in_use)) {
    warn.Error(d.line, fmt::format("the \"Chunks of size\" summary lines add up to more than 4 EiB ({} bytes), the "
                                   "largest size fragscope represents",
                                   kMaxBytes));
    return;
  }
  const bool whole = SizeSummaryWhole(d);
  const TfBfcStats& s = d.stats;
  if (s.in_use && (d.summary_in_use > *s.in_use || (whole && !Agrees(*s.in_use, s.in_use_margin, d.summary_in_use))))
    warn(d.line, fmt::format("the \"Chunks of size\" summary lines add up to {} in use but Stats InUse is {}",
                             d.summary_in_use, *s.in_use));
  if (whole && !d.chunks.empty() && d.summary_in_use < d.in_use)
    warn(d.line, fmt::format("the \"Chunks of size\" summary lines add up to {} in use but the in-use chunks "
                             "listed to {}",
                             d.summary_in_use, d.in_use));
  if (d.summary_total && !whole && d.summary_in_use > *d.summary_total)
    warn(d.line, fmt::format("the \"Chunks of size\" summary lines add up to {}, more than their \"Sum Total\" "
                             "({} give or take {} bytes)",
                             d.summary_in_use, *d.summary_total, d.summary_total_margin));
}

void CheckBins(TfBfcDump& d, const Warner& warn) {
  if (d.bins.empty() || d.chunks.empty()) return;
  std::map<std::uint64_t, Listed> counted = ListedByClass(d);
  const bool bins_count_in_use = BinsCountInUse(d);
  std::vector<std::string> mismatches;
  for (const TfBfcBin& b : d.bins) {
    const Listed n = counted[b.bin_size];
    const std::uint64_t bin_free = Minus(b.total_chunks, b.chunks_in_use);
    const std::uint64_t counted_total = bins_count_in_use ? n.total : n.free;
    const std::uint64_t counted_bytes = bins_count_in_use ? n.bytes : n.free_bytes;
    const std::uint64_t diff = b.bytes_in_bin > counted_bytes ? b.bytes_in_bin - counted_bytes
                                                              : counted_bytes - b.bytes_in_bin;
    // A bin that counts more chunks than the list holds shows chunks the list lacks
    // (CountUnlistedChunks); fewer, or other bytes for as many, is a disagreement.
    const bool fewer = b.total_chunks < counted_total || bin_free < n.free ||
                       (bins_count_in_use && b.chunks_in_use < n.in_use);
    const bool more = b.total_chunks > counted_total || bin_free > n.free ||
                      (bins_count_in_use && b.chunks_in_use > n.in_use);
    if (fewer || (!more && diff > std::max(counted_bytes / 100 + 64, b.bytes_margin)))
      mismatches.push_back(fmt::format("bin {} (line {}) says {} chunks, {} in use, {} B; the chunk "
                                       "list has {}, {} in use, {} B", b.bin_size, b.line,
                                       b.total_chunks, b.chunks_in_use, b.bytes_in_bin, counted_total,
                                       bins_count_in_use ? n.in_use : 0, counted_bytes));
  }
  if (!mismatches.empty()) {
    std::string text = fmt::format("{} bin line(s) disagree with the chunks: {}", mismatches.size(),
                                   mismatches.front());
    if (mismatches.size() > 1) text += fmt::format("; {}", mismatches[1]);
    if (mismatches.size() > 2) text += "; ...";
    warn(d.bins.front().line, text);
  }
}

void CountUnlistedChunks(TfBfcDump& d, const Warner& warn) {
  d.listed_free = 0;
  for (const TfBfcChunk& c : d.chunks)
    if (!c.in_use) d.listed_free += c.size;
  if (d.bins.empty() && d.chunk_state.empty()) return;
  std::map<std::uint64_t, Listed> listed = ListedByClass(d);
  const bool bins_count_in_use = BinsCountInUse(d);
  // Per size class: the free chunks the list lacks, their bytes and how near the printed figures
  // are. A chunk of bin N holds more than N / 2 bytes whatever the era (TF >= 1.x files a chunk
  // under the largest bin size not above it; TF 0.x under the smallest not below it: its "Bin for
  // 512.00MiB was 512.00MiB" lists a free 288 MiB chunk), so that much at least.
  struct Missing {
    std::uint64_t chunks = 0, bytes = 0, margin = 0;
  };
  std::map<std::uint64_t, Missing> free;
  for (const TfBfcBin& b : d.bins) {
    const Listed& n = listed[b.bin_size];
    const std::uint64_t bin_free = Minus(b.total_chunks, b.chunks_in_use);
    if (bin_free > n.free) {
      const std::uint64_t chunks = bin_free - n.free;
      // TF <= 1.2 counts free chunks only: its "in use in bin" is 0.
      const std::uint64_t printed = Minus(Minus(b.bytes_in_bin, b.bytes_in_use), n.free_bytes);
      free[b.bin_size] = {chunks, std::max(printed, SaturatingMul(chunks, b.bin_size / 2)),
                          SaturatingAdd(b.bytes_margin, b.in_use_margin)};
    }
    if (bins_count_in_use && b.chunks_in_use > n.in_use) {
      const std::uint64_t chunks = b.chunks_in_use - n.in_use;
      d.unlisted_in_use_chunks += chunks;
      d.unlisted_in_use_bytes = SaturatingAdd(
          d.unlisted_in_use_bytes, std::max(Minus(b.bytes_in_use, n.in_use_bytes), SaturatingMul(chunks, b.bin_size / 2)));
      d.unlisted_margin = SaturatingAdd(d.unlisted_margin, b.in_use_margin);
    }
  }
  // The Chunk State table names every free chunk of the bin TF searched, one by one: nearer than a
  // bin line's difference of two totals.
  if (!d.chunk_state.empty()) {
    const std::uint64_t bin = d.bin_for_bin != 0 ? d.bin_for_bin : TfBinSize(d.chunk_state.front().size);
    const Listed& n = listed[bin];
    std::uint64_t sum = 0, margin = 0, largest = 0, largest_margin = 0;
    for (const TfBfcStateChunk& c : d.chunk_state) {
      sum = SaturatingAdd(sum, c.size);
      margin = SaturatingAdd(margin, c.margin);
      if (c.size > largest) {
        largest = c.size;
        largest_margin = c.margin;
      }
    }
    const std::uint64_t shown = d.chunk_state.size();
    if (shown > n.free) {
      Missing& m = free[bin];
      if (shown - n.free >= m.chunks)
        m = {shown - n.free, Minus(sum, n.free_bytes), margin};
      // The largest free chunk of the table, unless the list has it (the same size, as printed).
      if (!Agrees(largest, largest_margin, n.largest_free) && largest > n.largest_free)
        d.unlisted_largest_free = largest;
    }
  }
  for (const auto& [bin, m] : free) {
    // One chunk missing from a class: its bytes are that chunk's size.
    if (m.chunks == 1) d.unlisted_largest_free = std::max(d.unlisted_largest_free, m.bytes);
    d.unlisted_free_chunks += m.chunks;
    d.unlisted_free_bytes = SaturatingAdd(d.unlisted_free_bytes, m.bytes);
    d.unlisted_margin = SaturatingAdd(d.unlisted_margin, m.margin);
  }
  if (d.unlisted_free_chunks == 0 && d.unlisted_in_use_chunks == 0) return;
  // Free chunks alone missing, whose printed bytes agree with the part of the printed regions no
  // listed chunk covers: that is where they are, and those bytes are exact.
  const Uncovered uncovered = UncoveredRanges(d);
  if (d.unlisted_in_use_chunks == 0 && uncovered.bytes > 0 &&
      Agrees(d.unlisted_free_bytes, d.unlisted_margin, uncovered.bytes)) {
    d.unlisted_free_bytes = uncovered.bytes;
    d.unlisted_margin = 0;
    if (d.unlisted_free_chunks == 1 && uncovered.ranges == 1 && d.unlisted_largest_free > 0)
      d.unlisted_largest_free = uncovered.bytes;
  }
  std::string what;
  if (d.unlisted_free_chunks > 0)
    what = fmt::format("{} free chunk(s) of {}{} bytes", d.unlisted_free_chunks, d.unlisted_margin > 0 ? "about " : "",
                       d.unlisted_free_bytes);
  if (d.unlisted_in_use_chunks > 0)
    what += fmt::format("{}{} in-use chunk(s) of {}{} bytes", what.empty() ? "" : " and ", d.unlisted_in_use_chunks,
                        d.unlisted_margin > 0 ? "about " : "", d.unlisted_in_use_bytes);
  const std::size_t line = !d.bins.empty() ? d.bins.front().line : d.chunk_state.front().line;
  warn(line, fmt::format("the {} count{} {} that the chunk list lacks{}: the layout is incomplete",
                         d.bins.empty() ? "Chunk State table" : d.chunk_state.empty() ? "bin lines" : "bin lines and the Chunk State table",
                         d.bins.empty() ? "s" : "", what,
                         d.unlisted_largest_free > 0 ? fmt::format(" (the largest free one {}{} bytes)",
                                                                   d.unlisted_margin > 0 ? "about " : "",
                                                                   d.unlisted_largest_free)
                                                     : std::string()));
}

}  // namespace fragscope::traces
