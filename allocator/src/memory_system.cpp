#include "fragscope/allocator/memory_system.hpp"

#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/log.hpp"
#include "fragscope/traces/byte_math.hpp"

namespace fragscope {

std::unique_ptr<MemorySystem> MemorySystem::Create(const AllocConf& conf) {
  return Create(conf, MakeBacking(conf));
}

std::unique_ptr<MemorySystem> MemorySystem::Create(const AllocConf& conf,
                                                   std::unique_ptr<Backing> backing) {
  std::unique_ptr<MemorySystem> system(new MemorySystem());
  system->conf_ = conf;
  system->backing_ = std::move(backing);
  const BackingInfo& info = system->backing_->info();
  const std::uint64_t capacity = info.capacity;
  const std::uint64_t available = capacity > conf.external_use ? capacity - conf.external_use : 0;
  const std::string fits = conf.external_use > 0
                               ? fmt::format("capacity {} minus external_use {} = {}",
                                             FormatBytes(capacity), FormatBytes(conf.external_use),
                                             FormatBytes(available))
                               : fmt::format("capacity {}", FormatBytes(capacity));

  std::vector<std::uint64_t> limits = conf.virtual_devices;
  if (limits.empty()) {
    const std::uint64_t limit = conf.limit.value_or(available);
    if (limit > available) {
      throw ConfigError("limit", fmt::format("limit={} exceeds what the device ({}) has: {}",
                                             FormatSizeExact(limit), info.device_name, fits));
    }
    limits.push_back(limit);
  } else {
    // Checked: a configuration built in code need not have passed the parser's 4 EiB cap.
    std::optional<std::uint64_t> total = 0;
    for (const std::uint64_t limit : limits) total = total ? traces::CheckedAdd(*total, limit) : total;
    if (!total || *total > available) {
      throw ConfigError("virtual_devices",
                        fmt::format("virtual devices need {} in all, more than the device ({}) has: {}",
                                    total ? FormatBytes(*total) : std::string("more than 16 EiB"),
                                    info.device_name, fits));
    }
  }

  const Policy& policy = PolicyOf(conf);
  if (!conf.expandable.has_value() && !conf.Paging() && !conf.passthrough && conf.policy.empty()) {
    // The default policy pages; say so when this backing cannot and what runs instead.
    fragscope::Log().info("default policy: the {} backing cannot map pages, so regions with "
                          "growth (TensorFlow's BFC rule) run instead of paging",
                          ToString(info.kind));
  }
  for (std::size_t i = 0; i < limits.size(); ++i) {
    std::uint64_t preallocate_bytes = 0;
    if (conf.preallocate > 0) {
      // One device: a fraction of the physical device, within the limit. Virtual devices: a
      // fraction of each one's own limit.
      const std::uint64_t base = conf.virtual_devices.empty() ? capacity : limits[i];
      const auto bytes = static_cast<std::uint64_t>(std::floor(conf.preallocate * static_cast<double>(base)));
      preallocate_bytes = std::min(bytes, limits[i]);
      if (preallocate_bytes < info.granularity) {
        throw ConfigError("preallocate", fmt::format("preallocate={} is {} of {}: less than the {} backing's "
                                                     "granularity ({}), so nothing could be preallocated; "
                                                     "use off, or a larger fraction",
                                                     conf.preallocate, FormatBytes(preallocate_bytes),
                                                     FormatBytes(base), ToString(info.kind),
                                                     FormatBytes(info.granularity)));
      }
    }
    // A device is named by the CUDA ordinal it runs on (device=N), so that a trace of GPU 3 says
    // device 3; virtual devices are numbered 0, 1, ... as the configuration lists them.
    const auto index = static_cast<std::uint32_t>(conf.virtual_devices.empty() ? static_cast<std::size_t>(conf.device) : i);
    const PolicyContext context{*system->backing_, system->conf_, index, limits[i], preallocate_bytes};
    try {
      system->devices_.push_back(policy.create(context));
    } catch (const ConfigError& error) {
      // A limit the user never wrote is capacity minus external_use: name what they did write.
      if (error.key() != "limit" || conf.limit.has_value() || !conf.virtual_devices.empty()) throw;
      throw ConfigError(conf.external_use > 0 ? "external_use" : "capacity",
                        fmt::format("{} (no limit= was given, so the limit is the {}: raise capacity{})",
                                    error.what(), fits, conf.external_use > 0 ? " or lower external_use" : ""));
    }
  }
  return system;
}

MemorySystem::~MemorySystem() {
  devices_.clear();  // allocators give their regions back before the backing goes
}

std::string MemorySystem::Describe() const {
  const BackingInfo& info = backing_->info();
  const Policy& selected = PolicyOf(conf_);
  const std::string policy = selected.describe ? selected.describe(conf_) : selected.name;
  std::string limits;
  for (const auto& device : devices_) {
    if (!limits.empty()) limits += " + ";
    limits += FormatBytes(device->limit());
  }
  return fmt::format("{} ({}, {}), {}, limit {}", ToString(info.kind), info.device_name,
                     FormatBytes(info.capacity), policy, limits);
}

traces::TraceHeader MemorySystem::MakeTraceHeader(const std::string& producer) const {
  traces::TraceHeader header;
  header.producer = producer;
  header.source_format = "fragscope";
  header.alloc_conf = conf_.ToString();
  header.created_unix_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  const BackingInfo& info = backing_->info();
  for (const auto& device : devices_) {
    traces::DeviceDescription description;
    description.index = device->device();
    description.name = info.device_name;
    description.backing = std::string(ToString(info.kind));
    description.capacity = info.capacity;
    description.limit = device->limit();
    header.devices.push_back(std::move(description));
  }
  return header;
}

void MemorySystem::SetSink(traces::EventSink* sink) {
  for (auto& device : devices_) device->SetSink(sink);
}

}  // namespace fragscope
