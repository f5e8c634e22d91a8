// Helpers of the replay and min-limit tests: hand-made and synthesized event streams fed to
// BuildAllocationSequence as a trace reader would, and replay options from a configuration string.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/synth.hpp"
#include "support/recording_sink.hpp"

namespace fragscope::analysis::replay_fixtures {

using testing::RecordingSink;
using traces::Event;
using traces::EventType;

// Replays that are meant to hit OOMs make the allocator warn once per OOM; keep the log readable.
class QuietOoms {
 public:
  QuietOoms() : level_(spdlog::get_level()) { spdlog::set_level(spdlog::level::err); }
  ~QuietOoms() { spdlog::set_level(level_); }

 private:
  spdlog::level::level_enum level_;
};

// Feeds `events` in blocks of `block` events, as a trace reader would.
inline AllocationSequence Build(const traces::TraceHeader& header, const std::vector<Event>& events,
                         const std::vector<std::string>* tags = nullptr, std::size_t block = 1000) {
  std::size_t next = 0;
  return BuildAllocationSequence(
      header,
      [&](std::vector<Event>* out) {
        if (next >= events.size()) return false;
        const std::size_t end = std::min(events.size(), next + block);
        out->assign(events.begin() + static_cast<std::ptrdiff_t>(next),
                    events.begin() + static_cast<std::ptrdiff_t>(end));
        next = end;
        return true;
      },
      tags);
}

struct Trace {
  traces::TraceHeader header;
  std::vector<Event> events;
  AllocationSequence sequence;
};

inline Trace SynthTrace(std::uint64_t events, const std::string& conf = "backing=sim,capacity=80GiB",
                 std::uint32_t devices = 1) {
  SynthOptions options;
  options.events = events;
  options.alloc_conf = conf;
  options.devices = devices;
  RecordingSink sink;
  Trace trace;
  trace.header = Synthesize(options, sink);
  trace.events = sink.events();
  const std::vector<std::string> tags = sink.Names();
  trace.sequence = Build(trace.header, trace.events, &tags);
  return trace;
}

inline Event Make(EventType type, std::uint32_t device, std::uint64_t address, std::uint64_t size,
           std::uint64_t id, std::uint64_t seq) {
  Event e;
  e.type = type;
  e.device = device;
  e.address = address;
  e.size = size;
  e.rounded = type == EventType::kAlloc ? RoundUp(size) : 0;
  e.alloc_id = id;
  e.seq = seq;
  return e;
}
inline Event Alloc(std::uint32_t device, std::uint64_t address, std::uint64_t size, std::uint64_t id,
            std::uint64_t seq) {
  return Make(EventType::kAlloc, device, address, size, id, seq);
}
inline Event Free(std::uint32_t device, std::uint64_t address, std::uint64_t id, std::uint64_t seq) {
  return Make(EventType::kFree, device, address, 0, id, seq);
}

inline ReplayOptions Options(const std::string& conf) {
  ReplayOptions options;
  options.conf = ParseAllocConf(conf);
  return options;
}

// Eight 1 MiB blocks fill four 2 MiB regions; every other one is freed: 4 MiB free in four
// separate 1 MiB holes; then a 1.5 MiB request, which fits none of them.
inline std::vector<Event> FourMebibyteHolesThenOneAndAHalf() {
  std::vector<Event> events;
  std::uint64_t seq = 0;
  for (std::uint64_t i = 0; i < 8; ++i) events.push_back(Alloc(0, 0x100000 * (i + 1), MiB, i + 1, seq++));
  for (std::uint64_t i = 0; i < 8; i += 2) events.push_back(Free(0, 0x100000 * (i + 1), i + 1, seq++));
  events.push_back(Alloc(0, 0x900000, MiB + MiB / 2, 9, seq++));
  return events;
}

// Peaks computed from events alone, independently of the analysis library.
struct Peaks {
  std::uint64_t load = 0, in_use = 0, reserved = 0, waste = 0;
  double utilization = 1.0;  // most in use while reserved is at its peak, over that peak
};

inline Peaks PeaksOf(const std::vector<Event>& events, std::uint32_t device) {
  Peaks p;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> live;  // address -> size, rounded
  std::uint64_t load = 0, in_use = 0, reserved = 0, best_in_use = 0;
  for (const Event& e : events) {
    if (e.device != device) continue;
    switch (e.type) {
      case EventType::kAlloc:
        live[e.address] = {e.size, e.rounded};
        load += e.size;
        in_use += e.rounded;
        break;
      case EventType::kFree: {
        auto it = live.find(e.address);
        if (it == live.end()) continue;
        load -= it->second.first;
        in_use -= it->second.second;
        live.erase(it);
        break;
      }
      case EventType::kRegionReserve:
      case EventType::kMap: reserved += e.size; break;  // mapped pages are reserved memory
      case EventType::kRegionRelease:
      case EventType::kUnmap: reserved -= e.size; break;
      default: continue;
    }
    p.load = std::max(p.load, load);
    p.in_use = std::max(p.in_use, in_use);
    p.waste = std::max(p.waste, in_use - load);
    if (reserved > p.reserved) {
      p.reserved = reserved;
      best_in_use = in_use;
    } else if (reserved == p.reserved) {
      best_in_use = std::max(best_in_use, in_use);
    }
  }
  p.utilization = p.reserved == 0 ? 1.0 : static_cast<double>(best_in_use) / static_cast<double>(p.reserved);
  return p;
}

}  // namespace fragscope::analysis::replay_fixtures
