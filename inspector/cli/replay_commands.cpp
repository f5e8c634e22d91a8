// The commands that run a trace's allocation sequence through fragscope's allocator:
//   fragscope replay    TRACE [--alloc-conf STR] [--capacity SIZE] [--out TRACE] [--continue] [--json]
//   fragscope compare   TRACE [--alloc-conf A ...] [--capacity SIZE] [--json]
//   fragscope min-limit TRACE [--alloc-conf STR] [--capacity SIZE] [--json]
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/policy_advice.hpp"
#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "fragscope/traces/atomic_file.hpp"
#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "fragscope/evidence/readers.hpp"

namespace fragscope::cli {
namespace {

struct SequenceOptions {
  std::string trace;
  std::string capacity;
  bool json = false;
  bool as_sequence = false;  // replay a state's live chunks as if allocated in address order
  bool recorded_only = false;  // drop the blocks live before recording started, and their frees
};

// Replay, compare and min-limit need a history: the order in which memory was allocated and freed.
// A state has none; its live chunks replay as a sequence only when the user asks for it, and is
// told what that assumes. A message has no allocations at all.
void RequireHistory(const evidence::EvidenceInput& input, const SequenceOptions& options) {
  switch (input.header().kind) {
    case traces::EvidenceKind::kHistory: return;
    case traces::EvidenceKind::kMessage:
      throw UsageError(fmt::format("{}: an error message ({}) holds numbers, not allocations: there is nothing "
                                   "to replay; `fragscope report` explains it", options.trace, input.format()));
    case traces::EvidenceKind::kState:
      if (!options.as_sequence) {
        throw UsageError(fmt::format(
            "{}: a state ({}): one moment of memory, not a history of allocations and frees, so there is no "
            "order to replay; `fragscope report` says what it shows. Add --as-sequence to replay its live "
            "chunks as allocations in address order with nothing freed in between (an assumption: peaks, "
            "overhead and limits then describe that invented order, not the run)",
            options.trace, input.format()));
      }
      spdlog::warn("{}: --as-sequence: a state replayed as its live chunks allocated in address order with "
                   "nothing freed in between; the numbers describe that order, not the run", options.trace);
      return;
  }
}

// The peak LOAD of a sequence, devices summed: every allocation the trace made, and each request
// that failed in it for the moment it was asked (a replay asks for it again). The lower bound any
// allocator needs to run the sequence, whatever a replay of it met.
std::uint64_t SequenceLoad(const analysis::AllocationSequence& sequence) {
  std::uint64_t load = 0;
  for (std::uint64_t device : analysis::PeakLoadByDevice(sequence)) load += device;
  return load;
}

// The sequence without the devices whose memory is another framework's host memory (a profiler
// trace's CPU allocations): GPU policies have nothing to say about them, so replays leave them out,
// as the recorded row of `compare` does.
analysis::AllocationSequence WithoutForeignHostMemory(analysis::AllocationSequence sequence,
                                                      const traces::TraceHeader& header, const std::string& path) {
  for (std::uint32_t device : header.ForeignHostDevices()) {
    if (!std::binary_search(sequence.devices.begin(), sequence.devices.end(), device)) continue;
    // A warning, not info: every number printed after it leaves that device out.
    spdlog::warn("{}: device {} ({}) holds host memory, not GPU memory: the replays leave it out",
                 path == "-" ? "<stdin>" : path, device, header.Device(device)->name);
  }
  const std::uint64_t allocations = sequence.allocations;
  sequence = analysis::WithoutDevices(std::move(sequence), header.ForeignHostDevices());
  if (allocations > 0 && sequence.allocations == 0) {
    throw UsageError(fmt::format("{}: every allocation is of host memory (a CPU allocator's), none of GPU memory: "
                                 "nothing for a GPU allocator to replay",
                                 path == "-" ? "<stdin>" : path));
  }
  return sequence;
}

// `full_load`, when given, receives SequenceLoad of the whole trace, before --recorded-only cut it.
analysis::AllocationSequence LoadSequence(const SequenceOptions& options, std::uint64_t* full_load = nullptr) {
  const std::string& path = options.trace;
  auto input = evidence::EvidenceInput::Open(path);
  RequireHistory(*input, options);
  ProgressBar bar("reading", input->bytes_total());
  analysis::AllocationSequence sequence = analysis::BuildAllocationSequence(
      input->header(),
      input->Blocks([&](std::uint64_t done, std::uint64_t total) { bar.Update(done, total); }),
      &input->tags());
  for (const auto& warning : input->warnings()) spdlog::warn("{}", warning);
  for (const auto& warning : sequence.warnings) spdlog::warn("{}", warning);
  sequence = WithoutForeignHostMemory(std::move(sequence), input->header(), path);
  if (full_load != nullptr) *full_load = SequenceLoad(sequence);
  if (options.recorded_only) {
    const std::uint64_t before = sequence.ops.size();
    sequence = analysis::RecordedWindow(std::move(sequence));
    spdlog::info("{}: --recorded-only: {} of {} allocation events kept ({} allocations made while recording)",
                 path, sequence.ops.size(), before, sequence.allocations);
  }
  // Nothing to replay is bad input, not a table of zeros and a "smallest limit" of 1 MiB.
  if (sequence.allocations == 0) {
    throw UsageError(fmt::format("{}: no allocation events{} (a truncated or empty trace?): nothing to replay",
                                 path == "-" ? "<stdin>" : path,
                                 options.recorded_only ? " made while recording" : ""));
  }
  return sequence;
}

// The configuration a replay runs, resolved so that printing it (canonical form) says what ran: the
// backing is sim (another is replaced, keeping the paging choice it resolves to), and --capacity
// is the configuration's capacity.
// `source_out`, when given, receives where the configuration came from: --alloc-conf,
// FRAGSCOPE_ALLOC_CONF or defaults.
analysis::ReplayOptions MakeOptions(const SequenceOptions& common, const std::string& conf_text,
                                    std::string* source_out = nullptr) {
  analysis::ReplayOptions options;
  // No --alloc-conf: FRAGSCOPE_ALLOC_CONF, else the default policy (ResolveAllocConf names the
  // environment variable in its own errors).
  std::string source;
  try {
    options.conf = ResolveAllocConf(conf_text, &source);
  } catch (const ConfigError& error) {
    if (source != "--alloc-conf") throw;
    throw ConfigError(error.key(), fmt::format("--alloc-conf: {}", error.what()));  // name the flag
  }
  AllocConf& conf = options.conf;
  if (conf.backing != BackingKind::kSim) {
    // A replay runs on a simulated device. The policy stays the one the backing would have run:
    // paging where it pages (vmm, host), regions where it cannot (cuda, async).
    const bool paging = conf.Paging();
    spdlog::warn("{}: backing={} replaced by backing=sim: a replay runs on a simulated device (expandable={}, as "
                 "backing={} resolves it)", source, ToString(conf.backing), paging ? "on" : "off",
                 ToString(conf.backing));
    conf.expandable = paging;
    conf.backing = BackingKind::kSim;
  }
  if (!common.capacity.empty()) {
    const std::uint64_t capacity = ParseSizeOption("--capacity", common.capacity);
    // 0 would silently mean "the default"; above 4 EiB no size is representable.
    if (capacity == 0) {
      throw UsageError(fmt::format("--capacity: '{}' is no device size: the capacity must be more than 0",
                                   common.capacity));
    }
    if (!traces::IsRepresentableSize(capacity)) {
      throw UsageError(fmt::format("--capacity: '{}' is too large: the capacity must be at most {}",
                                   common.capacity, FormatSizeExact(traces::kMaxBytes)));
    }
    // Two sizes for one device: one would be dropped without a word (the other then printed).
    if (conf.capacity) {
      throw UsageError(fmt::format("--capacity {} and capacity={} in {} both set the size of the simulated "
                                   "device: give one of them", common.capacity, FormatSizeExact(*conf.capacity),
                                   source));
    }
    conf.capacity = capacity;
  }
  if (source_out != nullptr) *source_out = source;
  return options;
}

// Another run of the same configuration, without the recording, progress and stop rule of `options`.
analysis::ReplayOptions SameConfiguration(const analysis::ReplayOptions& options) {
  analysis::ReplayOptions again;
  again.conf = options.conf;
  again.capacity = options.capacity;
  return again;
}

// ---------------------------------------------------------------------------------------- replay

struct ReplayCommandOptions : SequenceOptions {
  std::string conf;
  std::string out;
  bool continue_past_oom = false;
  bool min_limit = true;
};

int RunReplay(const ReplayCommandOptions& command) {
  if (!command.out.empty()) {
    RefuseStandardOutput(command.out, "--out");
    traces::RefuseOutputOverInput(command.out, {command.trace});
  }
  const analysis::AllocationSequence sequence = LoadSequence(command);
  analysis::ReplayOptions options = MakeOptions(command, command.conf);
  options.continue_past_oom = command.continue_past_oom;
  std::unique_ptr<traces::TraceWriter> writer;
  if (!command.out.empty()) {
    traces::TraceWriterOptions writer_options;
    writer_options.inputs = {command.trace};
    writer = std::make_unique<traces::TraceWriter>(
        command.out, analysis::ReplayTraceHeader(sequence, options), writer_options);
    options.record = writer.get();
  }
  ProgressBar bar("replaying", sequence.ops.size());
  options.progress = [&](std::uint64_t done, std::uint64_t total) { bar.Update(done, total); };
  analysis::ReplayResult result = analysis::Replay(sequence, options);
  if (writer) writer->Close();
  for (const auto& warning : result.warnings) spdlog::warn("{}", warning);

  bool any_oom = false;
  for (const auto& device : result.devices) any_oom |= device.metrics.ooms > 0;
  if (any_oom && command.min_limit && options.conf.virtual_devices.empty()) {
    // What limit this policy needs for the whole trace, by bisection over replays.
    analysis::ReplayOptions search = SameConfiguration(options);
    const analysis::MinLimitResult fit = analysis::FindMinLimit(sequence, search);
    if (fit.fits_at_all) {
      for (auto& device : result.devices) {
        for (auto& oom : device.ooms) oom.min_limit = fit.min_limit;
      }
    }
  }
  if (any_oom && options.conf.virtual_devices.empty()) {
    // The allocator's free advice (gc, expandable), checked against the whole trace by replay.
    std::uint64_t ooms_here = 0;
    if (result.stopped_at_oom) {
      analysis::ReplayOptions all = SameConfiguration(options);
      all.continue_past_oom = true;
      all.max_diagnoses = 0;
      for (const auto& device : analysis::Replay(sequence, all).devices) ooms_here += device.metrics.ooms;
    } else {
      for (const auto& device : result.devices) ooms_here += device.metrics.ooms;
    }
    const AllocConf& conf = options.conf;
    const bool can_expand = TraitsOf(conf.backing).grows_in_place;
    const analysis::CheckedAdvice advice = analysis::CheckPolicyAdvice(sequence, conf, can_expand, ooms_here);
    for (auto& device : result.devices) analysis::ReplaceWithCheckedAdvice(device.ooms, advice);
  }
  if (command.json) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& device : result.devices) {
      nlohmann::json json = DeviceJson(device.metrics, device.ooms);
      // What the policy cost in backing calls: regions reserved and pages mapped/unmapped.
      json["region_reserves"] = device.final_stats.region_reserves;
      json["maps"] = device.final_stats.maps;
      json["unmaps"] = device.final_stats.unmaps;
      json["peak_address_space"] = device.final_stats.peak_address_space;
      json["peak_high_water"] = device.final_stats.peak_high_water;
      devices.push_back(std::move(json));
    }
    const nlohmann::json out = {{"trace", command.trace},
                                {"alloc_conf", options.conf.ToString()},
                                {"events", result.ops_replayed},
                                {"stopped_at_oom", result.stopped_at_oom},
                                {"seconds", result.seconds},
                                {"devices", devices}};
    fmt::print("{}\n", out.dump(2));
    return any_oom ? kOom : kOk;
  }
  fmt::print("replayed   {} of {} allocation events of {} in {:.2f} s\n", result.ops_replayed,
             sequence.ops.size(), DisplayName(command.trace), result.seconds);
  fmt::print("allocator  {}\n\n", options.conf.ToString());
  std::vector<std::vector<std::string>> rows = {
      {"device", "peak LOAD", "peak in use", "peak reserved", "overhead", "util@peak", "frag@peak", "OOMs"}};
  for (const auto& device : result.devices) {
    const auto& m = device.metrics;
    rows.push_back({std::to_string(m.device), FormatBytes(m.peak_load), FormatBytes(m.peak_in_use),
                    FormatBytes(m.peak_reserved), FormatRatio(m.overhead()), FormatRatio(m.utilization_at_peak),
                    FormatRatio(m.fragmentation_at_peak), std::to_string(m.ooms)});
  }
  fmt::print("{}", FormatTable(rows));
  std::vector<analysis::OomDiagnosis> all;
  for (const auto& device : result.devices) all.insert(all.end(), device.ooms.begin(), device.ooms.end());
  fmt::print("{}", DescribeOoms(all));
  if (result.stopped_at_oom) fmt::print("\nstopped at the first OOM (--continue replays past it)\n");
  if (writer) fmt::print("\nreplay trace written to {}\n", command.out);
  return any_oom ? kOom : kOk;
}

