// The allocators of one run, built from one configuration: a backing, and one allocator per
// (virtual) device over it. This is what programs create; they never build allocators by hand.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope {

class MemorySystem {
 public:
  // Opens the backing and builds the allocators. Throws ConfigError when the configuration does not
  // fit the device (a limit above capacity, virtual devices that do not fit) and BackingError when
  // the device cannot be opened or the preallocation fails.
  static std::unique_ptr<MemorySystem> Create(const AllocConf& conf);
  // For tests: the same over a backing built elsewhere.
  static std::unique_ptr<MemorySystem> Create(const AllocConf& conf,
                                              std::unique_ptr<Backing> backing);
  ~MemorySystem();

  std::size_t device_count() const { return devices_.size(); }
  DeviceAllocator& device(std::size_t index) { return *devices_.at(index); }
  const DeviceAllocator& device(std::size_t index) const { return *devices_.at(index); }
  Backing& backing() { return *backing_; }
  const AllocConf& conf() const { return conf_; }
  // One line: "sim 80.00 GiB, bfc growth, limit 12.00 GiB, gc" — for logs and headers.
  std::string Describe() const;

  void SetSink(traces::EventSink* sink);
  // The header a trace of this run carries: producer, canonical configuration, one device
  // description per (virtual) device with its limit.
  traces::TraceHeader MakeTraceHeader(const std::string& producer) const;

 private:
  MemorySystem() = default;
  AllocConf conf_;
  std::unique_ptr<Backing> backing_;
  std::vector<std::unique_ptr<DeviceAllocator>> devices_;
};

}  // namespace fragscope
