// PyTorch memory snapshot → fragscope trace. docs/importers.md ("PyTorch memory snapshots")
// describes the mapping; pytorch_model.cpp takes the pickle apart, pytorch_rebuild.cpp rebuilds
// the state at the start of recording, this file emits the events.
#include "fragscope/traces/pytorch_snapshot.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <queue>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

#include "gzip_text.hpp"
#include "pickle_reader.hpp"
#include "pytorch_model.hpp"
#include "trace_builder.hpp"

namespace fragscope::traces {
namespace {

using namespace pytorch_import;

struct LiveAlloc {
  std::uint64_t rounded = 0;
  std::uint64_t requested = 0;
  std::uint64_t alloc_id = 0;
  TagId tag = kNoTag;
};

struct DeviceState {
  RangeMap regions;
  std::map<std::uint64_t, LiveAlloc> live;
  std::uint64_t reserved = 0;
  std::uint64_t in_use = 0;
  std::uint64_t live_requested = 0;
};

std::uint64_t ToNs(std::uint64_t time_us) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max() / 1000;
  return time_us > kMax ? std::numeric_limits<std::uint64_t>::max() : time_us * 1000;
}

class Importer {
 public:
  Importer(const pickle::Document& doc, const std::string& name)
      : doc_(doc), frames_(doc), log_(std::string(BaseName(name)) + ": ") {}

  Trace Run() {
    std::vector<std::string> warnings;
    snapshot_ = ExtractSnapshot(doc_, &warnings);
    for (const auto& w : warnings) log_.Add("malformed block", w);
    trace_.header.producer = "PyTorch memory snapshot";
    trace_.header.source_format = "pytorch-snapshot";
    trace_.header.source.allocator = "PyTorch CUDA caching allocator";
    trace_.header.source.settings = snapshot_.settings;
    trace_.header.source.rounding = 512;  // kMinBlockSize: every block is a multiple of 512 bytes
    if (snapshot_.block_history_format) {
      trace_.header.metadata.emplace_back("pytorch.block_format", "torch 2.0 block history");
    }
    std::set<std::uint32_t> devices;
    for (const auto& seg : snapshot_.segments) devices.insert(seg.device);
    for (std::size_t d = 0; d < snapshot_.device_traces.size(); ++d) {
      if (!snapshot_.device_traces[d].empty()) devices.insert(static_cast<std::uint32_t>(d));
    }
    for (const auto& a : snapshot_.annotations) devices.insert(a.device);
    // Nothing anywhere: the devices are those torch listed (one trace list per device, empty when
    // nothing was recorded); a snapshot with no list names none, and none is invented.
    if (devices.empty()) {
      for (std::size_t d = 0; d < snapshot_.device_traces.size(); ++d) devices.insert(static_cast<std::uint32_t>(d));
    }
    for (std::uint32_t d : devices) {
      trace_.header.devices.push_back(DeviceDescription{d, fmt::format("cuda:{}", d), "pytorch", 0, 0});
    }
    // The state at the start of recording, as events stamped with the first timestamp.
    std::uint64_t first_us = std::numeric_limits<std::uint64_t>::max();
    for (const auto& events : snapshot_.device_traces) {
      for (const auto& e : events) if (e.time_us) first_us = std::min(first_us, *e.time_us);
    }
    now_ns_ = first_us == std::numeric_limits<std::uint64_t>::max() ? 0 : ToNs(first_us);
    for (std::uint32_t d : devices) {
      starts_[d] = RebuildStart(d, snapshot_, log_);
      EmitStart(d, starts_[d]);
      // What was live before recording started: PyTorch reserved for it too, so a like-for-like
      // comparison of the recorded window takes it out of both sides (docs/importers.md).
      std::uint64_t bytes = 0, requested = 0;
      for (const auto& [address, block] : starts_[d].blocks) {
        bytes += block.rounded;
        requested += block.requested;
      }
      trace_.header.source.before_recording.push_back({d, starts_[d].blocks.size(), bytes, requested});
    }
    // Everything so far lays out the start; the history begins after it (a state is all layout).
    trace_.header.source.reconstructed_events = trace_.events.size();
    Merge();
    for (std::uint32_t d : devices) CheckEnd(d);
    // A snapshot without trace events (recording was off, or only segments were dumped; the
    // "snapshot" action only marks when it was taken) is one moment: reported as a state, with no
    // metric that needs time (docs/importers.md).
    bool any_traced = false;
    for (const auto& events : snapshot_.device_traces) {
      for (const auto& e : events) any_traced |= e.action != Action::kSnapshot;
    }
    if (!any_traced) {
      trace_.header.kind = EvidenceKind::kState;
      const std::uint64_t last = trace_.events.empty() ? 0 : trace_.events.back().seq;
      for (std::uint32_t d : devices) {
        StateSummary state;
        state.device = d;
        state.moment = "when the snapshot was taken";
        state.at_seq = last;
        // The segments are every byte PyTorch held: a device with none held nothing, a known 0 (where
        // there are segments, their layout gives the sums).
        if (std::none_of(snapshot_.segments.begin(), snapshot_.segments.end(),
                         [d](const SourceSegment& seg) { return seg.device == d; })) {
          state.in_use = state.reserved = state.requested = 0;
        }
        trace_.header.source.states.push_back(std::move(state));
      }
    }
    trace_.stacks = frames_.TakeStacks();
    if (trace_.stacks.empty()) trace_.event_stacks.clear();
    trace_.warnings = log_.Finish();
    return std::move(trace_);
  }

