// The policies fragscope ships: "bfc" and "passthrough" (policy.hpp). Each is one entry: its check,
// factory, description and advice.
#include <fmt/format.h>

#include "bfc_allocator.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"
#include "passthrough_allocator.hpp"

namespace fragscope {

std::vector<Policy> BuiltinPolicies() {
  std::vector<Policy> policies;

  Policy bfc;
  bfc.name = "bfc";
  bfc.description =
      "best fit with coalescing over cached regions: growth, preallocate, gc, expandable (the default)";
  bfc.create = [](const PolicyContext& context) -> std::unique_ptr<DeviceAllocator> {
    bfc::BfcOptions options;
    options.device = context.device;
    options.limit = context.limit;
    options.growth = context.conf.growth;
    options.gc = context.conf.gc;
    options.expandable = context.conf.Paging();
    options.unmap_eager = context.conf.unmap == UnmapMode::kEager;
    options.preallocate_bytes = context.preallocate_bytes;
    return std::make_unique<bfc::BfcAllocator>(context.backing, options);
  };
  bfc.describe = [](const AllocConf& conf) {
    std::string text = "bfc";
    if (conf.Paging()) text += conf.unmap == UnmapMode::kEager ? " paging eager" : " paging lazy";
    else text += conf.growth ? " growth" : " no-growth";
    if (conf.preallocate > 0) text += fmt::format(" preallocate {:.2f}", conf.preallocate);
    text += conf.gc ? " gc" : " no-gc";
    return text;
  };
  bfc.advise = [](OomReport& report, const AllocConf& conf) {
    AddPolicyAdvice(report, PolicyFacts{conf.gc, conf.Paging(), TraitsOf(conf.backing).grows_in_place});
  };
  policies.push_back(std::move(bfc));

  Policy passthrough;
  passthrough.name = "passthrough";
  passthrough.description = "one backing call per request and per free, no cache: the baseline";
  passthrough.check = [](const AllocConf& conf) {
    if (conf.expandable.value_or(false) || conf.preallocate > 0.0) {
      throw ConfigError(conf.expandable.value_or(false) ? "expandable" : "preallocate",
                        "passthrough makes one backing call per request and keeps no region to "
                        "grow or preallocate into");
    }
  };
  passthrough.create = [](const PolicyContext& context) -> std::unique_ptr<DeviceAllocator> {
    return std::make_unique<PassthroughAllocator>(context.backing, context.device, context.limit);
  };
  passthrough.describe = [](const AllocConf&) { return std::string("passthrough"); };
  policies.push_back(std::move(passthrough));

  return policies;
}

}  // namespace fragscope
