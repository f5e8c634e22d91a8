#include "cli_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"

namespace fragscope::cli {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ProgressBar::ProgressBar(std::string label, std::uint64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) == 1), start_(Now()) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void ProgressBar::Update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  total_ = total;
  const double now = Now();
  // Quiet for the first second (short work needs no bar), then at most ten redraws a second.
  if (now - start_ < 1.0 || now - last_draw_ < 0.1) return;
  last_draw_ = now;
  drawn_ = true;
  const double fraction = total_ == 0 ? 0.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  const double elapsed = now - start_;
  const double eta = fraction > 0.01 ? elapsed * (1.0 - fraction) / fraction : 0.0;
  std::fprintf(stderr, "\r\033[K%s [%s%s] %3.0f%%  %.0fs left", label_.c_str(),
               std::string(static_cast<std::size_t>(filled), '=').c_str(),
               std::string(static_cast<std::size_t>(kWidth - filled), ' ').c_str(), fraction * 100.0,
               eta);
  std::fflush(stderr);
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      if (i > 0) line += "  ";
      line += i == 0 ? fmt::format("{:<{}}", rows[r][i], widths[i])
                     : fmt::format("{:>{}}", rows[r][i], widths[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::uint64_t ParseSizeOption(const std::string& option, const std::string& text) {
  const auto size = ParseSize(text);
  if (!size && SizeTooLarge(text)) {
    throw UsageError(fmt::format("{}: '{}' is too large: more than 16 EiB", option, text));
  }
  if (!size) {
    throw UsageError(fmt::format("{}: '{}' is not a size (plain bytes or a number with a unit: "
                                 "512MiB, 6GiB, 1.5GB)",
                                 option, text));
  }
  return *size;
}

void RefuseStandardOutput(const std::string& path, const std::string& what) {
  if (path != "-") return;
  throw UsageError(fmt::format("{}: '-' (standard output) is not an output here: traces are written "
                               "to a file, give its name",
                               what));
}

// Not a number (a ratio the evidence cannot give, metrics.hpp) is "-".
std::string FormatRatio(double value) { return std::isfinite(value) ? fmt::format("{:.2f}", value) : "-"; }

nlohmann::json OomJson(const analysis::OomDiagnosis& oom) {
  nlohmann::json holes = nlohmann::json::array();
  for (const auto& hole : oom.nearest_holes) holes.push_back({{"address", hole.address}, {"size", hole.size}});
  nlohmann::json json = nlohmann::json::parse(ToJson(oom.report));
  json["seq"] = oom.seq;
  json["event"] = oom.event_index;
  json["nearest_holes"] = std::move(holes);
  json["min_limit"] = oom.min_limit ? nlohmann::json(*oom.min_limit) : nlohmann::json(nullptr);
  json["framework_advice"] = oom.framework_advice.empty()
                                 ? nlohmann::json(nullptr)
                                 : nlohmann::json{{"framework", oom.framework_advice.framework},
                                                  {"advice", oom.framework_advice.advice}};
  return json;
}

nlohmann::json DeviceJson(const analysis::DeviceMetrics& m,
                          const std::vector<analysis::OomDiagnosis>& ooms) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& oom : ooms) list.push_back(OomJson(oom));
  return {{"device", m.device},
          {"peak_load", m.peak_load},
          {"peak_in_use", m.peak_in_use},
          {"peak_reserved", m.peak_reserved},
          {"overhead", m.overhead()},
          {"utilization_at_peak", m.utilization_at_peak},
          {"fragmentation_at_peak", m.fragmentation_at_peak},
          {"peak_internal_waste", m.peak_internal_waste},
          {"allocations", m.allocations},
          {"oom_count", m.ooms},
          {"ooms", list}};
}

// A number of an OOM as text, or "-" when the evidence did not give it (OomRecord::present).
std::string OomBytes(const traces::OomRecord& n, traces::OomField field, std::uint64_t bytes) {
  return n.Has(field) ? FormatBytes(bytes) : "-";
}

std::string DescribeOom(const analysis::OomDiagnosis& oom, bool state) {
  const traces::OomRecord& n = oom.report.numbers;
  std::string out = state ? fmt::format("  OOM on device {}: ", oom.report.device)
                          : fmt::format("  OOM at event {} (seq {}), device {}: ", oom.event_index, oom.seq,
                                        oom.report.device);
  if (n.Has(traces::kOomRounded) && n.Has(traces::kOomRequest)) {
    out += fmt::format("{} of {} requested\n", FormatBytes(n.rounded), FormatBytes(n.request));
  } else if (n.Has(traces::kOomRequest)) {
    out += fmt::format("{} requested\n", FormatBytes(n.request));
  } else {
    out += "request unknown\n";
  }
  out += fmt::format("    cause: {}: {}\n", traces::ToString(n.cause), oom.report.explanation);
  if (!oom.nearest_holes.empty()) {
    std::string holes;
    for (const auto& hole : oom.nearest_holes) {
      if (!holes.empty()) holes += ", ";
      holes += fmt::format("{} at {:#x}", FormatBytes(hole.size), hole.address);
    }
    out += fmt::format("    holes nearest in size: {}\n", holes);
  }
  if (!oom.framework_advice.empty()) {
    out += fmt::format("    in {}: {}\n", oom.framework_advice.framework, oom.framework_advice.advice);
  }
  out += fmt::format("    suggestion: {}\n", oom.report.suggestion);
  if (oom.min_limit) {
    out += fmt::format("    smallest limit that runs this trace under the same policy: {}\n",
                       FormatBytes(*oom.min_limit));
  }
  return out;
}

std::string DescribeOoms(const std::vector<analysis::OomDiagnosis>& ooms, std::size_t max_rows, bool state) {
  if (ooms.empty()) return "";
  if (ooms.size() == 1) return fmt::format("\n{}", DescribeOom(ooms.front(), state));
  std::string out = fmt::format("\n{} OOMs. The first:\n{}", ooms.size(), DescribeOom(ooms.front(), state));
  // A state's OOMs (one per dump) are numbered in the file's order; a history's by their event.
  std::vector<std::vector<std::string>> rows = {
      {state ? "  OOM" : "  event", "device", "request", "cause", "largest free", "free in regions", "headroom"}};
  for (std::size_t i = 0; i < ooms.size() && i < max_rows; ++i) {
    const traces::OomRecord& n = ooms[i].report.numbers;
    rows.push_back({fmt::format("  {}", state ? i + 1 : ooms[i].event_index), std::to_string(ooms[i].report.device),
                    OomBytes(n, traces::kOomRounded, n.rounded), std::string(traces::ToString(n.cause)),
                    OomBytes(n, traces::kOomLargestFree, n.largest_free),
                    OomBytes(n, traces::kOomFreeInRegions, n.free_in_regions),
                    OomBytes(n, traces::kOomHeadroom, n.headroom)});
  }
  out += fmt::format("\n{}", FormatTable(rows));
  if (ooms.size() > max_rows) out += fmt::format("  ... {} more (--json lists every one)\n", ooms.size() - max_rows);
  return out;
}

}  // namespace fragscope::cli
