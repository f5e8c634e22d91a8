// The words for an out-of-memory event of a PyTorch memory snapshot (timeline.cpp calls it for
// evidence whose source_format is "pytorch-snapshot"). The importer decided the cause by the rule
// of docs/importers.md (traces::ClassifySnapshotOom); this says why in PyTorch's terms: the
// segment size the allocator asks the driver for (S), and which cached blocks could serve the
// request at all (PyTorch serves a request only from blocks cached on its own stream and in its own
// pool: at most 1 MiB from the small pool, larger from the large pool).
#pragma once

#include "fragscope/analysis/oom_diagnosis.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

// Fills diagnosis.report (numbers, the recorded cause, explanation, suggestion) and
// diagnosis.framework_advice for the oom event `oom`, with `state` the device's memory at it.
// False, touching nothing, for a cause the rule does not give (backing or request-too-large, as an
// older reader recorded them): those keep the general words.
bool ExplainSnapshotOom(const traces::TraceHeader& header, std::uint32_t device, const traces::Event& oom,
                        const MemoryState& state, OomDiagnosis& diagnosis);

}  // namespace fragscope::analysis
