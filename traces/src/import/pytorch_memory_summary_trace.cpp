// torch.cuda.memory_summary() tables as a state trace (docs/importers.md, "PyTorch memory
// summaries"): per table one moment with the allocator's own counters — no layout is invented, so
// the trace holds one marker per table and nothing else — and what the table lacks, in words.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/pytorch_memory_summary.hpp"
#include "trace_builder.hpp"

namespace fragscope::traces {
namespace {

using Id = SummaryMetricId;

std::optional<std::uint64_t> Value(const SummaryCell* cell) {
  return cell != nullptr ? std::optional(cell->value) : std::nullopt;
}

std::optional<std::uint64_t> PoolValue(const std::optional<SummaryRow>& row) {
  return row && row->cells[kSummaryCurrent] ? std::optional(row->cells[kSummaryCurrent]->value) : std::nullopt;
}

std::string UnitName(std::uint64_t unit, bool old_spelling) {
  switch (unit) {
    case std::uint64_t{1} << 10: return old_spelling ? "KB" : "KiB";
    case std::uint64_t{1} << 20: return old_spelling ? "MB" : "MiB";
    case std::uint64_t{1} << 30: return old_spelling ? "GB" : "GiB";
    case std::uint64_t{1} << 40: return old_spelling ? "TB" : "TiB";
    default: return old_spelling ? "PB" : "PiB";
  }
}

// The pool split of a table that prints the pool rows; nullopt for an abbreviated one.
std::optional<StateSummary::Pool> PoolOf(const MemorySummary& s, bool large) {
  const auto row = [&](Id id) -> const std::optional<SummaryRow>& {
    return large ? s.metric(id).large_pool : s.metric(id).small_pool;
  };
  StateSummary::Pool pool{PoolValue(row(Id::kAllocated)), PoolValue(row(Id::kReserved)),
                          PoolValue(row(Id::kNonReleasable))};
  if (!pool.in_use && !pool.reserved && !pool.non_releasable) return std::nullopt;
  return pool;
}

// What the table lacks, in words (StateSummary::missing), and its rows cut short.
std::vector<std::string> Missing(const MemorySummary& s, std::uint32_t device, std::uint64_t margin) {
  std::vector<std::string> missing = {
      "no segment or block list: a memory summary gives the allocator's totals only (where the free bytes lie is "
      "unknown)"};
  if (!s.device) missing.push_back(fmt::format("its title line is not in the log (the device is not named; "
                                               "taken as device {})", device));
  if (!s.closed)
    missing.push_back(fmt::format("the table is cut after its {} row (no closing line)",
                                  SummaryMetricName(*s.last_metric)));
  for (Id id : {Id::kAllocated, Id::kReserved, Id::kNonReleasable}) {
    if (!s.metric(id).all) missing.push_back(fmt::format("no {} row", SummaryMetricName(id)));
  }
  if (!s.metric(Id::kRequested).all && s.closed)
    missing.push_back("no Requested memory row (older PyTorch versions do not print it)");
  for (std::size_t i = 0; i < kSummaryMetrics; ++i) {
    const std::optional<SummaryRow>& row = s.metrics[i].all;
    if (!row) continue;
    std::size_t cells = 0;
    while (cells < 4 && row->cells[cells]) ++cells;
    if (cells < 4 && cells > 0) {
      static constexpr std::array<const char*, 4> kColumns = {"Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"};
      missing.push_back(fmt::format("its {} row on line {} is cut after {}", SummaryMetricName(static_cast<Id>(i)),
                                    row->line, kColumns[cells - 1]));
    } else if (cells == 0) {
      missing.push_back(fmt::format("its {} row on line {} is cut before its numbers",
                                    SummaryMetricName(static_cast<Id>(i)), row->line));
    }
  }
  if (s.closed && s.metric(Id::kAllocated).all && !s.metric(Id::kAllocated).large_pool)
    missing.push_back("no split by pool (an abbreviated summary)");
  if (!s.ooms) missing.push_back("no OOMs / malloc retries line");
  if (margin > 0) {
    const SummaryCell* any = s.Cell(Id::kAllocated, kSummaryCurrent);
    const bool old = any != nullptr && any->text.find("iB") == std::string::npos && any->unit > 1;
    missing.push_back(fmt::format("exact byte counts: it prints sizes rounded down to whole units, up to {} (each "
                                  "true size is less than one unit above the number printed)",
                                  UnitName(margin, old)));
  }
  missing.push_back("no limit (a memory summary does not give the device's capacity)");
  return missing;
}

StateSummary StateOf(const MemorySummary& s, std::uint32_t device, std::uint64_t at_seq) {
  StateSummary state;
  state.device = device;
  state.at_seq = at_seq;
  state.line = s.line;
  state.moment = fmt::format("in the memory summary on line {}", s.line);
  state.in_use = Value(s.Cell(Id::kAllocated, kSummaryCurrent));
  state.requested = Value(s.Cell(Id::kRequested, kSummaryCurrent));
  state.reserved = Value(s.Cell(Id::kReserved, kSummaryCurrent));
  state.max_in_use = Value(s.Cell(Id::kAllocated, kSummaryPeak));
  state.max_reserved = Value(s.Cell(Id::kReserved, kSummaryPeak));
  state.non_releasable = Value(s.Cell(Id::kNonReleasable, kSummaryCurrent));
  state.oom_count = s.ooms;
  state.alloc_retries = s.alloc_retries;
  state.large_pool = PoolOf(s, true);
  state.small_pool = PoolOf(s, false);
  for (const SummaryCell* cell :
       {s.Cell(Id::kAllocated, kSummaryCurrent), s.Cell(Id::kAllocated, kSummaryPeak),
        s.Cell(Id::kRequested, kSummaryCurrent), s.Cell(Id::kReserved, kSummaryCurrent),
        s.Cell(Id::kReserved, kSummaryPeak), s.Cell(Id::kNonReleasable, kSummaryCurrent)}) {
    if (cell != nullptr && cell->unit > 1) state.size_margin = std::max(state.size_margin, cell->unit);
  }
  state.layout_complete = false;  // there is no layout at all
  const std::vector<std::string> missing = Missing(s, device, state.size_margin);
  for (std::size_t i = 0; i < missing.size(); ++i) state.missing += (i == 0 ? "" : "; ") + missing[i];
  return state;
}

// Numbers no PyTorch allocator prints (more allocated than reserved, more non-releasable than the
// reserved bytes not allocated): a damaged or hand-edited table. Warned, not refused: the numbers
// are still what the table says.
void CheckNumbers(const MemorySummary& s, const StateSummary& state, const std::string& name,
                  std::vector<std::string>& warnings) {
  if (!state.in_use || !state.reserved) return;
  if (*state.in_use > *state.reserved + state.size_margin) {
    warnings.push_back(fmt::format("{}:{}: the memory summary's Allocated memory ({}) is above its reserved memory "
                                   "({}): no PyTorch allocator prints that; the table is damaged",
                                   name, s.line, FormatBytes(*state.in_use), FormatBytes(*state.reserved)));
    return;
  }
  if (state.non_releasable && *state.non_releasable > *state.reserved - std::min(*state.reserved, *state.in_use) +
                                                          state.size_margin) {
    warnings.push_back(fmt::format("{}:{}: the memory summary's Non-releasable memory ({}) is above its reserved "
                                   "memory less Allocated memory ({}): no PyTorch allocator prints that; the table "
                                   "is damaged",
                                   name, s.line, FormatBytes(*state.non_releasable),
                                   FormatBytes(*state.reserved - *state.in_use)));
  }
}

}  // namespace

Trace MemorySummariesToTrace(const std::vector<MemorySummary>& summaries, const std::string& name) {
  Trace trace;
  trace.header.producer = "PyTorch torch.cuda.memory_summary()";
  trace.header.source_format = "pytorch-memory-summary";
  trace.header.metadata.emplace_back("source", name);
  trace.header.metadata.emplace_back("pytorch.memory_summaries", std::to_string(summaries.size()));
  // A table is a moment, not a history; it has no layout, so nothing but a marker is laid out.
  trace.header.kind = EvidenceKind::kState;
  std::string backend;
  for (const MemorySummary& s : summaries)
    if (!s.backend.empty()) {
      backend = s.backend;
      break;
    }
  trace.header.source.allocator =
      backend.empty() ? std::string("PyTorch caching allocator") : fmt::format("PyTorch {} caching allocator", backend);

  // One device per device ID; tables whose title is not in the log share the lowest free index.
  std::set<std::uint32_t> named;
  for (const MemorySummary& s : summaries)
    if (s.device) named.insert(*s.device);
  std::uint32_t unnamed = 0;
  while (named.count(unnamed) > 0) ++unnamed;
  std::map<std::uint32_t, DeviceDescription> devices;
  for (const MemorySummary& s : summaries) {
    const std::uint32_t index = s.device.value_or(unnamed);
    DeviceDescription& d = devices[index];
    if (!d.name.empty()) continue;
    d.index = index;
    std::string lower = s.backend;
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    d.name = s.device ? fmt::format("{}:{}", lower.empty() ? "cuda" : lower, index)
                      : std::string("a device its table does not name");
    d.backing = "pytorch";
  }
  for (auto& [index, d] : devices) trace.header.devices.push_back(d);

  TraceBuilder b(trace);
  for (std::size_t n = 0; n < summaries.size(); ++n) {
    const MemorySummary& s = summaries[n];
    const std::uint32_t device = s.device.value_or(unnamed);
    Event& marker = b.Add(EventType::kMarker, device, 0);
    marker.tag = b.Intern(fmt::format("memory summary {} at line {}", n + 1, s.line));
    StateSummary state = StateOf(s, device, marker.seq);
    CheckNumbers(s, state, name, trace.warnings);
    trace.header.metadata.emplace_back(
        fmt::format("pytorch.summary{}", n + 1),
        fmt::format("line {}: {}, allocated {}, reserved {}, non-releasable {}, OOMs {}", s.line,
                    trace.header.Device(device)->name,
                    state.in_use ? FormatBytes(*state.in_use) : "-", state.reserved ? FormatBytes(*state.reserved) : "-",
                    state.non_releasable ? FormatBytes(*state.non_releasable) : "-",
                    state.oom_count ? std::to_string(*state.oom_count) : "-"));
    trace.header.source.states.push_back(std::move(state));
  }
  return trace;
}

Trace ParseMemorySummaryToTrace(std::string_view text, const std::string& name) {
  const MemorySummaryScan scan = ScanMemorySummaries(text);
  if (scan.summaries.empty())
    throw TraceError(name, 0, "no PyTorch memory summary found (no table row of torch.cuda.memory_summary())");
  if (!scan.errors.empty()) {
    const MemorySummaryError& first = scan.errors.front();
    throw TraceError(name, first.offset,
                     fmt::format("line {}: {}{}", first.line, first.message,
                                 scan.errors.size() > 1 ? fmt::format(" (and {} more such errors)", scan.errors.size() - 1)
                                                        : std::string()));
  }
  return MemorySummariesToTrace(scan.summaries, name);
}

}  // namespace fragscope::traces
