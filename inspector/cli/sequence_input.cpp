// What `replay`, `compare` and `min-limit` share: reading a trace's allocation sequence, the
// configuration a replay runs (sequence_input.hpp).
#include "sequence_input.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/traces/byte_math.hpp"
#include "fragscope/evidence/readers.hpp"

namespace fragscope::cli {
namespace {

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

}  // namespace

// The peak LOAD of a sequence, devices summed: every allocation the trace made, and each request
// that failed in it for the moment it was asked (a replay asks for it again). The lower bound any
// allocator needs to run the sequence, whatever a replay of it met.
std::uint64_t SequenceLoad(const analysis::AllocationSequence& sequence) {
  std::uint64_t load = 0;
  for (std::uint64_t device : analysis::PeakLoadByDevice(sequence)) load += device;
  return load;
}

namespace {

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

// The configuration a fragscope trace was recorded under (its limit, its virtual devices); nullopt
// for evidence of another allocator, whose header holds that allocator's own words.
std::optional<AllocConf> RecordedConf(const traces::TraceHeader& header) {
  if (header.alloc_conf.empty()) return std::nullopt;
  try {
    return ParseAllocConf(header.alloc_conf);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

}  // namespace

// `full_load`, when given, receives SequenceLoad of the whole trace, before --recorded-only cut it;
// `recorded`, the configuration the trace was recorded under (RecordedConf).
analysis::AllocationSequence LoadSequence(const SequenceOptions& options, std::uint64_t* full_load,
                                          std::optional<AllocConf>* recorded) {
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
  if (recorded != nullptr) *recorded = RecordedConf(input->header());
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
                                    std::string* source_out) {
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

// Reproducing an OOM means replaying where it ran out: a configuration that sets no limit (nor
// virtual devices) runs under the limits the trace recorded, as the inspector's compare does
// (analysis::WithRecordedLimits); --no-recorded-limit replays on the whole simulated device.
analysis::RecordedLimits CarryRecordedLimits(const SequenceOptions& common, analysis::ReplayOptions& options,
                                             const std::optional<AllocConf>& recorded) {
  if (!common.recorded_limit) return analysis::RecordedLimits{options.conf, false};
  analysis::RecordedLimits limits = analysis::WithRecordedLimits(options.conf, recorded ? &*recorded : nullptr);
  options.conf = limits.conf;
  return limits;
}

// Another run of the same configuration, without the recording, progress and stop rule of `options`.
analysis::ReplayOptions SameConfiguration(const analysis::ReplayOptions& options) {
  analysis::ReplayOptions again;
  again.conf = options.conf;
  again.capacity = options.capacity;
  return again;
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

void AddRecordedLimitFlag(CLI::App* sub, SequenceOptions* options) {
  sub->add_flag("!--no-recorded-limit", options->recorded_limit,
                "replay on the whole simulated device: without the limit (or virtual devices) the trace "
                "was recorded under, which a configuration that sets none otherwise keeps");
}

}  // namespace fragscope::cli