 private:
  static std::string_view BaseName(std::string_view path) {
    const auto slash = path.find_last_of("/\\");
    return slash == path.npos ? path : path.substr(slash + 1);
  }

  TagId Intern(const std::string& text) { return builder_.Intern(text); }
  TagId TagOf(const pickle::Value* frames, const char* fallback) {
    const std::string tag = frames_.Tag(frames);
    return Intern(tag.empty() ? std::string(fallback) : tag);
  }

  void Emit(Event e, std::uint32_t stack) {
    e.time_ns = now_ns_;
    builder_.Append(e, stack);
  }
  void Marker(std::uint32_t device, const std::string& name, std::uint32_t stack) {
    Event e;
    e.type = EventType::kMarker;
    e.device = device;
    e.tag = Intern(name);
    Emit(e, stack);
  }
  void Region(EventType type, std::uint32_t device, std::uint64_t address, std::uint64_t size,
              std::uint32_t stack) {
    Event e;
    e.type = type;
    e.device = device;
    e.address = address;
    e.size = size;
    Emit(e, stack);
  }

  void Alloc(std::uint32_t device, std::uint64_t address, std::uint64_t requested,
             std::uint64_t rounded, std::uint64_t stream, TagId tag, std::uint32_t stack,
             std::size_t index) {
    DeviceState& s = state_[device];
    if (auto it = s.live.find(address); it != s.live.end()) {
      log_.Add("alloc into live memory",
               fmt::format("device {} event {}: alloc at {:#x} while the block there is live; "
                           "the earlier one is taken as freed",
                           device, index, address));
      s.in_use -= it->second.rounded;
      s.live_requested -= it->second.requested;
      s.live.erase(it);
    } else if (rounded > 0 && OverlapsLive(s, address, rounded)) {
      log_.Add("alloc into live memory",
               fmt::format("device {} event {}: alloc at {:#x} (+{}) overlaps a live block",
                           device, index, address, rounded));
    }
    Event e;
    e.type = EventType::kAlloc;
    e.device = device;
    e.stream = stream;
    e.address = address;
    e.size = requested;
    e.rounded = rounded;
    e.tag = tag;
    e.alloc_id = ++next_alloc_id_;
    if (auto r = Containing(s.regions, address); r != s.regions.end()) {
      e.region = r->first;
    } else {
      log_.Add("alloc outside segments",
               fmt::format("device {} event {}: alloc at {:#x} lies in no segment", device, index,
                           address));
    }
    s.live[address] = LiveAlloc{rounded, requested, e.alloc_id, tag};
    s.in_use += rounded;
    s.live_requested += requested;
    Emit(e, stack);
  }
  // True when [address, address + size) overlaps a live block.
  static bool OverlapsLive(const DeviceState& s, std::uint64_t address, std::uint64_t size) {
    auto it = s.live.lower_bound(address);
    if (it != s.live.end() && it->first - address < size) return true;
    if (it != s.live.begin()) {
      --it;
      if (address - it->first < it->second.rounded) return true;
    }
    return false;
  }

