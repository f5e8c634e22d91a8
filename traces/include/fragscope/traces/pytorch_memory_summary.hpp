// Reads the tables torch.cuda.memory_summary() prints — "PyTorch CUDA memory summary, device ID 0",
// "CUDA OOMs: N | cudaMalloc retries: M", then per metric (Allocated memory, Active memory,
// Requested memory, GPU reserved memory, Non-releasable memory, Allocations, Active allocs, GPU
// reserved segments, Non-releasable allocs, Oversize allocations, Oversize GPU segments) its Cur
// Usage | Peak Usage | Tot Alloc | Tot Freed, with "from large pool" / "from small pool" rows — from
// any log text: every version since PyTorch 1.4 (sizes in KB/MB/GB in older versions, KiB/MiB/GiB
// in newer ones, both 1024-based; with and without the Requested and Oversize rows; abbreviated tables without the pool rows), the copies of
// other backends (XPU, NPU: "NPU reserved memory"), several tables in one log, tables whose title
// or end was cut off. docs/importers.md, "PyTorch memory summaries", lists the variants.
//
// A table is a state (DESIGN.md, "Evidence kinds"): the allocator's counters at one moment, no
// segment or block layout. The scan is line by line with substring searches, linear in the text.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

// One number of the table as printed. PyTorch divides a size by 1024 (a count by 1000) per unit
// step and drops the remainder, so the true number lies in [value, value + unit).
struct SummaryCell {
  std::uint64_t value = 0;  // bytes, or a count: the printed number times its unit
  std::uint64_t unit = 1;   // 1 for bytes and plain counts; 1024^k ("KiB", and older versions' "KB"); 1000^k ("K")
  std::string text;         // as printed, trimmed: "14324 MiB"
};

// The columns, in the table's order.
enum SummaryColumn : std::size_t { kSummaryCurrent = 0, kSummaryPeak = 1, kSummaryAllocated = 2, kSummaryFreed = 3 };

struct SummaryRow {
  std::array<std::optional<SummaryCell>, 4> cells;  // a cell cut off the line is absent
  std::size_t line = 0;                             // 1-based
};

// The metrics, in the order PyTorch prints them (the first five are sizes, the rest counts).
enum class SummaryMetricId : std::uint8_t {
  kAllocated, kActive, kRequested, kReserved, kNonReleasable,
  kAllocations, kActiveAllocs, kSegments, kNonReleasableAllocs, kOversizeAllocations, kOversizeSegments,
};
inline constexpr std::size_t kSummaryMetrics = 11;
// "Allocated memory", "GPU reserved memory", …: PyTorch CUDA's row names.
std::string_view SummaryMetricName(SummaryMetricId id);

// A metric's rows: all, and (unless the table is abbreviated) from the large and the small pool.
struct SummaryMetric {
  std::optional<SummaryRow> all, large_pool, small_pool;
};

struct MemorySummary {
  std::string backend;                  // "CUDA" (ROCm prints CUDA too), "XPU", "NPU"; empty without a title
  std::optional<std::uint32_t> device;  // "device ID N"; absent when the title is not in the text
  std::size_t line = 0;                 // 1-based first line (the title, else the first line read)
  std::size_t offset = 0;               // byte offset of that line
  std::size_t end_line = 0;             // the last line read into it
  std::optional<std::uint64_t> ooms, alloc_retries;  // "CUDA OOMs: N | cudaMalloc retries: M"
  std::array<SummaryMetric, kSummaryMetrics> metrics;
  bool closed = false;                  // the closing "|=====|" line after its rows was read
  std::optional<SummaryMetricId> last_metric;  // the last metric row read

  const SummaryMetric& metric(SummaryMetricId id) const { return metrics[static_cast<std::size_t>(id)]; }
  SummaryMetric& metric(SummaryMetricId id) { return metrics[static_cast<std::size_t>(id)]; }
  // The cell of a metric's "all" row in `column`; nullptr where the table does not print it.
  const SummaryCell* Cell(SummaryMetricId id, SummaryColumn column) const;
};

// A number of a table row that cannot be read ("12x4 MiB", a negative size, one above 4 EiB):
// the table would say something wrong, so the reader refuses it, naming the line.
struct MemorySummaryError {
  std::size_t line = 0;    // 1-based
  std::size_t offset = 0;  // byte offset of the line
  std::string message;     // "Allocated memory, Cur Usage: \"12x4 MiB\" is not a size …"
};

struct MemorySummaryScan {
  std::vector<MemorySummary> summaries;  // in the order of the text
  std::vector<MemorySummaryError> errors;
};

// Every table in `text`. Never throws; linear in the text's size.
MemorySummaryScan ScanMemorySummaries(std::string_view text);

// Whether `head` holds a memory summary: its title line, or a table row of Allocated memory or of
// reserved memory (a paste that lost the title). Cheap: substring searches.
bool LooksLikeMemorySummary(std::string_view head);

// The tables as a state trace (docs/importers.md): per table a marker event and a StateSummary
// with its counters; one device per device ID (tables without a title take the lowest free
// index). Never throws.
Trace MemorySummariesToTrace(const std::vector<MemorySummary>& summaries, const std::string& name);

// ScanMemorySummaries, then MemorySummariesToTrace. Throws TraceError when the text holds no table,
// or at the first unreadable number ("NAME: at byte B: line N: Allocated memory, Cur Usage: …").
Trace ParseMemorySummaryToTrace(std::string_view text, const std::string& name);

}  // namespace fragscope::traces
