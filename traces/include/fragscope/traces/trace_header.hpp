// What a trace says about the run that produced it: who wrote it, under which allocator
// configuration, on which devices. Stored once at the start of every trace file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fragscope::traces {

struct DeviceDescription {
  std::uint32_t index = 0;       // the `device` field of events
  std::string name;              // "simulated device", "NVIDIA H200", "host (23.47 GiB RAM)"
  std::string backing;           // "sim", "host", "cuda", "vmm", "async", or the source ("pytorch")
  std::uint64_t capacity = 0;    // bytes; 0 when unknown
  std::uint64_t limit = 0;       // bytes; 0 when unknown
  bool operator==(const DeviceDescription&) const = default;  // (TraceHeader's == needs it)
};

struct TraceHeader {
  std::string producer;          // "fragscope-train 0.1.0", "fragscope synth 0.1.0", ...
  std::string source_format;     // "fragscope" for native traces; importers name theirs
  std::string alloc_conf;        // canonical allocator configuration (AllocConf::ToString)
  std::vector<DeviceDescription> devices;
  std::uint64_t created_unix_ns = 0;
  std::vector<std::pair<std::string, std::string>> metadata;  // free-form, in order

  const DeviceDescription* Device(std::uint32_t index) const {
    for (const auto& device : devices) if (device.index == index) return &device;
    return nullptr;
  }
  bool operator==(const TraceHeader&) const = default;
};

}  // namespace fragscope::traces