  // Pages of an expandable segment are `map`/`unmap` inside its address range (trace format 1.1),
  // so the timeline knows without a guess that they grow that segment; other segments are regions.
  bool InSpace(std::uint32_t device, std::uint64_t address, std::uint64_t size) {
    const RangeMap& spaces = spaces_[device];
    const auto it = Containing(spaces, address);
    return it != spaces.end() && size <= it->first + it->second - address;
  }

  void EmitStart(std::uint32_t device, const DeviceStart& start) {
    DeviceState& s = state_[device];
    spaces_[device] = ExpandableSpaces(device, snapshot_, log_);
    for (const auto& [address, size] : spaces_[device]) Region(EventType::kAddressReserve, device, address, size, 0);
    for (const auto& [address, size] : start.regions) {
      s.regions.emplace(address, size);
      s.reserved += size;
      Region(InSpace(device, address, size) ? EventType::kMap : EventType::kRegionReserve, device, address, size, 0);
    }
    for (const auto& [address, block] : start.blocks) {
      Alloc(device, address, block.requested, block.rounded, block.stream,
            TagOf(block.frames, "(allocated before recording)"), frames_.Stack(block.frames), 0);
    }
  }

  // Every device's trace in its own order, merged by time (devices and annotations are streams;
  // an event without time_us takes the time of the one before it in its stream).
  void Merge() {
    std::vector<std::size_t> cursor(snapshot_.device_traces.size() + 1, 0);
    std::vector<std::uint64_t> clock(cursor.size(), 0);
    std::stable_sort(snapshot_.annotations.begin(), snapshot_.annotations.end(),
                     [](const Annotation& a, const Annotation& b) {
                       return a.time_us.value_or(0) < b.time_us.value_or(0);
                     });
    const std::size_t notes = snapshot_.device_traces.size();
    auto size_of = [&](std::size_t stream) {
      return stream == notes ? snapshot_.annotations.size() : snapshot_.device_traces[stream].size();
    };
    auto time_of = [&](std::size_t stream) {
      const auto& t = stream == notes ? snapshot_.annotations[cursor[stream]].time_us
                                      : snapshot_.device_traces[stream][cursor[stream]].time_us;
      if (t) clock[stream] = ToNs(*t);
      return clock[stream];
    };
    using Head = std::pair<std::uint64_t, std::size_t>;  // (time, stream), smallest first
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
    for (std::size_t s = 0; s < cursor.size(); ++s) if (size_of(s) > 0) heads.emplace(time_of(s), s);
    while (!heads.empty()) {
      const auto [time, stream] = heads.top();
      heads.pop();
      now_ns_ = std::max(now_ns_, time);
      if (stream == notes) {
        const Annotation& a = snapshot_.annotations[cursor[stream]];
        Marker(a.device, a.name, 0);
      } else {
        Handle(snapshot_.device_traces[stream][cursor[stream]], cursor[stream]);
      }
      if (++cursor[stream] < size_of(stream)) heads.emplace(time_of(stream), stream);
    }
  }

