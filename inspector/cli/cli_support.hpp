// Shared pieces of the `fragscope` command line: exit codes, errors, progress bars, tables and the
// JSON shapes that DESIGN.md fixes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fragscope/analysis/metrics.hpp"
#include "fragscope/analysis/oom_diagnosis.hpp"

namespace fragscope::cli {

enum ExitCode : int { kOk = 0, kOom = 1, kBadInput = 2 };

// Bad usage or input that is not a trace problem: "--capacity: 'lots' is not a size".
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Traces are written to files only (atomically, through a temporary file renamed into place): `-`,
// which means standard input where a trace is read, is refused as an output, named by `what`.
void RefuseStandardOutput(const std::string& path, const std::string& what);

// A trace's name in text output: `<stdin>` for `-`, as the error messages name it.
inline std::string DisplayName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

// A progress bar on stderr, drawn only when stderr is a terminal and the work lasts over a second.
class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total);
  ~ProgressBar();  // clears the line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void Update(std::uint64_t done, std::uint64_t total);
  void Update(std::uint64_t done) { Update(done, total_); }

 private:
  std::string label_;
  std::uint64_t total_;
  bool enabled_;
  double start_;
  double last_draw_ = 0;
  bool drawn_ = false;
};

// Aligned text tables: the first row is the header; columns after the first are right-aligned.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

std::uint64_t ParseSizeOption(const std::string& option, const std::string& text);

nlohmann::json OomJson(const analysis::OomDiagnosis& oom);
nlohmann::json DeviceJson(const analysis::DeviceMetrics& metrics,
                          const std::vector<analysis::OomDiagnosis>& ooms);
// Words for people: cause, explanation, nearest holes, suggestion, minimal limit.
// `state`: the evidence is one moment (no events): the OOM is named by its device, not by the
// event position the reader gave it.
std::string DescribeOom(const analysis::OomDiagnosis& oom, bool state = false);

std::string FormatRatio(double value);  // "1.23"

// For people: the first OOM in full, then one table row per OOM (at most `max_rows`).
std::string DescribeOoms(const std::vector<analysis::OomDiagnosis>& ooms, std::size_t max_rows = 20,
                         bool state = false);

}  // namespace fragscope::cli
