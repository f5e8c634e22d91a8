#include "fragscope/analysis/recorded_limits.hpp"

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"

namespace fragscope::analysis {

RecordedLimits WithRecordedLimits(AllocConf conf, const AllocConf* recorded) {
  RecordedLimits out;
  const bool sets_own = conf.limit.has_value() || !conf.virtual_devices.empty();
  if (!sets_own && recorded != nullptr) {
    // virtual_devices and limit exclude each other (ParseAllocConf): whichever the run had.
    if (!recorded->virtual_devices.empty()) {
      conf.virtual_devices = recorded->virtual_devices;
      out.carried = true;
    } else if (recorded->limit) {
      conf.limit = recorded->limit;
      out.carried = true;
    }
  }
  out.conf = std::move(conf);
  return out;
}

std::optional<std::uint64_t> RecordedLimits::LimitOf(std::uint32_t device) const {
  if (!carried) return std::nullopt;
  if (conf.virtual_devices.empty()) return conf.limit;
  if (device >= conf.virtual_devices.size()) return std::nullopt;
  return conf.virtual_devices[device];
}

std::string RecordedLimits::Note(std::uint32_t device) const {
  const std::optional<std::uint64_t> limit = LimitOf(device);
  if (!limit) return {};
  if (conf.virtual_devices.empty()) return fmt::format(" (limit {} as recorded)", FormatBytes(*limit));
  return fmt::format(" (limit {} as recorded, virtual device {} of {})", FormatBytes(*limit), device,
                     conf.virtual_devices.size());
}

std::string RecordedLimits::Summary() const {
  if (!carried) return {};
  if (conf.virtual_devices.empty()) return fmt::format("limit {} as recorded", FormatBytes(conf.limit.value_or(0)));
  std::string sizes;
  for (const std::uint64_t size : conf.virtual_devices) sizes += (sizes.empty() ? "" : " + ") + FormatBytes(size);
  return fmt::format("virtual devices {} as recorded", sizes);
}

}  // namespace fragscope::analysis