  void Handle(const SourceEvent& e, std::size_t index) {
    DeviceState& s = state_[e.device];
    const std::uint32_t stack = frames_.Stack(e.frames);
    switch (e.action) {
      case Action::kAlloc:
        Alloc(e.device, e.addr, e.size, starts_[e.device].alloc_rounded[index], e.stream,
              TagOf(e.frames, "(no stack)"), stack, index);
        return;
      case Action::kFreeCompleted: {
        Event f;
        f.type = EventType::kFree;
        f.device = e.device;
        f.stream = e.stream;
        f.address = e.addr;
        f.size = e.size;
        f.rounded = RoundBlock(e.size);
        auto it = s.live.find(e.addr);
        if (it == s.live.end()) {
          log_.Add("free of an unknown block",
                   fmt::format("device {} event {}: free_completed at {:#x} of no live block",
                               e.device, index, e.addr));
        } else {
          if (it->second.requested != e.size) {
            log_.Add("free size differs",
                     fmt::format("device {} event {}: free_completed at {:#x} of {} bytes, the "
                                 "block holds {} requested bytes",
                                 e.device, index, e.addr, e.size, it->second.requested));
          }
          f.size = it->second.requested;
          f.rounded = it->second.rounded;
          f.alloc_id = it->second.alloc_id;
          f.tag = it->second.tag;
          if (auto r = Containing(s.regions, e.addr); r != s.regions.end()) f.region = r->first;
          s.in_use -= it->second.rounded;
          s.live_requested -= it->second.requested;
          s.live.erase(it);
        }
        Emit(f, stack);
        return;
      }
      case Action::kFreeRequested:
        if (!s.live.contains(e.addr)) {
          log_.Add("free of an unknown block",
                   fmt::format("device {} event {}: free_requested at {:#x} of no live block",
                               e.device, index, e.addr));
        }
        Marker(e.device, "free_requested", stack);
        return;
      case Action::kSegmentAlloc:
      case Action::kSegmentMap:
        if (e.size == 0) break;
        if (Overlaps(s.regions, e.addr, e.size)) {
          log_.Add("trace/segment disagreement",
                   fmt::format("device {} event {}: {} of {:#x} (+{}) overlaps reserved memory",
                               e.device, index, e.action_name, e.addr, e.size));
        } else {
          s.regions.emplace(e.addr, e.size);
          s.reserved += e.size;
        }
        Region(e.action == Action::kSegmentMap && InSpace(e.device, e.addr, e.size) ? EventType::kMap
                                                                                    : EventType::kRegionReserve,
               e.device, e.addr, e.size, stack);
        return;
      case Action::kSegmentFree:
      case Action::kSegmentUnmap: {
        const std::uint64_t covered = Carve(s.regions, e.addr, e.size);
        s.reserved -= covered;
        if (covered != e.size) {
          log_.Add("trace/segment disagreement",
                   fmt::format("device {} event {}: {} of {:#x} (+{}) but only {} bytes of it "
                               "were reserved",
                               e.device, index, e.action_name, e.addr, e.size, covered));
        }
        Region(e.action == Action::kSegmentUnmap && InSpace(e.device, e.addr, e.size) ? EventType::kUnmap
                                                                                      : EventType::kRegionRelease,
               e.device, e.addr, e.size, stack);
        return;
      }
      case Action::kSnapshot: Marker(e.device, "snapshot", stack); return;
      case Action::kOom: Oom(e, stack); return;
      case Action::kOther: break;
    }
    if (e.action == Action::kOther) {
      log_.Add("unknown action", fmt::format("device {} event {}: unknown action '{}', kept as a "
                                             "marker", e.device, index, e.action_name));
    }
    Marker(e.device, e.action_name.empty() ? "(no action)" : e.action_name, stack);
  }

  // The OOM's numbers from the rebuilt state; the cause by ClassifySnapshotOom (the rule of
  // docs/importers.md). The limit is what PyTorch could have held at that moment, reserved plus
  // the device's free memory: not the device's capacity, which a snapshot does not record.
  void Oom(const SourceEvent& e, std::uint32_t stack) {
    const DeviceState& s = state_[e.device];
    OomRecord r;
    r.request = e.size;
    r.rounded = e.size;
    r.reserved = s.reserved;
    r.in_use = s.in_use;
    r.live_requested = s.live_requested;
    r.free_in_regions = s.reserved > s.in_use ? s.reserved - s.in_use : 0;
    r.headroom = e.device_free;
    r.limit = s.reserved + e.device_free;
    r.region_count = s.regions.size();
    for (const auto& [start, size] : s.regions) {
      std::uint64_t cursor = start;
      auto first = s.live.lower_bound(start);
      if (first != s.live.begin()) {  // a block from below may reach into this range
        const auto& [address, block] = *std::prev(first);
        cursor = std::max(cursor, std::min(start + size, address + block.rounded));
      }
      for (auto it = first; it != s.live.end() && it->first < start + size; ++it) {
        if (it->first > cursor) {
          r.largest_free = std::max(r.largest_free, it->first - cursor);
          ++r.chunk_count;
        }
        ++r.chunk_count;
        cursor = std::max(cursor, it->first + it->second.rounded);
      }
      if (start + size > cursor) {
        r.largest_free = std::max(r.largest_free, start + size - cursor);
        ++r.chunk_count;
      }
    }
    r.cause = ClassifySnapshotOom(r);
    Event o;
    o.type = EventType::kOom;
    o.device = e.device;
    o.stream = e.stream;
    o.size = e.size;
    o.rounded = e.size;
    o.tag = TagOf(e.frames, "(no stack)");
    o.oom = r;
    Emit(o, stack);
  }

