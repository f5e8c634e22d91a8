// The commands that run a trace's allocation sequence through fragscope's allocator:
//   fragscope replay    TRACE [--alloc-conf STR] [--capacity SIZE] [--out TRACE] [--continue] [--json]
//   fragscope min-limit TRACE [--alloc-conf STR] [--capacity SIZE] [--json]
// (`compare` is in compare_command.cpp; what they share in sequence_input.cpp.)
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/policy_advice.hpp"
#include "fragscope/traces/atomic_file.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "sequence_input.hpp"

namespace fragscope::cli {
namespace {

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
  std::optional<AllocConf> recorded_conf;
  const analysis::AllocationSequence sequence = LoadSequence(command, nullptr, &recorded_conf);
  analysis::ReplayOptions options = MakeOptions(command, command.conf);
  const analysis::RecordedLimits limits = CarryRecordedLimits(command, options, recorded_conf);
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
    const nlohmann::json out = {{"trace", DisplayName(command.trace)},
                                {"alloc_conf", options.conf.ToString()},
                                {"limit_as_recorded", limits.carried},
                                {"events", result.ops_replayed},
                                {"stopped_at_oom", result.stopped_at_oom},
                                {"seconds", result.seconds},
                                {"devices", devices}};
    fmt::print("{}\n", out.dump(2));
    return any_oom ? kOom : kOk;
  }
  fmt::print("replayed   {} of {} allocation events of {} in {:.2f} s\n", result.ops_replayed,
             sequence.ops.size(), DisplayName(command.trace), result.seconds);
  fmt::print("allocator  {}\n", options.conf.ToString());
  if (limits.carried) {
    fmt::print("           {} (--no-recorded-limit replays without it)\n", limits.Summary());
  }
  fmt::print("\n");
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
    fmt::print("{}\n", nlohmann::json{{"trace", DisplayName(command.trace)},
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

}  // namespace

Command AddReplay(CLI::App& app) {
  auto options = std::make_shared<ReplayCommandOptions>();
  CLI::App* sub = app.add_subcommand("replay", "Run a trace's allocations under another allocator "
                                               "configuration on a simulated device");
  AddCommon(sub, options.get());
  sub->add_option("--alloc-conf", options->conf,
                  "allocator configuration, e.g. growth=off,limit=6GiB (default: FRAGSCOPE_ALLOC_CONF, "
                  "else the default policy)");
  AddRecordedLimitFlag(sub, options.get());
  sub->add_option("--out", options->out, "write the replay as a new trace");
  sub->add_flag("--continue", options->continue_past_oom, "go on past OOMs (default: stop at the first)");
  sub->add_flag("!--no-min-limit", options->min_limit,
                "after an OOM, do not search the smallest limit at which this policy runs the trace");
  return {sub, [options] { return RunReplay(*options); }};
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
