// torch.profiler Chrome traces with memory events → fragscope events (torch_profiler.hpp). The JSON
// is read with a SAX handler that keeps only what becomes events — the "[memory]" instants, the
// operator spans around them and the device properties — so a trace of a few hundred megabytes does
// not become a DOM ten times its size.
#include "fragscope/traces/torch_profiler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fragscope/traces/byte_math.hpp"
#include "gzip_text.hpp"
#include "trace_builder.hpp"

namespace fragscope::traces {
namespace {

using nlohmann::json;

// c10::DeviceType values the profiler writes as "Device Type".
constexpr std::int64_t kCpu = 0;
constexpr std::int64_t kCuda = 1;
// Devices other than CUDA get indices apart from the GPUs' own: the CPU is 1,000,000, another
// type T with id I is 1,000,000 + 1,000 × T + I.
constexpr std::uint32_t kOtherDevices = 1'000'000;

struct MemoryEvent {
  double ts = 0;                 // µs, as written
  std::string tid;
  std::int64_t device_type = kCpu;
  std::int64_t device_id = -1;
  std::int64_t bytes = 0;        // negative: a free
  std::optional<std::uint64_t> addr;
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

// What one event object of traceEvents says that matters here.
struct EventFields {
  std::string name, ph, cat, tid;
  std::optional<double> ts, dur;
  std::optional<std::int64_t> device_type, device_id, bytes;
  std::optional<std::uint64_t> addr;
  void Clear() { *this = EventFields(); }
};

enum class Role { kOther, kRoot, kEvents, kEvent, kArgs, kDevices, kDevice };

class Handler : public nlohmann::json_sax<json> {
 public:
  Handler(const std::string& name, const ReadLimits& limits) : name_(name), limits_(limits) {}

