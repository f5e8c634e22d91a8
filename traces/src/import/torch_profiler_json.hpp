// The part of a torch.profiler Chrome trace that becomes events, read from its JSON with a SAX
// handler: the "[memory]" and "[OutOfMemory]" instants, the operator and step spans around them,
// the device properties and whether memory profiling was on. The JSON goes through
// lenient::Reader, so a raw control character, a byte that is not UTF-8 or a trailing comma costs
// a warning, not the trace; a trace cut while it was written (the JSON ends early) keeps what came
// before the cut.
// torch_profiler.cpp turns the result into fragscope events.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/traces/read_limits.hpp"
#include "lenient_json.hpp"

namespace fragscope::traces::profiler {

// c10::DeviceType values the profiler writes as "Device Type".
constexpr std::int64_t kCpu = 0;
constexpr std::int64_t kCuda = 1;

struct MemoryEvent {
  double ts = 0;                 // µs, as written
  std::string tid;
  std::int64_t device_type = kCpu;
  std::int64_t device_id = -1;
  std::int64_t bytes = 0;        // negative: a free
  std::optional<std::uint64_t> addr;
  // The allocator's running totals after this event (PyTorch >= 1.10), where the event has them.
  std::optional<std::uint64_t> total_allocated;
  std::optional<std::uint64_t> total_reserved;
  std::uint64_t order = 0;       // position in the file
};

struct Span {
  double begin = 0, end = 0;     // µs
  std::string tid;
  std::string name;
  std::uint64_t order = 0;
};

struct GpuProperties {
  std::string name;
  std::uint64_t memory = 0;
};

struct Scan {
  std::vector<MemoryEvent> memory;  // in file order
  // "[OutOfMemory]" instants (the allocator's reportOutOfMemoryToProfiler), in file order: `bytes`
  // is the request (0 where the event gives none), the totals those at the failure; never an addr.
  std::vector<MemoryEvent> ooms;
  std::vector<Span> ops;            // cpu_op / Operator / user_annotation spans
  std::vector<Span> steps;          // ProfilerStep#N spans
  std::map<std::int64_t, GpuProperties> gpus;
  std::uint64_t events_seen = 0;
  bool profile_memory = false;      // the trace says memory profiling was on ("profile_memory": 1)
  // Where the JSON ended before it was complete (a file cut while it was written); what was read
  // before it is kept.
  std::optional<std::uint64_t> cut_at;
  lenient::Repairs repairs;         // bytes replaced to read it (lenient_json.hpp)
};

// Reads `text` (JSON, not compressed). Throws TraceError naming `name` and the byte offset where the
// JSON is malformed other than by being cut short, and when `limits` are passed.
Scan ScanJson(std::string_view text, const std::string& name, const ReadLimits& limits);

}  // namespace fragscope::traces::profiler
