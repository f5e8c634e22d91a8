// Synthetic workloads that look like training: weights allocated once, activations growing through
// forward and freed in backward, gradients and optimizer temporaries, batch sizes that vary step to
// step, and now and then a long-lived odd size that pins a hole. Seeded: the same options give the
// same events. For tests, benchmarks and `fragscope synth`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fragscope/allocator/config.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"  // Progress
#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

struct SynthOptions {
  std::uint64_t events = 100000;    // stop after this many alloc/free events (about)
  std::uint64_t seed = 1;
  std::uint32_t devices = 1;
  std::string alloc_conf = "backing=sim,capacity=80GiB";  // the allocator that "ran" it
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;  // events so far, of `events`
};

// The header Synthesize returns, known before the run, so that a trace writer (which writes the
// header first) can be opened before the events flow.
traces::TraceHeader SynthHeader(const SynthOptions& options);

// Runs the workload through a fragscope allocator with `sink` attached (markers included).
// Returns the header to store with the trace. Throws ConfigError for a bad alloc_conf.
// `events` counts alloc, free and oom events (one per request or free); markers and region events
// come on top. The header carries no creation time, so the same options give the same trace.
traces::TraceHeader Synthesize(const SynthOptions& options, traces::EventSink& sink);

// The header Synthesize will return, without running the workload: for writers that need it first.
// Throws as Synthesize does for a bad alloc_conf.
traces::TraceHeader SynthHeader(const SynthOptions& options);

}  // namespace fragscope::analysis
