// torch.profiler traces with memory events (`torch.profiler.profile(profile_memory=True)`, the
// Chrome trace JSON that export_chrome_trace and TensorBoard's trace handler write, gzip or not):
// every "[memory]" instant event becomes an alloc or a free, on the device it names, tagged with the
// innermost operator around it; every "[OutOfMemory]" instant (an allocation that failed while the
// profiler ran) an oom event; ProfilerStep#N spans become step markers. docs/importers.md,
// "torch.profiler traces".
//
// Two versions: current PyTorch gives each memory event `Addr`, `Bytes` (negative for a free),
// `Total Allocated` and `Total Reserved`; older ones (2021) give only `Bytes`, `Device Type` and
// `Device Id`, so frees pair with allocations of the same size, the most recent first, and the
// addresses are invented (said in a warning).
#pragma once

#include <string>
#include <string_view>

#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

// Whether the start of a file (gzip-compressed or not) is a Chrome trace JSON that torch.profiler
// wrote. Cheap, never throws.
bool LooksLikeTorchProfilerTrace(std::string_view head);

// The trace's memory events as fragscope events. `bytes` is the whole file (gzip is undone here,
// to at most kMaxProfilerJsonBytes). Throws TraceError naming `name` (and the byte offset of a
// JSON error) when the text is not JSON, holds no memory event and no OOM (the profile was taken
// without profile_memory=True), passes `limits`, or a number cannot be real.
Trace ParseTorchProfilerTrace(std::string_view bytes, const std::string& name, const ReadLimits& limits = {});

// A compressed trace expands to at most this many bytes of JSON (4 GiB): more is refused.
inline constexpr std::uint64_t kMaxProfilerJsonBytes = std::uint64_t{4} << 30;

}  // namespace fragscope::traces
