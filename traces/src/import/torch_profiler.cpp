// torch.profiler Chrome traces with memory events → fragscope events (torch_profiler.hpp).
// torch_profiler_json.cpp reads what matters out of the JSON; this file pairs frees with
// allocations, lays out what was live before the profiled window (from "Total Allocated") and the
// reserved memory (from "Total Reserved"), and tags each allocation with the operator around it.
#include "fragscope/traces/torch_profiler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "gzip_text.hpp"
#include "torch_profiler_json.hpp"
#include "trace_builder.hpp"

namespace fragscope::traces {
namespace {

using namespace profiler;

// Devices other than CUDA get indices apart from the GPUs' own: the CPU is 1,000,000, another
// type T with id I is 1,000,000 + 1,000 × T + I.
constexpr std::uint32_t kOtherDevices = 1'000'000;

std::string DeviceTypeName(std::int64_t type) {
  switch (type) {
    case kCpu: return "cpu";
    case kCuda: return "cuda";
    case 2: return "mkldnn";
    case 9: return "xla";
    case 12: return "xpu";
    case 13: return "mps";
    default: return fmt::format("device type {}", type);
  }
}

using SpansByThread = std::map<std::string, std::vector<Span>>;

// The operator spans per thread, by start; outer spans first where two start together, so the
// stack nests.
SpansByThread ByThread(std::vector<Span> ops) {
  SpansByThread spans;
  for (Span& s : ops) spans[s.tid].push_back(std::move(s));
  for (auto& [tid, list] : spans) {
    std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
  }
  return spans;
}

// For each memory event (in time order), the innermost operator span on its thread that holds it.
std::vector<std::string> EnclosingOps(const std::vector<MemoryEvent>& memory, const SpansByThread& spans) {
  std::vector<std::string> out(memory.size());
  std::map<std::string, std::vector<std::size_t>> by_thread;
  for (std::size_t i = 0; i < memory.size(); ++i) by_thread[memory[i].tid].push_back(i);
  for (const auto& [tid, list] : spans) {
    const auto found = by_thread.find(tid);
    if (found == by_thread.end()) continue;
    std::vector<const Span*> open;
    std::size_t next = 0;
    for (std::size_t index : found->second) {  // already in time order
      const double t = memory[index].ts;
      while (next < list.size() && list[next].begin <= t) {
        while (!open.empty() && open.back()->end < list[next].begin) open.pop_back();
        open.push_back(&list[next++]);
      }
      while (!open.empty() && open.back()->end < t) open.pop_back();
      if (!open.empty()) out[index] = open.back()->name;
    }
  }
  return out;
}

// Invented addresses, far above any real device pointer (user space ends below 2^47): the one
// allocation per device that stands for the bytes live before the window whose blocks the window
// never frees, and the device's reserved memory as regions from kReservedBase up.
constexpr std::uint64_t kBeforeBase = std::uint64_t{1} << 62;
constexpr std::uint64_t kReservedBase = std::uint64_t{1} << 63;

// What the running totals of one device's memory events say (PyTorch >= 1.10 writes them).
struct DeviceTotals {
  // "Total Allocated" seen, and consistent with the events' Bytes: the bytes live before the first
  // event are known.
  bool allocated = false;
  std::uint64_t before = 0;                                            // bytes live before the window
  std::vector<std::pair<std::uint64_t, std::uint64_t>> before_blocks;  // (address, bytes) the window frees
  std::uint64_t rest = 0;                                              // before, less those blocks
  // Total Allocated is below what the events' Bytes say was live before (not counted), or below
  // what the window frees of earlier blocks (those blocks are taken as all there was).
  bool disagrees = false, short_before = false;
  bool reserved = false;     // a "Total Reserved" above 0 seen
  std::uint64_t first_reserved = 0;
};

// One pass over the events (in time order) per device: the bytes live before the first event
// (Total Allocated − the Bytes of the events up to the first that carries it), the blocks from
// before that the window frees (frees of addresses it never allocated) and the first Total Reserved.
template <typename IndexOf>
std::map<std::uint32_t, DeviceTotals> ReadTotals(const std::vector<MemoryEvent>& memory, const IndexOf& index_of) {
  struct Pass {
    std::int64_t net = 0;
    bool overflow = false, seen_allocated = false, seen_reserved = false;
    std::set<std::uint64_t> live, claimed;
    std::uint64_t freed_before = 0;
  };
  std::map<std::uint32_t, Pass> passes;
  std::map<std::uint32_t, DeviceTotals> totals;
  for (const MemoryEvent& m : memory) {
    if (m.bytes == 0) continue;
    const std::uint32_t device = index_of(m);
    Pass& p = passes[device];
    DeviceTotals& t = totals[device];
    p.overflow = p.overflow || __builtin_add_overflow(p.net, m.bytes, &p.net);
    if (m.total_allocated && !p.seen_allocated) {
      p.seen_allocated = true;
      std::int64_t before = 0;
      if (!p.overflow && *m.total_allocated <= static_cast<std::uint64_t>(INT64_MAX) &&
          !__builtin_sub_overflow(static_cast<std::int64_t>(*m.total_allocated), p.net, &before)) {
        if (before >= 0) {
          t.allocated = true;
          t.before = static_cast<std::uint64_t>(before);
        } else {
          t.disagrees = true;
        }
      }
    }
    if (m.total_reserved) {
      if (!p.seen_reserved) t.first_reserved = *m.total_reserved;
      p.seen_reserved = true;
      t.reserved = t.reserved || *m.total_reserved > 0;
    }
    if (!m.addr) continue;
    if (m.bytes > 0) {
      p.live.insert(*m.addr);
    } else if (p.live.erase(*m.addr) == 0 && p.claimed.insert(*m.addr).second) {
      const std::uint64_t size = 0 - static_cast<std::uint64_t>(m.bytes);
      t.before_blocks.emplace_back(*m.addr, size);
      p.freed_before = CheckedAdd(p.freed_before, size).value_or(UINT64_MAX);
    }
  }
  for (auto& [device, t] : totals) {
    if (!t.allocated) {
      t.before_blocks.clear();  // without the totals, frees of earlier blocks are left out as before
      continue;
    }
    const std::uint64_t freed = passes[device].freed_before;
    t.short_before = freed > t.before;
    t.rest = freed > t.before ? 0 : t.before - freed;
  }
  return totals;
}

// An "[OutOfMemory]" event's numbers (docs/importers.md): the request ("Bytes", already rounded by
// the caching allocator) and the allocator's totals at the failure where the event has them. The
// event gives no limit and not the device's free memory, so ClassifyOom leaves the cause unknown.
OomRecord OomNumbers(const MemoryEvent& m) {
  OomRecord r;
  r.present = 0;
  if (m.bytes > 0) {
    r.request = r.rounded = static_cast<std::uint64_t>(m.bytes);
    r.present |= kOomRequest | kOomRounded;
  }
  if (m.total_allocated) {
    r.in_use = *m.total_allocated;
    r.present |= kOomInUse;
  }
  // PyTorch's CPU allocator keeps no pool and reports 0 reserved: no reserved count, not 0 bytes.
  if (m.total_reserved && m.device_type != kCpu && (!m.total_allocated || *m.total_reserved >= *m.total_allocated)) {
    r.reserved = *m.total_reserved;
    r.present |= kOomReserved;
  }
  if (r.Has(kOomInUse | kOomReserved)) {
    r.free_in_regions = r.reserved - r.in_use;
    r.present |= kOomFreeInRegions;
  }
  r.cause = ClassifyOom(r, false);
  return r;
}

}  // namespace

bool LooksLikeTorchProfilerTrace(std::string_view head) {
  std::string inflated;
  if (gzip::IsGzip(head)) {
    inflated = gzip::GunzipPrefix(head, std::size_t{1} << 20);
    head = inflated;
  }
  std::size_t first = 0;
  while (first < head.size() && (head[first] == ' ' || head[first] == '\n' || head[first] == '\r' || head[first] == '\t')) {
    ++first;
  }
  if (first >= head.size() || head[first] != '{') return false;
  // A Chrome trace that PyTorch's profiler wrote: its event list, and Kineto's or the profiler's
  // own marks near the start ("schemaVersion", "deviceProperties", "PyTorch Profiler", memory events).
  if (head.find("\"traceEvents\"") == std::string_view::npos) return false;
  for (std::string_view mark : {"\"[memory]\"", "\"PyTorch Profiler\"", "\"schemaVersion\"", "\"deviceProperties\""}) {
    if (head.find(mark) != std::string_view::npos) return true;
  }
  return false;
}

Trace ParseTorchProfilerTrace(std::string_view bytes, const std::string& name, const ReadLimits& limits) {
  std::string inflated;
  std::optional<std::uint64_t> gzip_cut;  // compressed bytes read before a cut gzip stream ended
  const bool compressed = gzip::IsGzip(bytes);
  if (compressed) {
    inflated = gzip::Gunzip(bytes, name, kMaxProfilerJsonBytes, &gzip_cut);
    bytes = inflated;
  }
  Scan scan = ScanJson(bytes, name, limits);
  if (scan.memory.empty() && scan.ooms.empty()) {
    if (scan.cut_at) {
      throw TraceError(name, *scan.cut_at, "the trace breaks off before its JSON is complete (cut while it was "
                                           "written?), with no memory event before the cut");
    }
    if (scan.profile_memory) {
      throw TraceError(name, "memory profiling was on (profile_memory=True) but no allocation or free happened "
                             "inside the profiled window: there is no memory event to read (profile a window in "
                             "which the model allocates, such as a whole training step)");
    }
    throw TraceError(name, "a torch.profiler trace without memory events: profile with "
                           "torch.profiler.profile(profile_memory=True) to record them");
  }
  const std::uint64_t json_size = bytes.size();
  inflated.clear();
  inflated.shrink_to_fit();

  std::vector<MemoryEvent>& memory = scan.memory;
  std::vector<MemoryEvent>& ooms = scan.ooms;
  const auto by_time = [](const MemoryEvent& a, const MemoryEvent& b) { return a.ts < b.ts; };
  std::stable_sort(memory.begin(), memory.end(), by_time);
  std::stable_sort(ooms.begin(), ooms.end(), by_time);
  const SpansByThread spans = ByThread(std::move(scan.ops));
  const std::vector<std::string> ops = EnclosingOps(memory, spans);
  const std::vector<std::string> oom_ops = EnclosingOps(ooms, spans);
  double t0 = memory.empty() ? ooms.front().ts : memory.front().ts;
  if (!ooms.empty()) t0 = std::min(t0, ooms.front().ts);
  for (const Span& s : scan.steps) t0 = std::min(t0, s.begin);
  const auto ns = [t0](double ts) {
    const long double v = (static_cast<long double>(ts) - t0) * 1000.0L;
    return v <= 0 ? std::uint64_t{0} : v >= 1.8e19L ? UINT64_MAX : static_cast<std::uint64_t>(std::llround(v));
  };

  Trace trace;
  trace.header.producer = "torch.profiler (profile_memory=True)";
  trace.header.source_format = "torch-profiler";
  trace.header.source.allocator = "PyTorch (torch.profiler memory events)";
  trace.header.metadata.emplace_back("source", name);

  // Devices: CUDA ids keep their number; the CPU and other types get theirs apart.
  const auto index_of = [](const MemoryEvent& m) -> std::uint32_t {
    if (m.device_type == kCuda && m.device_id >= 0 && m.device_id < kOtherDevices) return static_cast<std::uint32_t>(m.device_id);
    if (m.device_type == kCpu) return kOtherDevices;
    const std::int64_t type = std::clamp<std::int64_t>(m.device_type, 0, 999);
    const std::int64_t id = std::clamp<std::int64_t>(m.device_id, 0, 999);
    return kOtherDevices + static_cast<std::uint32_t>(1000 * type + id);
  };
  std::map<std::uint32_t, DeviceDescription> devices;
  bool addresses = true;
  for (const MemoryEvent& m : memory) addresses = addresses && m.addr.has_value();
  // A device of its own for each one named, by a memory event or an OOM.
  const auto describe = [&](const MemoryEvent& m) {
    const std::uint32_t index = index_of(m);
    if (devices.count(index)) return;
    DeviceDescription d;
    d.index = index;
    d.backing = "pytorch";
    if (m.device_type == kCuda) {
      d.name = fmt::format("cuda:{}", m.device_id);
      if (const auto gpu = scan.gpus.find(m.device_id); gpu != scan.gpus.end()) {
        if (!gpu->second.name.empty()) d.name += " (" + gpu->second.name + ")";
        if (IsRepresentableSize(gpu->second.memory)) d.capacity = gpu->second.memory;
      }
    } else if (m.device_type == kCpu) {
      d.name = "cpu (host memory)";
      d.backing = "pytorch host memory";  // PyTorch's CPU allocator: traces::IsForeignHostMemory
    } else {
      d.name = fmt::format("{}:{}", DeviceTypeName(m.device_type), std::max<std::int64_t>(m.device_id, 0));
    }
    devices.emplace(index, std::move(d));
  };
  for (const MemoryEvent& m : memory) describe(m);
  for (const MemoryEvent& m : ooms) describe(m);
  for (auto& [index, d] : devices) trace.header.devices.push_back(d);

  TraceBuilder build(trace);
  struct Live {
    std::uint64_t address, size, alloc_id;
  };
  std::map<std::pair<std::uint32_t, std::uint64_t>, Live> by_address;                // with Addr
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<Live>> by_size;     // without
  std::uint64_t alloc_id = 0;

  // Before the window (docs/importers.md): what Total Allocated says was live, as allocations at
  // event 0 — the blocks the window frees at their own addresses, one allocation for the rest —
  // and the reserved memory of the first Total Reserved, as PyTorch snapshots lay out their start.
  const std::map<std::uint32_t, DeviceTotals> totals = ReadTotals(memory, index_of);
  std::map<std::uint32_t, std::uint64_t> reserved;  // per device with Total Reserved: bytes laid out
  const TagId before_tag = build.Intern("(allocated before profiling)");
  const auto reconstruct = [&](std::uint32_t device, std::uint64_t address, std::uint64_t size) {
    if (!IsRepresentableSize(size) || address + size < address) {
      throw TraceError(name, fmt::format("{}: {} bytes live before profiling at {:#x} are more than 4 EiB or run "
                                         "past 2^64", devices.at(device).name, size, address));
    }
    Event& e = build.Add(EventType::kAlloc, device, 0);
    e.address = address;
    e.size = e.rounded = size;
    e.alloc_id = ++alloc_id;
    e.tag = before_tag;
    by_address[{device, address}] = Live{address, size, alloc_id};
  };
  const auto check_reserved = [&](std::uint32_t device, std::uint64_t total) {
    if (!IsRepresentableSize(total)) {
      throw TraceError(name, fmt::format("{}: \"Total Reserved\" {}", devices.at(device).name, OversizeMessage(total)));
    }
  };
  for (const auto& [device, t] : totals) {
    if (t.reserved) {
      check_reserved(device, t.first_reserved);
      reserved[device] = t.first_reserved;
      if (t.first_reserved > 0) {
        Event& r = build.Add(EventType::kRegionReserve, device, 0);
        r.address = kReservedBase;
        r.size = t.first_reserved;
      }
      trace.header.source.reserved_without_layout.push_back(device);
    }
    if (!t.allocated) continue;
    for (const auto& [address, size] : t.before_blocks) reconstruct(device, address, size);
    if (t.rest > 0) reconstruct(device, kBeforeBase, t.rest);
    // The rest is one allocation for blocks of unknown number: no block count then.
    trace.header.source.before_recording.push_back(
        {device, t.before_blocks.size() + (t.rest > 0 ? 1 : 0), t.before, t.before, t.rest == 0});
  }
  trace.header.source.reconstructed_events = trace.events.size();

  // Steps as markers on every device, merged with the memory events by time.
  struct Mark {
    double ts;
    std::string text;
    std::uint64_t order;
  };
  std::vector<Mark> marks;
  for (const Span& s : scan.steps) {
    const std::string step = s.name.substr(std::string_view("ProfilerStep#").size());
    marks.push_back({s.begin, fmt::format("step {} begin", step), s.order});
    marks.push_back({s.end, fmt::format("step {} end", step), s.order});
  }
  std::stable_sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.ts < b.ts; });

  std::map<std::uint32_t, std::uint64_t> next_address;  // invented addresses: one range each, never reused
  std::uint64_t unmatched = 0, unmatched_bytes = 0, lost_frees = 0;
  std::size_t mark = 0;
  // Reserved memory follows Total Reserved: what it adds is reserved before the event, what it
  // gives back is released after it, so after every event the reserved bytes are the recorded ones.
  const auto reserve_to = [&](std::uint32_t device, const MemoryEvent& m, bool grow) {
    const auto it = reserved.find(device);
    if (it == reserved.end() || !m.total_reserved) return;
    const std::uint64_t target = *m.total_reserved;
    check_reserved(device, target);
    std::uint64_t& now = it->second;
    if (grow && target > now) {
      Event& r = build.Add(EventType::kRegionReserve, device, ns(m.ts));
      r.address = kReservedBase + now;
      r.size = target - now;
      now = target;
    } else if (!grow && target < now) {
      Event& r = build.Add(EventType::kRegionRelease, device, ns(m.ts));
      r.address = kReservedBase + target;
      r.size = now - target;
      now = target;
    }
  };
  const auto allocate = [&](std::uint32_t device, std::size_t i, std::uint64_t size) {
    const MemoryEvent& m = memory[i];
    std::uint64_t address = 0;
    if (m.addr) {
      address = *m.addr;
    } else {
      std::uint64_t& next = next_address.try_emplace(device, std::uint64_t{1} << 32).first->second;
      address = next;
      const auto after = CheckedAdd(next, (size + 511) / 512 * 512);
      if (!after) throw TraceError(name, "the allocations add up to more than 2^64 bytes of invented address space");
      next = *after;
    }
    if (address + size < address) {
      throw TraceError(name, fmt::format("memory event at ts {} µs: {} bytes at {:#x} run past 2^64", m.ts, size, address));
    }
    if (m.addr) {
      // An allocation where one is still live: the evidence lost the free in between (a dropped
      // event). The earlier one is taken as freed here, and counted in a warning.
      if (const auto it = by_address.find({device, address}); it != by_address.end()) {
        Event& f = build.Add(EventType::kFree, device, ns(m.ts));
        f.address = it->second.address;
        f.size = f.rounded = it->second.size;
        f.alloc_id = it->second.alloc_id;
        by_address.erase(it);
        ++lost_frees;
      }
    }
    Event& e = build.Add(EventType::kAlloc, device, ns(m.ts));
    e.address = address;
    e.size = e.rounded = size;  // the profiler reports the block's size: what the allocator gave
    e.alloc_id = ++alloc_id;
    e.tag = build.Intern(ops[i]);
    const Live live{address, size, alloc_id};
    if (m.addr) by_address[{device, address}] = live;
    else by_size[{device, size}].push_back(live);
  };
  const auto release = [&](std::uint32_t device, const MemoryEvent& m, std::uint64_t size) {
    std::optional<Live> freed;
    if (m.addr) {
      if (const auto it = by_address.find({device, *m.addr}); it != by_address.end()) {
        freed = it->second;
        by_address.erase(it);
      }
    } else if (auto it = by_size.find({device, size}); it != by_size.end() && !it->second.empty()) {
      freed = it->second.back();  // the most recent of that size (temporaries die young)
      it->second.pop_back();
    }
    if (!freed) {
      ++unmatched;  // allocated before the profiler started
      unmatched_bytes += size;
      return;
    }
    Event& e = build.Add(EventType::kFree, device, ns(m.ts));
    e.address = freed->address;
    e.size = e.rounded = freed->size;
    e.alloc_id = freed->alloc_id;
  };
  const auto marks_until = [&](double ts) {
    for (; mark < marks.size() && marks[mark].ts <= ts; ++mark) {
      for (const auto& [index, d] : devices) build.Add(EventType::kMarker, index, ns(marks[mark].ts)).tag = build.Intern(marks[mark].text);
    }
  };
  // The OOMs before `next` (in time, then in the file; all of them for nullptr), each with the
  // allocator's numbers at the failure as the event gives them.
  std::size_t next_oom = 0;
  const auto ooms_before = [&](const MemoryEvent* next) {
    for (; next_oom < ooms.size(); ++next_oom) {
      const MemoryEvent& o = ooms[next_oom];
      if (next != nullptr && (o.ts > next->ts || (o.ts == next->ts && o.order > next->order))) return;
      marks_until(o.ts);
      const std::uint32_t device = index_of(o);
      const std::pair<const char*, std::optional<std::uint64_t>> totals_at_oom[] = {
          {"Total Allocated", o.total_allocated}, {"Total Reserved", o.total_reserved}};
      for (const auto& [key, total] : totals_at_oom) {
        if (total && !IsRepresentableSize(*total)) {
          throw TraceError(name, fmt::format("\"[OutOfMemory]\" event at ts {} µs: \"{}\" {}", o.ts, key,
                                             OversizeMessage(*total)));
        }
      }
      Event& e = build.Add(EventType::kOom, device, ns(o.ts));
      e.oom = OomNumbers(o);
      e.size = e.rounded = e.oom.request;
      e.tag = build.Intern(oom_ops[next_oom]);
    }
  };
  for (std::size_t i = 0; i < memory.size(); ++i) {
    const MemoryEvent& m = memory[i];
    ooms_before(&m);
    marks_until(m.ts);
    if (m.bytes == 0) continue;  // nothing allocated, nothing freed
    const std::uint32_t device = index_of(m);
    const std::uint64_t size = m.bytes > 0 ? static_cast<std::uint64_t>(m.bytes) : 0 - static_cast<std::uint64_t>(m.bytes);
    if (!IsRepresentableSize(size)) {
      throw TraceError(name, fmt::format("memory event at ts {} µs: {} bytes is more than 4 EiB, more than any device has",
                                         m.ts, size));
    }
    reserve_to(device, m, true);
    if (m.bytes > 0) allocate(device, i, size);
    else release(device, m, size);
    reserve_to(device, m, false);
  }
  ooms_before(nullptr);
  for (; mark < marks.size(); ++mark) {
    for (const auto& [index, d] : devices) build.Add(EventType::kMarker, index, ns(marks[mark].ts)).tag = build.Intern(marks[mark].text);
  }

  if (scan.cut_at) {
    trace.warnings.push_back(fmt::format(
        "{}: {}the JSON breaks off at byte {} of {} before it is complete (cut while it was written?): {} before "
        "the cut {} read, any after it are lost", name,
        gzip_cut ? fmt::format("the gzip data ends after {} compressed bytes; ", *gzip_cut) : std::string(),
        *scan.cut_at, json_size,
        memory.size() == 1 ? std::string("the memory event") : fmt::format("the {} memory events", memory.size()),
        memory.size() == 1 ? "is" : "are"));
  } else if (gzip_cut) {
    trace.warnings.push_back(fmt::format("{}: the gzip data ends after {} compressed bytes (cut while it was "
                                         "written?); the JSON before the cut is complete", name, *gzip_cut));
  }
  if (const lenient::Repairs& r = scan.repairs; r.total() > 0) {
    std::string kinds;
    const auto kind = [&](std::uint64_t count, const char* one, const char* many) {
      if (count > 0) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", count, count == 1 ? one : many);
    };
    kind(r.control, "raw control character in a string", "raw control characters in strings");
    kind(r.utf8, "byte that is not UTF-8", "bytes that are not UTF-8");
    kind(r.escapes, "backslash that starts no valid escape", "backslashes that start no valid escape");
    kind(r.commas, "trailing comma", "trailing commas");
    trace.warnings.push_back(fmt::format("{}: the JSON is not strictly valid; to read it, {} replaced ({}; the first at "
                                         "byte {}{}): names with them read differently", name,
                                         r.total() == 1 ? std::string("1 byte was") : fmt::format("{} bytes were", r.total()),
                                         kinds, r.first.value_or(0),
                                         compressed ? " of the uncompressed JSON" : ""));
  }
  if (!addresses) {
    trace.warnings.push_back(fmt::format(
        "{}: the memory events carry no addresses (a profiler before PyTorch 1.10): frees are paired with "
        "allocations of the same size, the most recent first, and addresses are invented (one range per "
        "allocation, never reused), so the address map shows no real layout", name));
  }
  for (const auto& [device, t] : totals) {
    if (t.disagrees || t.short_before) {
      trace.warnings.push_back(fmt::format(
          "{}: {}: \"Total Allocated\" says less was live before profiling than the events' Bytes {}", name,
          devices.at(device).name,
          t.disagrees ? "do: what was live before is not counted"
                      : "free of it: the blocks the window frees are taken as all there was"));
    }
  }
  if (lost_frees > 0) {
    trace.warnings.push_back(fmt::format("{}: {} allocations at an address still live (the free before them is "
                                         "missing): the earlier allocation is taken as freed there",
                                         name, lost_frees));
  }
  if (unmatched > 0) {
    trace.warnings.push_back(fmt::format("{}: {} frees ({}) of memory allocated before profiling started: left out",
                                         name, unmatched, FormatBytes(unmatched_bytes)));
  }
  return trace;
}

}  // namespace fragscope::traces
