// fragscope compare TRACE [--alloc-conf A ...] [--capacity SIZE] [--json]: one trace replayed under
// several configurations, one table row each, after the trace as recorded.
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "fragscope/evidence/readers.hpp"
#include "sequence_input.hpp"

namespace fragscope::cli {
namespace {

struct CompareOptions : SequenceOptions {
  std::vector<std::string> confs;
};

// One row of `compare`: several devices are summed, their ratios weighed by reserved bytes. Every
// row is measured against one peak LOAD, the sequence's own (SequenceLoad), not what its replay
// happened to hold: a replay that ran out of memory skipped the failed requests, and its own LOAD
// would make its overhead look perfect.
struct CompareRow {
  std::string conf;     // canonical, for programs
  std::string display;  // as the user wrote it, for the table
  std::uint64_t peak_load = 0, peak_reserved = 0, ooms = 0;
  double utilization = 0, fragmentation = 0, seconds = 0;
  // False for evidence that records allocations but no reserved memory (an RMM log, a
  // torch.profiler trace without Total Reserved): no peak reserved, so no ratio either.
  bool reserved_known = true;
  bool limit_as_recorded = false;  // a replay given the trace's own limit (CarryRecordedLimits)

  void Add(const analysis::DeviceMetrics& m) {
    peak_reserved += m.peak_reserved;
    ooms += m.ooms;  // every OOM, also past the ones diagnosed
    weighted_utilization_ += m.utilization_at_peak * static_cast<double>(m.peak_reserved);
    weighted_fragmentation_ += m.fragmentation_at_peak * static_cast<double>(m.peak_reserved);
    const double reserved = static_cast<double>(std::max<std::uint64_t>(peak_reserved, 1));
    utilization = weighted_utilization_ / reserved;
    fragmentation = weighted_fragmentation_ / reserved;
  }
  double overhead() const { return analysis::DeviceMetrics::Overhead(peak_reserved, peak_load); }
  // Did this run hold every allocation of the trace? One with OOMs dropped the requests that
  // failed: its peak reserved is no measure of what the trace needs.
  bool fits() const { return ooms == 0; }