  std::vector<MemoryEvent> memory;
  std::vector<Span> ops;
  std::vector<Span> steps;
  std::map<std::int64_t, GpuProperties> gpus;
  std::uint64_t events_seen = 0;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t value) override { return Number(static_cast<double>(value), value, std::nullopt); }
  bool number_unsigned(number_unsigned_t value) override {
    const std::optional<std::int64_t> as_signed =
        value <= static_cast<std::uint64_t>(INT64_MAX) ? std::optional(static_cast<std::int64_t>(value)) : std::nullopt;
    return Number(static_cast<double>(value), as_signed, value);
  }
  bool number_float(number_float_t value, const string_t&) override {
    return Number(value, std::nullopt, std::nullopt, true);
  }
  bool string(string_t& value) override {
    if (stack_.empty()) return true;
    const Frame& top = stack_.back();
    if (top.role == Role::kEvent) {
      if (top.key == "name") event_.name = value;
      else if (top.key == "ph") event_.ph = value;
      else if (top.key == "cat") event_.cat = value;
      else if (top.key == "tid") event_.tid = value;
      else if (top.key == "ts") event_.ts = ParseNumber(value);
      else if (top.key == "dur") event_.dur = ParseNumber(value);
    } else if (top.role == Role::kArgs && top.key == "Addr") {
      // Some versions write the address as a string ("0x7f..." or decimal).
      try {
        std::size_t used = 0;
        const unsigned long long a = std::stoull(value, &used, 0);
        if (used == value.size()) event_.addr = a;
      } catch (const std::exception&) {
      }
    } else if (top.role == Role::kDevice && top.key == "name") {
      device_name_ = value;
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool key(string_t& value) override {
    stack_.back().key = value;
    return true;
  }
  bool start_object(std::size_t) override {
    Role role = Role::kOther;
    if (stack_.empty()) role = Role::kRoot;
    else if (stack_.back().role == Role::kEvents) role = Role::kEvent;
    else if (stack_.back().role == Role::kEvent && stack_.back().key == "args") role = Role::kArgs;
    else if (stack_.back().role == Role::kDevices) role = Role::kDevice;
    if (role == Role::kEvent) event_.Clear();
    if (role == Role::kDevice) device_id_.reset(), device_memory_ = 0, device_name_.clear();
    stack_.push_back({role, {}});
    return true;
  }
  bool end_object() override {
    const Role role = stack_.back().role;
    stack_.pop_back();
    if (role == Role::kEvent) EndEvent();
    if (role == Role::kDevice && device_id_) gpus[*device_id_] = {device_name_, device_memory_};
    return true;
  }
  bool start_array(std::size_t) override {
    Role role = Role::kOther;
    if (stack_.empty()) role = Role::kEvents;  // a bare array of events is a Chrome trace too
    else if (stack_.back().role == Role::kRoot && stack_.back().key == "traceEvents") role = Role::kEvents;
    else if (stack_.back().role == Role::kRoot && stack_.back().key == "deviceProperties") role = Role::kDevices;
    stack_.push_back({role, {}});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& error) override {
    // nlohmann's message names the line and column; the offset is the byte.
    std::string what = error.what();
    if (const auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    throw TraceError(name_, position == 0 ? 0 : position - 1, fmt::format("not a Chrome trace JSON: {}", what));
  }

 private:
  struct Frame {
    Role role;
    std::string key;
  };

  static std::optional<double> ParseNumber(const std::string& text) {
    try {
      std::size_t used = 0;
      const double value = std::stod(text, &used);
      if (used == text.size()) return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
  }

  bool Number(double value, std::optional<std::int64_t> integer, std::optional<std::uint64_t> unsigned_value,
              bool is_float = false) {
    if (stack_.empty()) return true;
    const Frame& top = stack_.back();
    if (top.role == Role::kEvent) {
      if (top.key == "ts") event_.ts = value;
      else if (top.key == "dur") event_.dur = value;
      else if (top.key == "tid") event_.tid = integer ? std::to_string(*integer) : fmt::format("{}", value);
    } else if (top.role == Role::kArgs) {
      if (top.key == "Bytes") {
        if (!integer || is_float) {
          throw TraceError(name_, fmt::format("memory event {}: \"Bytes\" {} is not a whole number of bytes that "
                                              "fits in 63 bits", memory.size() + 1, value));
        }
        event_.bytes = integer;
      } else if (top.key == "Device Type" && integer) {
        event_.device_type = integer;
      } else if (top.key == "Device Id" && integer) {
        event_.device_id = integer;
      } else if (top.key == "Addr") {
        if (unsigned_value) event_.addr = unsigned_value;
        else if (integer) event_.addr = static_cast<std::uint64_t>(*integer);  // written as a signed 64-bit value
      }
    } else if (top.role == Role::kDevice) {
      if (top.key == "id" && integer) device_id_ = integer;
      else if (top.key == "totalGlobalMem" && unsigned_value) device_memory_ = *unsigned_value;
      else if (top.key == "totalGlobalMem" && integer && *integer > 0) device_memory_ = static_cast<std::uint64_t>(*integer);
    }
    return true;
  }

  void EndEvent() {
    ++events_seen;
    if (!event_.ts || !std::isfinite(*event_.ts) || *event_.ts < 0) return;  // metadata ("M") has none
    if (event_.name == "[memory]" && event_.bytes) {
      if (memory.size() >= limits_.max_events) {
        throw TraceError(name_, fmt::format("more than {} memory events (--max-events)", limits_.max_events));
      }
      MemoryEvent m;
      m.ts = *event_.ts;
      m.tid = event_.tid;
      m.device_type = event_.device_type.value_or(kCpu);
      m.device_id = event_.device_id.value_or(-1);
      m.bytes = *event_.bytes;
      m.addr = event_.addr;
      m.order = events_seen;
      memory.push_back(std::move(m));
      return;
    }
    if (event_.ph != "X" || !event_.dur || !std::isfinite(*event_.dur) || *event_.dur < 0) return;
    Span span{*event_.ts, *event_.ts + *event_.dur, event_.tid, event_.name, events_seen};
    if (event_.name.rfind("ProfilerStep#", 0) == 0) {
      steps.push_back(std::move(span));
    } else if (event_.cat == "Operator" || event_.cat == "cpu_op" || event_.cat == "user_annotation") {
      ops.push_back(std::move(span));
    }
  }

  const std::string& name_;
  const ReadLimits& limits_;
  std::vector<Frame> stack_;
  EventFields event_;
  std::optional<std::int64_t> device_id_;
  std::uint64_t device_memory_ = 0;
  std::string device_name_;
};

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

// For each memory event (in time order), the innermost operator span on its thread that holds it.
std::vector<std::string> EnclosingOps(const std::vector<MemoryEvent>& memory, std::vector<Span> ops) {
  std::vector<std::string> out(memory.size());
  std::map<std::string, std::vector<std::size_t>> by_thread;
  for (std::size_t i = 0; i < memory.size(); ++i) by_thread[memory[i].tid].push_back(i);
  std::map<std::string, std::vector<Span>> spans;
  for (Span& s : ops) spans[s.tid].push_back(std::move(s));
  for (auto& [tid, list] : spans) {
    // Outer spans first where two start together, so the stack nests.
    std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
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
  if (gzip::IsGzip(bytes)) {
    inflated = gzip::Gunzip(bytes, name, kMaxProfilerJsonBytes);
    bytes = inflated;
  }
  Handler handler(name, limits);
  json::sax_parse(bytes.begin(), bytes.end(), &handler);
  if (handler.memory.empty()) {
    throw TraceError(name, "a torch.profiler trace without memory events: profile with "
                           "torch.profiler.profile(profile_memory=True) to record them");
  }
  inflated.clear();
  inflated.shrink_to_fit();

  std::vector<MemoryEvent>& memory = handler.memory;
  std::stable_sort(memory.begin(), memory.end(), [](const MemoryEvent& a, const MemoryEvent& b) { return a.ts < b.ts; });
  const std::vector<std::string> ops = EnclosingOps(memory, std::move(handler.ops));
  double t0 = memory.front().ts;
  for (const Span& s : handler.steps) t0 = std::min(t0, s.begin);
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
  for (const MemoryEvent& m : memory) {
    addresses = addresses && m.addr.has_value();
    const std::uint32_t index = index_of(m);
    if (devices.count(index)) continue;
    DeviceDescription d;
    d.index = index;
    d.backing = "pytorch";
    if (m.device_type == kCuda) {
      d.name = fmt::format("cuda:{}", m.device_id);
      if (const auto gpu = handler.gpus.find(m.device_id); gpu != handler.gpus.end()) {
        if (!gpu->second.name.empty()) d.name += " (" + gpu->second.name + ")";
        if (IsRepresentableSize(gpu->second.memory)) d.capacity = gpu->second.memory;
      }
    } else if (m.device_type == kCpu) {
      d.name = "cpu (host memory)";
    } else {
      d.name = fmt::format("{}:{}", DeviceTypeName(m.device_type), std::max<std::int64_t>(m.device_id, 0));
    }
    devices.emplace(index, std::move(d));
  }
  for (auto& [index, d] : devices) trace.header.devices.push_back(d);

  TraceBuilder build(trace);
  // Steps as markers on every device, merged with the memory events by time.
  struct Mark {
    double ts;
    std::string text;
    std::uint64_t order;
  };
  std::vector<Mark> marks;
  for (const Span& s : handler.steps) {
    const std::string step = s.name.substr(std::string_view("ProfilerStep#").size());
    marks.push_back({s.begin, fmt::format("step {} begin", step), s.order});
    marks.push_back({s.end, fmt::format("step {} end", step), s.order});
  }
  std::stable_sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.ts < b.ts; });

  struct Live {
    std::uint64_t address, size, alloc_id;
  };
  std::map<std::pair<std::uint32_t, std::uint64_t>, Live> by_address;                // with Addr
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<Live>> by_size;     // without
  std::map<std::uint32_t, std::uint64_t> next_address;  // invented addresses: one range each, never reused
  std::uint64_t alloc_id = 0, unmatched = 0, unmatched_bytes = 0, lost_frees = 0;
  std::size_t mark = 0;
  for (std::size_t i = 0; i < memory.size(); ++i) {
    const MemoryEvent& m = memory[i];
    for (; mark < marks.size() && marks[mark].ts <= m.ts; ++mark) {
      for (const auto& [index, d] : devices) build.Add(EventType::kMarker, index, ns(marks[mark].ts)).tag = build.Intern(marks[mark].text);
    }
    const std::uint32_t device = index_of(m);
    const std::uint64_t size = m.bytes > 0 ? static_cast<std::uint64_t>(m.bytes) : 0 - static_cast<std::uint64_t>(m.bytes);
    if (!IsRepresentableSize(size)) {
      throw TraceError(name, fmt::format("memory event at ts {} µs: {} bytes is more than 4 EiB, more than any device has",
                                         m.ts, size));
    }
    if (m.bytes > 0) {
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
      continue;
    }
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
      continue;
    }
    Event& e = build.Add(EventType::kFree, device, ns(m.ts));
    e.address = freed->address;
    e.size = e.rounded = freed->size;
    e.alloc_id = freed->alloc_id;
  }
  for (; mark < marks.size(); ++mark) {
    for (const auto& [index, d] : devices) build.Add(EventType::kMarker, index, ns(marks[mark].ts)).tag = build.Intern(marks[mark].text);
  }
  if (!addresses) {
    trace.warnings.push_back(fmt::format(
        "{}: the memory events carry no addresses (a profiler before PyTorch 1.10): frees are paired with "
        "allocations of the same size, the most recent first, and addresses are invented (one range per "
        "allocation, never reused), so the address map shows no real layout", name));
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
