// torch.cuda.memory_summary() tables in log text: the line scanner (docs/importers.md, "PyTorch
// memory summaries"). What the tables mean as a state is pytorch_memory_summary_trace.cpp's.
#include "fragscope/traces/pytorch_memory_summary.hpp"

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "tf_text.hpp"

namespace fragscope::traces {
namespace {

using tftext::StartsWith;
using tftext::Trim;

constexpr std::array<std::string_view, kSummaryMetrics> kNames = {
    "Allocated memory", "Active memory",         "Requested memory",      "GPU reserved memory",
    "Non-releasable memory", "Allocations",      "Active allocs",         "GPU reserved segments",
    "Non-releasable allocs", "Oversize allocations", "Oversize GPU segments"};
constexpr std::array<std::string_view, 4> kColumns = {"Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"};

bool IsSize(SummaryMetricId id) { return static_cast<std::size_t>(id) <= static_cast<std::size_t>(SummaryMetricId::kNonReleasable); }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The metric a row's first cell names. Other backends put their own word where CUDA's tables say
// "GPU" ("NPU reserved memory", "Oversize NPU segments"): any one word is taken there.
std::optional<SummaryMetricId> MetricNamed(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<SummaryMetricId>(i);
  const auto one_word_before = [&](std::string_view prefix, std::string_view suffix) {
    if (!StartsWith(name, prefix) || !EndsWith(name, suffix) || name.size() <= prefix.size() + suffix.size())
      return false;
    const std::string_view word = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    return word.find(' ') == std::string_view::npos;
  };
  if (one_word_before("", " reserved memory")) return SummaryMetricId::kReserved;
  if (one_word_before("", " reserved segments")) return SummaryMetricId::kSegments;
  if (one_word_before("Oversize ", " segments")) return SummaryMetricId::kOversizeSegments;
  return std::nullopt;
}

struct UnitName {
  std::string_view name;
  std::uint64_t bytes;
};
constexpr std::uint64_t kKi = 1024;
// PyTorch's sizes are 1024-based whatever the spelling: older versions printed "KB", "MB", "GB".
constexpr std::array<UnitName, 11> kSizeUnits = {{{"B", 1},
                                                  {"KiB", kKi},
                                                  {"MiB", kKi * kKi},
                                                  {"GiB", kKi * kKi * kKi},
                                                  {"TiB", kKi * kKi * kKi * kKi},
                                                  {"PiB", kKi * kKi * kKi * kKi * kKi},
                                                  {"KB", kKi},
                                                  {"MB", kKi * kKi},
                                                  {"GB", kKi * kKi * kKi},
                                                  {"TB", kKi * kKi * kKi * kKi},
                                                  {"PB", kKi * kKi * kKi * kKi * kKi}}};
constexpr std::array<UnitName, 3> kCountUnits = {{{"", 1}, {"K", 1000}, {"M", 1000 * 1000}}};

// A cell's number and unit, or why it is none.
std::optional<SummaryCell> ReadCell(std::string_view text, bool size, std::string* problem) {
  text = Trim(text);
  std::string_view rest = text;
  const tftext::ScannedNumber n = tftext::ScanUint(rest);
  const char* what = size ? "a size (a whole number and B, KiB, MiB, GiB, TiB, PiB or KB, MB, GB, TB, PB)"
                          : "a count (a whole number, with K or M after it or nothing)";
  if (n.kind == tftext::NumberKind::kNegative) {
    *problem = fmt::format("\"{}\" is negative: not {}", text, what);
    return std::nullopt;
  }
  if (n.kind != tftext::NumberKind::kValue) {
    *problem = n.kind == tftext::NumberKind::kTooLong ? fmt::format("\"{}\" does not fit in 64 bits", text)
                                              : fmt::format("\"{}\" is not {}", text, what);
    return std::nullopt;
  }
  const std::string_view unit = Trim(rest);
  std::optional<std::uint64_t> scale;
  if (size) {
    for (const UnitName& u : kSizeUnits)
      if (unit == u.name) scale = u.bytes;
  } else {
    for (const UnitName& u : kCountUnits)
      if (unit == u.name) scale = u.bytes;
  }
  if (!scale) {
    *problem = fmt::format("\"{}\" is not {}", text, what);
    return std::nullopt;
  }
  const std::optional<std::uint64_t> value = CheckedMul(n.value, *scale);
  if (!value || (size && !IsRepresentableSize(*value))) {
    *problem = fmt::format("\"{}\": {}", text, size ? "size over 4 EiB, the largest size fragscope represents"
                                                    : "does not fit in 64 bits");
    return std::nullopt;
  }
  return SummaryCell{*value, *scale, std::string(text)};
}

// The cells between the '|' of a line, after the first one (a log's prefix may stand before it).
std::vector<std::string_view> Cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t bar = line.find('|');
  if (bar == std::string_view::npos) return cells;
  while (bar != std::string_view::npos && cells.size() < 8) {
    const std::size_t next = line.find('|', bar + 1);
    cells.push_back(line.substr(bar + 1, next == std::string_view::npos ? std::string_view::npos : next - bar - 1));
    bar = next;
  }
  return cells;
}

// "|=====…|" or "|-----…|": at least 20 of the character after a '|'.
bool IsRule(std::string_view line, char c) {
  const std::size_t bar = line.find('|');
  if (bar == std::string_view::npos) return false;
  std::size_t n = 0;
  for (std::size_t i = bar + 1; i < line.size() && line[i] == c; ++i) ++n;
  return n >= 20;
}

class Scanner {
 public:
  explicit Scanner(MemorySummaryScan& out) : out_(out) {}

