// The policies fragscope ships: "bfc" and "passthrough" (policy.hpp). Each is one entry: its check,
// factory, description and advice.
#include <fmt/format.h>

#include "bfc_allocator.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"
#include "passthrough_allocator.hpp"

namespace fragscope {
namespace {

// preset=tensorflow: TensorFlow's BFC allocator (tsl/framework/bfc_allocator.cc) on our BFC core.
// What it shares: 256-byte rounding, exact best fit by (size, address) (its 21 bins and our
// sub-classes partition sizes in order, so both find the same chunk), coalescing of neighbours
// within a region and never across regions. What the preset sets: its split rule, its growth
// (allow_growth) and keeping its next region size after gc. docs/allocator.md, "Presets".
Policy TensorflowPreset() {
  Policy tf;
  tf.name = "tensorflow";
  tf.description =
      "TensorFlow's BFC allocator: growth=on is allow_growth (regions doubling from 2 MiB), "
      "growth=off one region of the whole limit; gc as TF_ENABLE_GPU_GARBAGE_COLLECTION";
  tf.check = [](const AllocConf& conf) {
    if (conf.expandable.value_or(false)) {
      throw ConfigError("expandable", "preset=tensorflow does not page: TensorFlow's BFC allocator "
                                      "reserves regions (drop expandable, or use the default policy)");
    }
    if (conf.preallocate > 0.0) {
      throw ConfigError("preallocate", "preset=tensorflow reserves as TensorFlow does: growth=off is "
                                       "one region of the whole limit, growth=on regions that double");
    }
  };
  tf.create = [](const PolicyContext& context) -> std::unique_ptr<DeviceAllocator> {
    bfc::BfcOptions options;
    options.device = context.device;
    options.limit = context.limit;
    options.growth = true;  // TensorFlow's Extend either way; only the first region differs
    options.gc = context.conf.gc;
    options.tensorflow_split = true;
    options.restart_growth_after_gc = false;
    // allow_growth=false: the first region (reserved at the first request) is the whole limit.
    if (!context.conf.growth) options.first_region_bytes = std::max<std::uint64_t>(context.limit, 256);
    return std::make_unique<bfc::BfcAllocator>(context.backing, options);
  };
  tf.describe = [](const AllocConf& conf) {
    return fmt::format("tensorflow {} {}", conf.growth ? "allow_growth" : "whole-limit", conf.gc ? "gc" : "no-gc");
  };
  tf.advise = [](OomReport& report, const AllocConf& conf) {
    AddPolicyAdvice(report, PolicyFacts{conf.gc, false, false});
  };
  return tf;
}

}  // namespace

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

  policies.push_back(TensorflowPreset());

  return policies;
}

}  // namespace fragscope