// --------------------------------------------------------------------------------------- compare

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
  const analysis::AllocationSequence sequence = LoadSequence(command, &full_load);
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
    options.continue_past_oom = true;  // count every OOM a policy meets
    ProgressBar bar(fmt::format("replaying {}", text), sequence.ops.size());
    options.progress = [&](std::uint64_t done, std::uint64_t total) { bar.Update(done, total); };
    const analysis::ReplayResult result = analysis::Replay(sequence, options);
    Row row;
    row.conf = options.conf.ToString();
    // A blank configuration is the default (or FRAGSCOPE_ALLOC_CONF): say which.
    const bool blank = text.find_first_not_of(" \t") == std::string::npos;
    row.display = !blank ? text : std::getenv(kAllocConfEnv) != nullptr ? std::string("$") + kAllocConfEnv
                                                                        : std::string("default policy");
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
                         {"fits", row.fits()}, {"seconds", row.seconds}};
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
    recorded["producer"] = recorded["alloc_conf"];
    recorded.erase("alloc_conf");
    nlohmann::json out{{"trace", command.trace}, {"events", sequence.ops.size()}, {"peak_load", load},
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

// ------------------------------------------------------------------------------------- min-limit

struct MinLimitOptions : SequenceOptions {
  std::string conf;
};

int RunMinLimit(const MinLimitOptions& command) {
  std::string source;
  analysis::ReplayOptions options = MakeOptions(command, command.conf, &source);
  if (options.conf.limit) {
    // The search sets the limit of every probe: the user's would be dropped without a word.
    throw UsageError(fmt::format("{}: limit={}: min-limit searches the limit itself (the smallest at which the "
                                 "configuration runs the trace, from peak LOAD up to the capacity); give the "
                                 "configuration without limit= (`fragscope replay` runs one limit)",
                                 source, FormatSizeExact(*options.conf.limit)));
  }
  const analysis::AllocationSequence sequence = LoadSequence(command);
  const analysis::MinLimitResult result = analysis::FindMinLimit(sequence, options);
  const double overhead = analysis::DeviceMetrics::Overhead(result.min_limit, result.peak_load);
  if (command.json) {
    fmt::print("{}\n", nlohmann::json{{"trace", command.trace},
                                      {"alloc_conf", options.conf.ToString()},
                                      {"fits", result.fits_at_all},
                                      // Nothing fits: there is no smallest limit (null, not 0).
                                      {"min_limit", result.fits_at_all ? nlohmann::json(result.min_limit) : nlohmann::json(nullptr)},
                                      {"peak_load", result.peak_load},
                                      {"overhead", result.fits_at_all ? nlohmann::json(overhead) : nlohmann::json(nullptr)},
                                      {"replays", result.replays}}.dump(2));
    return result.fits_at_all ? kOk : kOom;
  }
  if (!result.fits_at_all) {
    fmt::print("{} does not run under {} even at the full capacity\n", command.trace, options.conf.ToString());
    return kOom;
  }
  fmt::print("smallest limit  {} ({} bytes)\n", FormatBytes(result.min_limit), result.min_limit);
  fmt::print("peak LOAD       {} (the least any allocator needs)\n", FormatBytes(result.peak_load));
  fmt::print("policy overhead {} = {:.2f}x peak LOAD\n",
             FormatBytes(result.min_limit > result.peak_load ? result.min_limit - result.peak_load : 0), overhead);
  fmt::print("({} replays; 1 MiB less than the smallest limit runs out of memory)\n", result.replays);
  return kOk;
}

void AddCommon(CLI::App* sub, SequenceOptions* options) {
  sub->add_option("trace", options->trace, evidence::TraceArgumentHelp())->required();
  sub->add_option("--capacity", options->capacity,
                  "size of the simulated device (default: the trace's device, else 80GiB)");
  sub->add_flag("--json", options->json, "print one JSON document on stdout");
  sub->add_flag("--as-sequence", options->as_sequence,
                "replay a state (a snapshot without history, a TensorFlow dump) as its live chunks "
                "allocated in address order; without it a state is refused (there is no order to replay)");
  sub->add_flag("--recorded-only", options->recorded_only,
                "replay only the allocations made while recording: without the blocks a snapshot shows "
                "live before recording started, and without their frees");
}

}  // namespace

