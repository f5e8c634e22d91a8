// What `replay`, `compare` and `min-limit` share: the options every one of them takes, reading a
// trace's allocation sequence (a history, or a state with --as-sequence; another framework's host
// memory left out), and the configuration a replay runs. Internal to the command-line tool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "fragscope/allocator/config.hpp"
#include "fragscope/analysis/recorded_limits.hpp"
#include "fragscope/analysis/replay.hpp"

namespace fragscope::cli {

struct SequenceOptions {
  std::string trace;
  std::string capacity;
  bool json = false;
  bool as_sequence = false;  // replay a state's live chunks as if allocated in address order
  bool recorded_only = false;  // drop the blocks live before recording started, and their frees
  bool recorded_limit = true;  // replay (and compare) under the trace's own limit where STR sets none
};

// The peak LOAD of a sequence, devices summed (see sequence_input.cpp).
std::uint64_t SequenceLoad(const analysis::AllocationSequence& sequence);

// Reads `options.trace` as an allocation sequence; exit-2 errors for a message, a state without
// --as-sequence, nothing to replay. `full_load`, when given, receives SequenceLoad of the whole
// trace, before --recorded-only cut it; `recorded`, the configuration a fragscope trace was recorded
// under (nullopt for another allocator's evidence).
analysis::AllocationSequence LoadSequence(const SequenceOptions& options, std::uint64_t* full_load = nullptr,
                                          std::optional<AllocConf>* recorded = nullptr);

// The configuration a replay runs, resolved so that printing it says what ran (backing=sim,
// --capacity as capacity=). `source_out` receives where it came from: --alloc-conf,
// FRAGSCOPE_ALLOC_CONF or defaults.
analysis::ReplayOptions MakeOptions(const SequenceOptions& common, const std::string& conf_text,
                                    std::string* source_out = nullptr);

// The recorded limit (or virtual devices) into `options` where its configuration sets none, unless
// --no-recorded-limit; returns what was carried.
analysis::RecordedLimits CarryRecordedLimits(const SequenceOptions& common, analysis::ReplayOptions& options,
                                             const std::optional<AllocConf>& recorded);

// Another run of the same configuration, without the recording, progress and stop rule of `options`.
analysis::ReplayOptions SameConfiguration(const analysis::ReplayOptions& options);

// The options every sequence command takes (trace, --capacity, --json, --as-sequence, --recorded-only).
void AddCommon(CLI::App* sub, SequenceOptions* options);
// --no-recorded-limit, for `replay` and `compare` (min-limit searches the limit itself).
void AddRecordedLimitFlag(CLI::App* sub, SequenceOptions* options);

}  // namespace fragscope::cli