  void Line(std::string_view line, std::size_t number, std::size_t offset) {
    if (const std::size_t at = line.find(" memory summary, device ID"); at != std::string_view::npos) {
      Title(line, at, number, offset);
      return;
    }
    if (const std::size_t at = line.find(" OOMs: "); at != std::string_view::npos &&
                                                      line.find("alloc retries: ") != std::string_view::npos) {
      Counters(line, at, number, offset);
      return;
    }
    if (IsRule(line, '=')) {
      // The closing rule ends a table that has rows; the rules above its rows belong to it.
      if (open_ && open_->last_metric) {
        open_->closed = true;
        open_->end_line = number;
        Finish();
      } else if (open_) {
        open_->end_line = number;
      }
      return;
    }
    if (IsRule(line, '-')) {
      if (open_) open_->end_line = number;
      return;
    }
    const std::vector<std::string_view> cells = Cells(line);
    if (cells.size() >= 2) {
      const std::string_view name = Trim(cells[0]);
      if (name == "Metric") {  // the column header
        if (open_) open_->end_line = number;
        return;
      }
      if (const auto id = MetricNamed(name)) {
        Row(*id, cells, number, offset, nullptr);
        return;
      }
      if ((name == "from large pool" || name == "from small pool") && open_ && open_->last_metric) {
        SummaryMetric& m = open_->metric(*open_->last_metric);
        Row(*open_->last_metric, cells, number, offset, name == "from large pool" ? &m.large_pool : &m.small_pool);
        return;
      }
    }
    // Any other line ends an open table that has rows: it was cut (its closing rule is not here).
    if (open_ && open_->last_metric) Finish();
  }

  void End() { Finish(); }

 private:
  MemorySummary& Start(std::size_t number, std::size_t offset) {
    Finish();
    open_.emplace();
    open_->line = number;
    open_->offset = offset;
    open_->end_line = number;
    return *open_;
  }

  void Finish() {
    if (open_) out_.summaries.push_back(std::move(*open_));
    open_.reset();
  }