 private:
  double weighted_utilization_ = 0, weighted_fragmentation_ = 0;
};

int RunCompare(const CompareOptions& command) {
  std::uint64_t full_load = 0;
  std::optional<AllocConf> recorded_conf;
  const analysis::AllocationSequence sequence = LoadSequence(command, &full_load, &recorded_conf);
  // The LOAD every replay is measured against: that of the sequence it replays (with
  // --recorded-only the recorded window's; the recorded row keeps the whole trace's).
  const std::uint64_t load = SequenceLoad(sequence);
  using Row = CompareRow;
  std::vector<Row> table;
  // Blocks live before recording (PyTorch snapshots): every row holds them, so the like-for-like
  // overhead of the recorded window takes them out of every row alike.
  analysis::BeforeRecording before;
  std::uint64_t recorded_load = 0;  // as `report` counts it: without the requests that failed
  // First row: what the trace itself recorded (PyTorch's or TensorFlow's allocator, or ours), so
  // the replays read against it.
  {
    auto input = evidence::EvidenceInput::Open(command.trace);
    analysis::TimelineOptions timeline_options;
    timeline_options.tags = &input->tags();
    const auto model = analysis::TimelineModel::Build(input->header(), input->Blocks(), timeline_options);
    Row row;
    row.conf = row.display = fmt::format("as recorded ({})", input->header().producer.empty()
                                                                     ? input->format()
                                                                     : input->header().producer);
    const std::vector<std::uint32_t> host = input->header().ForeignHostDevices();
    for (std::uint32_t device : model->devices()) {
      if (std::find(host.begin(), host.end(), device) != host.end()) continue;  // as the replays
      row.Add(model->Metrics(device));
      recorded_load += model->Metrics(device).peak_load;
      if (const auto b = analysis::BeforeRecordingOf(input->header(), device)) {
        before.blocks += b->blocks;
        before.bytes += b->bytes;
        before.requested += b->requested;
        before.blocks_known = before.blocks_known && b->blocks_known;
      }
    }
    row.peak_load = full_load;
    row.reserved_known = row.peak_reserved > 0 || recorded_load == 0;  // as `report` decides it
    table.push_back(row);
  }
  // None given: the default policy, and what TensorFlow's allocator would have reserved with
  // allow_growth and without it (the whole device).
  std::vector<std::string> confs = command.confs;
  if (confs.empty()) {
    for (const analysis::ComparisonPreset& preset : analysis::ComparisonPresets()) confs.emplace_back(preset.conf);
  }
  // --recorded-only: the replays lack the blocks live before recording; the recorded row keeps
  // them. Like-for-like then takes them out of the recorded row only.
  const bool replays_lack_blocks = command.recorded_only;
  for (const std::string& text : confs) {
    analysis::ReplayOptions options = MakeOptions(command, text);
    const analysis::RecordedLimits limits = CarryRecordedLimits(command, options, recorded_conf);
    options.continue_past_oom = true;  // count every OOM a policy meets
    // The rows count OOMs and explain none: under a recorded limit a policy may meet thousands.
    options.max_diagnoses = 0;
    ProgressBar bar(fmt::format("replaying {}", text), sequence.ops.size());
    options.progress = [&](std::uint64_t done, std::uint64_t total) { bar.Update(done, total); };
    const analysis::ReplayResult result = analysis::Replay(sequence, options);
    Row row;
    row.conf = options.conf.ToString();
    // A blank configuration is the default (or FRAGSCOPE_ALLOC_CONF): say which.
    const bool blank = text.find_first_not_of(" \t") == std::string::npos;
    row.display = !blank ? text : std::getenv(kAllocConfEnv) != nullptr ? std::string("$") + kAllocConfEnv
                                                                        : std::string("default policy");
    if (limits.carried) row.display += " (" + limits.Summary() + ")";
    row.limit_as_recorded = limits.carried;
    row.seconds = result.seconds;
    for (const auto& device : result.devices) row.Add(device.metrics);
    row.peak_load = load;
    table.push_back(row);
  }
  if (command.json) {
    auto row_json = [&](const Row& row) {
      nlohmann::json out{{"alloc_conf", row.conf}, {"peak_load", row.peak_load},
                         {"peak_reserved", row.peak_reserved}, {"overhead", row.overhead()},
                         {"utilization_at_peak", row.utilization},
                         {"fragmentation_at_peak", row.fragmentation}, {"ooms", row.ooms},
                         {"fits", row.fits()}, {"seconds", row.seconds},
                         {"limit_as_recorded", row.limit_as_recorded}};
      if (before.blocks > 0 && row.peak_load > before.requested)
        out["overhead_like_for_like"] = replays_lack_blocks && &row != &table.front()
                                            ? row.overhead()
                                            : before.LikeForLikeOverhead(row.peak_reserved, row.peak_load);
      if (!row.reserved_known) {  // null, never 0, as in `report`
        out["reserved_known"] = false;
        for (const char* key : {"peak_reserved", "overhead", "utilization_at_peak", "fragmentation_at_peak",
                                "overhead_like_for_like"}) {
          if (out.contains(key)) out[key] = nullptr;
        }
      }
      return out;
    };
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 1; i < table.size(); ++i) rows.push_back(row_json(table[i]));
    nlohmann::json recorded = row_json(table.front());
    recorded.erase("seconds");
    recorded.erase("limit_as_recorded");
    recorded["producer"] = recorded["alloc_conf"];
    recorded.erase("alloc_conf");
    nlohmann::json out{{"trace", DisplayName(command.trace)}, {"events", sequence.ops.size()}, {"peak_load", load},
                       {"recorded", recorded}, {"configurations", rows}};
    if (before.blocks > 0)
      out["before_recording"] = {
          {"blocks", before.blocks_known ? nlohmann::json(before.blocks) : nlohmann::json(nullptr)},
          {"bytes", before.bytes}, {"requested", before.requested}};
    fmt::print("{}\n", out.dump(2));
    return kOk;
  }
  fmt::print("{} allocation events of {}\n\n", sequence.ops.size(), DisplayName(command.trace));
  const bool like_for_like = before.blocks > 0 && !table.empty() && table.front().peak_load > before.requested;
  const auto like_for_like_of = [&](const Row& row) {
    if (!row.reserved_known) return std::string("-");
    if (replays_lack_blocks && &row != &table.front()) return FormatRatio(row.overhead());
    return row.peak_load > before.requested ? FormatRatio(before.LikeForLikeOverhead(row.peak_reserved, row.peak_load))
                                            : std::string("-");
  };
  // A row that ran out of memory is marked: its overhead is against the same LOAD, but its run
  // dropped the failed requests, so it can read below 1.00 and is no measure of what it needs.
  bool any_short = false;
  std::vector<std::vector<std::string>> rows = {
      {"configuration", "peak reserved", "overhead", "util@peak", "frag@peak", "OOMs", "replay"}};
  if (like_for_like) rows.front().insert(rows.front().begin() + 3, "like-for-like");
  for (const Row& row : table) {
    any_short |= !row.fits();
    // Reserved memory the evidence does not record is "-", not "0 B" and ratios of 0.
    const auto known = [&](std::string text) { return row.reserved_known ? text : std::string("-"); };
    rows.push_back({row.display, known(FormatBytes(row.peak_reserved)),
                    known(FormatRatio(row.overhead())) + (row.fits() ? " " : "*"), known(FormatRatio(row.utilization)),
                    known(FormatRatio(row.fragmentation)), std::to_string(row.ooms),
                    &row == &table.front() ? std::string("-") : fmt::format("{:.2f} s", row.seconds)});
    if (like_for_like)
      rows.back().insert(rows.back().begin() + 3, like_for_like_of(row));
  }
  fmt::print("{}", FormatTable(rows));
  fmt::print("\npeak LOAD (the least any allocator needs): {}{}\n", FormatBytes(load),
             replays_lack_blocks && before.blocks > 0 ? " (the recorded window: --recorded-only)" : "");
  if (sequence.recorded_ooms > 0) {
    fmt::print("  with the {} request(s) that failed in the trace, which every replay asks for again{}\n",
               sequence.recorded_ooms,
               replays_lack_blocks ? std::string()
                                   : fmt::format("\n  (without them, as `report` counts: {})", FormatBytes(recorded_load)));
  }
  if (any_short) {
    fmt::print("* ran out of memory: the run did not hold the whole trace. Its peak reserved leaves out the\n"
               "  requests that failed, so its overhead is no measure of what it needs (`fragscope min-limit`\n"
               "  finds that)\n");
  }
  if (like_for_like) {
    fmt::print("like-for-like: overhead of the recorded window, without the {}{} that were "
               "live before recording started\n", FormatBytes(before.bytes),
               before.blocks_known ? fmt::format(" in {} blocks", before.blocks) : "");
  }
  return kOk;
}

}  // namespace

Command AddCompare(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand("compare", "Replay one trace under several configurations, one "
                                                "table row each");
  AddCommon(sub, options.get());
  sub->add_option("--alloc-conf", options->confs,
                  "a configuration, one row each (the first row is always the trace as recorded, so "
                  "one configuration compares against what the trace reserved; none: the default "
                  "policy, preset=tensorflow, preset=tensorflow,growth=off, preset=pytorch and "
                  "preset=pytorch,expandable_segments=on)")
      ->take_all();
  AddRecordedLimitFlag(sub, options.get());
  return {sub, [options] { return RunCompare(*options); }};
}

}  // namespace fragscope::cli