Command AddReplay(CLI::App& app) {
  auto options = std::make_shared<ReplayCommandOptions>();
  CLI::App* sub = app.add_subcommand("replay", "Run a trace's allocations under another allocator "
                                               "configuration on a simulated device");
  AddCommon(sub, options.get());
  sub->add_option("--alloc-conf", options->conf,
                  "allocator configuration, e.g. growth=off,limit=6GiB (default: FRAGSCOPE_ALLOC_CONF, "
                  "else the default policy)");
  sub->add_option("--out", options->out, "write the replay as a new trace");
  sub->add_flag("--continue", options->continue_past_oom, "go on past OOMs (default: stop at the first)");
  sub->add_flag("!--no-min-limit", options->min_limit,
                "after an OOM, do not search the smallest limit at which this policy runs the trace");
  return {sub, [options] { return RunReplay(*options); }};
}

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
  return {sub, [options] { return RunCompare(*options); }};
}

Command AddMinLimit(CLI::App& app) {
  auto options = std::make_shared<MinLimitOptions>();
  CLI::App* sub = app.add_subcommand("min-limit", "The smallest limit (to 1 MiB) at which a "
                                                  "configuration runs the trace without OOM");
  AddCommon(sub, options.get());
  sub->add_option("--alloc-conf", options->conf,
                  "allocator configuration (default: FRAGSCOPE_ALLOC_CONF, else the default policy)");
  return {sub, [options] { return RunMinLimit(*options); }};
}

}  // namespace fragscope::cli