  void Title(std::string_view line, std::size_t at, std::size_t number, std::size_t offset) {
    MemorySummary& s = Start(number, offset);
    // "PyTorch CUDA memory summary" (the first release said "Torch"): the word before " memory".
    std::size_t begin = at;
    while (begin > 0 && line[begin - 1] != ' ' && line[begin - 1] != '|') --begin;
    s.backend = std::string(line.substr(begin, at - begin));
    std::string_view rest = line.substr(at + std::string_view(" memory summary, device ID").size());
    if (const auto device = tftext::TakeUint(rest); device && *device <= UINT32_MAX)
      s.device = static_cast<std::uint32_t>(*device);
  }

  // "  CUDA OOMs: 1  |  cudaMalloc retries: 1  " (XPU: "xpuMalloc retries", NPU: "npuMalloc").
  void Counters(std::string_view line, std::size_t at, std::size_t number, std::size_t offset) {
    if (!open_ || open_->last_metric || open_->ooms) Start(number, offset);
    std::string_view rest = line.substr(at + std::string_view(" OOMs: ").size());
    open_->ooms = tftext::TakeUint(rest);
    rest = line.substr(line.find("alloc retries: ") + std::string_view("alloc retries: ").size());
    open_->alloc_retries = tftext::TakeUint(rest);
    open_->end_line = number;
  }

  // A metric's row (`pool` null) or one of its pool rows. A metric seen again starts a new table:
  // two tables printed one after the other whose title and rules were lost.
  void Row(SummaryMetricId id, const std::vector<std::string_view>& cells, std::size_t number, std::size_t offset,
           std::optional<SummaryRow>* pool) {
    if (pool == nullptr && (!open_ || open_->metric(id).all)) Start(number, offset);
    SummaryRow row;
    row.line = number;
    for (std::size_t c = 0; c < 4 && c + 1 < cells.size(); ++c) {
      const std::string_view text = Trim(cells[c + 1]);
      // What follows the last '|' of the line is a cell cut short (the paste ends there), not a
      // wrong number: the row lacks it.
      const bool cut = c + 2 == cells.size();
      if (cut && text.empty()) break;
      std::string problem;
      row.cells[c] = ReadCell(text, IsSize(id), &problem);
      if (!row.cells[c] && !cut) {
        out_.errors.push_back({number, offset,
                               fmt::format("{}{}, {}: {}", pool == nullptr ? "" : std::string(Trim(cells[0])) + " of ",
                                           SummaryMetricName(id), kColumns[c], problem)});
      }
    }
    if (pool == nullptr) {
      open_->metric(id).all = std::move(row);
      open_->last_metric = id;
    } else {
      *pool = std::move(row);
    }
    open_->end_line = number;
  }

  MemorySummaryScan& out_;
  std::optional<MemorySummary> open_;
};

}  // namespace

std::string_view SummaryMetricName(SummaryMetricId id) { return kNames[static_cast<std::size_t>(id)]; }

const SummaryCell* MemorySummary::Cell(SummaryMetricId id, SummaryColumn column) const {
  const std::optional<SummaryRow>& row = metric(id).all;
  if (!row || !row->cells[column]) return nullptr;
  return &*row->cells[column];
}

MemorySummaryScan ScanMemorySummaries(std::string_view text) {
  MemorySummaryScan out;
  Scanner scanner(out);
  std::size_t number = 1;
  for (std::size_t begin = 0; begin < text.size(); ++number) {
    const std::size_t end = text.find('\n', begin);
    std::string_view line = text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    scanner.Line(line, number, begin);
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  scanner.End();
  // A title or counters line with no row after it is no table (a log that mentions one).
  std::erase_if(out.summaries, [](const MemorySummary& s) { return !s.last_metric; });
  return out;
}

bool LooksLikeMemorySummary(std::string_view head) {
  if (head.find('\0') != std::string_view::npos) return false;  // binary
  bool mentioned = head.find(" memory summary, device ID") != std::string_view::npos;
  for (std::string_view row : {"Allocated memory ", " reserved memory "})
    mentioned = mentioned || head.find(row) != std::string_view::npos;
  // A title without a row after it is no table: a log that only mentions one.
  return mentioned && !ScanMemorySummaries(head).summaries.empty();
}

}  // namespace fragscope::traces