  void CheckEnd(std::uint32_t device) {
    std::uint64_t reserved = 0, in_use = 0, requested = 0;
    for (const auto& seg : snapshot_.segments) {
      if (seg.device != device) continue;
      reserved += seg.total_size;
      for (const auto& b : seg.blocks) {
        if (b.live) in_use += b.size, requested += b.requested;
      }
    }
    const DeviceState& s = state_[device];
    if (s.reserved != reserved || s.in_use != in_use || s.live_requested != requested) {
      log_.Add("end state differs",
               fmt::format("device {}: at the end of the trace {} reserved, {} in use, {} "
                           "requested; the segments say {}, {}, {}",
                           device, s.reserved, s.in_use, s.live_requested, reserved, in_use,
                           requested));
    }
  }

  const pickle::Document& doc_;
  FrameTable frames_;
  WarningLog log_;
  SourceSnapshot snapshot_;
  Trace trace_;
  TraceBuilder builder_{trace_, /*with_stacks=*/true};
  std::map<std::uint32_t, DeviceStart> starts_;
  std::map<std::uint32_t, RangeMap> spaces_;  // the address ranges of expandable segments, per device
  std::map<std::uint32_t, DeviceState> state_;
  std::uint64_t next_alloc_id_ = 0;
  std::uint64_t now_ns_ = 0;
};

// A pickle is a graph: memo references let one list or dict stand in many places at the cost of a
// few bytes each, so that a 4 KB file can name a million events. Before anything is extracted,
// count what the snapshot describes as the importer will walk it, every reference counted again
// (each expansion is an event to import), and refuse it when that passes the caps: more events
// than --max-events, or (ReadLimits::check_proportion) more events than bytes in the file, which
// no real snapshot has (every trace entry and block is a dict of its own, tens of bytes).
// A gzipped snapshot expands to at most this much (4 GiB), as a .json.gz profiler trace.
constexpr std::uint64_t kMaxInflatedSnapshot = std::uint64_t{4} << 30;

// Whether `text` is a JSON object whose first key is a snapshot's ("segments" or "device_traces"):
// torch.cuda.memory._snapshot() saved with json.dump, whose dict keeps that order.
bool StartsJsonSnapshot(std::string_view text) {
  std::size_t i = 0;
  const auto skip = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
  };
  skip();
  if (i >= text.size() || text[i] != '{') return false;
  ++i;
  skip();
  const std::string_view rest = text.substr(std::min(i, text.size()));
  return rest.starts_with("\"segments\"") || rest.starts_with("\"device_traces\"");
}

void CheckClaims(const pickle::Document& doc, std::uint64_t file_bytes, const std::string& name,
                 const ReadLimits& limits) {
  const pickle::Value& root = doc.root();
  if (root.kind != pickle::Kind::kDict) return;  // ExtractSnapshot says what is wrong
  // Counting walks each list once per reference to it, without expanding anything: a few steps
  // per byte of the file at most.
  std::uint64_t events = 0;
  std::set<std::uint64_t> devices;
  if (const pickle::Value* segments = doc.Get(root, "segments")) {
    for (pickle::ValueId id : doc.Items(*segments)) {
      const pickle::Value& seg = doc.at(id);
      if (seg.kind != pickle::Kind::kDict) continue;
      const pickle::Value* blocks = doc.Get(seg, "blocks");
      events += 1 + (blocks ? doc.Items(*blocks).size() : 0);
      const pickle::Value* device = doc.Get(seg, "device");
      const auto index = device ? pickle::AsU64(*device) : std::optional<std::uint64_t>(0);
      if (index) devices.insert(*index);
    }
  }
  if (const pickle::Value* traces = doc.Get(root, "device_traces")) {
    const auto lists = doc.Items(*traces);
    for (std::size_t d = 0; d < lists.size(); ++d) {
      const auto entries = doc.Items(doc.at(lists[d]));
      if (entries.empty()) continue;
      devices.insert(d);
      events += entries.size();
    }
  }
  if (const pickle::Value* notes = doc.Get(root, "external_annotations")) events += doc.Items(*notes).size();

  if (devices.size() > limits.max_devices) {
    throw TraceError(name, TooManyDevicesMessage(devices.size(), "in 'segments' and 'device_traces'", limits));
  }
  constexpr std::uint64_t kEventsPerByte = 1;
  if (events > limits.EventCap(file_bytes, kEventsPerByte)) {
    throw TraceError(name, TooManyEventsMessage(events,
                                                fmt::format("segments, blocks and trace entries on {} devices, "
                                                            "every pickle memo reference counted again",
                                                            devices.size()),
                                                file_bytes, kEventsPerByte, limits));
  }
}

}  // namespace

