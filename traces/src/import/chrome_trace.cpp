// Chrome trace-event JSON export (see chrome_trace.hpp). Streams one JSON object per line inside
// {"traceEvents":[...]}, so memory stays proportional to the live allocations, not the trace.
#include "fragscope/traces/chrome_trace.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fragscope::traces {
namespace {

struct DeviceState {
  std::uint64_t in_use = 0, reserved = 0, requested = 0, address_space = 0;
  std::uint64_t written_in_use = UINT64_MAX, written_reserved = UINT64_MAX, written_requested = UINT64_MAX;
  std::uint64_t written_address_space = 0;  // drawn only for traces that reserve address space
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> by_id;       // size, rounded
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> by_address;  // size, rounded
  std::unordered_map<std::uint64_t, std::uint64_t> regions;                              // address -> size
};

std::uint64_t Sub(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

void WriteChromeTrace(const Trace& trace, std::ostream& out) {
  bool timed = false;
  std::uint64_t t0 = UINT64_MAX;
  for (const Event& e : trace.events) {
    timed = timed || e.time_ns != 0;
    t0 = std::min(t0, e.time_ns);
  }
  bool first = true;
  auto emit = [&](const nlohmann::json& j) {
    out << (first ? "\n" : ",\n") << j.dump();
    first = false;
  };
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":"
      << nlohmann::json{{"producer", trace.header.producer}, {"source_format", trace.header.source_format},
                        {"alloc_conf", trace.header.alloc_conf}}
             .dump()
      << ",\"traceEvents\":[";
  std::map<std::uint32_t, DeviceState> devices;
  for (const DeviceDescription& d : trace.header.devices) {
    devices[d.index];
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", d.index}, {"tid", 0},
          {"args", {{"name", fmt::format("device {}: {}", d.index, d.name)}}}});
  }
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& e = trace.events[i];
    const double ts = timed ? static_cast<double>(e.time_ns - t0) / 1000.0 : static_cast<double>(i);
    auto [it, added] = devices.try_emplace(e.device);
    DeviceState& s = it->second;
    if (added)
      emit({{"ph", "M"}, {"name", "process_name"}, {"pid", e.device}, {"tid", 0},
            {"args", {{"name", fmt::format("device {}", e.device)}}}});
    switch (e.type) {
      case EventType::kAlloc: {
        const std::uint64_t rounded = e.rounded != 0 ? e.rounded : e.size;
        s.in_use += rounded;
        s.requested += e.size;
        if (e.alloc_id != 0) s.by_id[e.alloc_id] = {e.size, rounded};
        s.by_address[e.address] = {e.size, rounded};
        break;
      }
      case EventType::kFree: {
        std::pair<std::uint64_t, std::uint64_t> sizes{e.size, e.rounded};
        if (auto found = s.by_id.find(e.alloc_id); e.alloc_id != 0 && found != s.by_id.end()) {
          sizes = found->second;
          s.by_id.erase(found);
        } else if (auto at = s.by_address.find(e.address); at != s.by_address.end()) {
          sizes = at->second;
        }
        s.by_address.erase(e.address);
        s.in_use = Sub(s.in_use, sizes.second);
        s.requested = Sub(s.requested, sizes.first);
        break;
      }
      case EventType::kRegionReserve:
        s.reserved += e.size;
        s.regions[e.address] = e.size;
        break;
      case EventType::kRegionRelease: {
        std::uint64_t size = e.size;
        if (auto at = s.regions.find(e.address); at != s.regions.end()) {
          if (size == 0) size = at->second;
          s.regions.erase(at);
        }
        s.reserved = Sub(s.reserved, size);
        break;
      }
      // Pages mapped into address space are memory held from the device: reserved, as regions.
      case EventType::kMap: s.reserved += e.size; break;
      case EventType::kUnmap: s.reserved = Sub(s.reserved, e.size); break;
      case EventType::kAddressReserve: s.address_space += e.size; break;
      case EventType::kAddressRelease: s.address_space = Sub(s.address_space, e.size); break;
      case EventType::kMarker:
        emit({{"ph", "i"}, {"s", "p"}, {"name", trace.TagName(e.tag)}, {"cat", "marker"}, {"ts", ts},
              {"pid", e.device}, {"tid", 0}, {"args", {{"seq", e.seq}}}});
        break;
      case EventType::kOom: {
        const OomRecord& o = e.oom;
        nlohmann::json args = {{"seq", e.seq}, {"cause", ToString(o.cause)}, {"tag", trace.TagName(e.tag)}};
        // Only the numbers the evidence gave (OomRecord::present): an absent limit is no "limit 0".
        const std::pair<const char*, std::pair<OomField, std::uint64_t>> numbers[] = {
            {"request", {kOomRequest, o.request}},
            {"rounded", {kOomRounded, o.rounded}},
            {"limit", {kOomLimit, o.limit}},
            {"reserved", {kOomReserved, o.reserved}},
            {"in_use", {kOomInUse, o.in_use}},
            {"live_requested", {kOomLiveRequested, o.live_requested}},
            {"free_in_regions", {kOomFreeInRegions, o.free_in_regions}},
            {"largest_free", {kOomLargestFree, o.largest_free}},
            {"headroom", {kOomHeadroom, o.headroom}}};
        for (const auto& [name, number] : numbers) {
          if (o.Has(number.first)) args[name] = number.second;
        }
        emit({{"ph", "i"}, {"s", "p"}, {"cat", "oom"}, {"ts", ts}, {"pid", e.device}, {"tid", 0},
              {"name", fmt::format("OOM: {} B ({})", o.request, ToString(o.cause))}, {"args", std::move(args)}});
        break;
      }
    }
    auto counter = [&](const char* name, std::uint64_t value, std::uint64_t& written) {
      if (value == written) return;
      written = value;
      emit({{"ph", "C"}, {"name", name}, {"ts", ts}, {"pid", e.device}, {"tid", 0}, {"args", {{"bytes", value}}}});
    };
    counter("in use", s.in_use, s.written_in_use);
    counter("reserved", s.reserved, s.written_reserved);
    counter("live requested", s.requested, s.written_requested);
    counter("address space", s.address_space, s.written_address_space);
  }
  out << "\n]}\n";
}

}  // namespace fragscope::traces