Trace ReadPytorchSnapshot(std::span<const std::uint8_t> bytes, const std::string& name, const ReadLimits& limits) {
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  // A snapshot gzipped (snapshot.pickle.gz) is read as the torch.profiler reader reads .json.gz.
  std::string inflated;
  if (gzip::IsGzip(text)) {
    inflated = gzip::Gunzip(text, name, kMaxInflatedSnapshot);
    text = inflated;
    bytes = std::span(reinterpret_cast<const std::uint8_t*>(inflated.data()), inflated.size());
  }
  // Saved with json.dump instead of pickled: the same tree of values.
  const bool json = StartsJsonSnapshot(text);
  try {
    const pickle::Document doc = json ? pickle::DocumentFromJson(text) : pickle::ParsePickle(bytes);
    CheckClaims(doc, bytes.size(), name, limits);
    return Importer(doc, name).Run();
  } catch (const pickle::PickleError& e) {
    throw TraceError(name, e.offset(), (json ? "JSON: " : "pickle: ") + e.detail());
  } catch (const TraceError&) {
    throw;
  } catch (const pytorch_import::MalformedSnapshot& e) {
    // The offending value's own byte offset; a JSON snapshot's values have none to name.
    if (e.offset()) throw TraceError(name, *e.offset(), e.what());
    throw TraceError(name, e.what());
  } catch (const std::runtime_error& e) {
    throw TraceError(name, 0, e.what());
  }
}

Trace ReadPytorchSnapshot(const std::string& path, const ReadLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, "cannot open the file");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw TraceError(path, 0, "read error");
  return ReadPytorchSnapshot(bytes, path, limits);
}

std::uint64_t PytorchSegmentSize(std::uint64_t request) {
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  if (request <= kMiB) return 2 * kMiB;
  if (request < 10 * kMiB) return 20 * kMiB;
  constexpr std::uint64_t kRound = 2 * kMiB;
  return request > kMaxBytes - kRound ? kMaxBytes : (request + kRound - 1) / kRound * kRound;
}

OomCause ClassifySnapshotOom(const OomRecord& numbers) {
  const std::uint64_t segment = PytorchSegmentSize(numbers.rounded);
  // PyTorch has already returned every wholly free cached segment to the driver and retried: a
  // fresh segment that fits in what the driver then reported free was refused for another reason.
  if (segment <= numbers.headroom) return OomCause::kUnknown;
  const std::uint64_t cached = numbers.reserved > numbers.in_use ? numbers.reserved - numbers.in_use : 0;
  const std::uint64_t available = CheckedAdd(numbers.headroom, cached).value_or(UINT64_MAX);
  return numbers.rounded > available ? OomCause::kCapacity : OomCause::kFragmentation;
}

bool LooksLikePytorchSnapshot(std::span<const std::uint8_t> head) {
  std::string inflated;
  if (gzip::IsGzip(std::string_view(reinterpret_cast<const char*>(head.data()), head.size()))) {
    inflated = gzip::GunzipPrefix(std::string_view(reinterpret_cast<const char*>(head.data()), head.size()), 4096);
    head = std::span(reinterpret_cast<const std::uint8_t*>(inflated.data()), inflated.size());
  }
  if (StartsJsonSnapshot(std::string_view(reinterpret_cast<const char*>(head.data()), head.size()))) return true;
  if (head.size() < 2 || head[0] != 0x80 || head[1] < 2 || head[1] > 5) return false;
  const std::string_view text(reinterpret_cast<const char*>(head.data()), std::min<std::size_t>(head.size(), 128));
  if (head.size() < 16) return true;  // too short to tell more
  return text.find("segments") != text.npos || text.find("device_traces") != text.npos;
}

}  // namespace fragscope::traces
