// The policies fragscope ships: "bfc" and "passthrough" (policy.hpp), and the presets
// "tensorflow" and "pytorch". Each is one entry: its check,
// factory, description and advice.
#include <fmt/format.h>

#include "bfc_allocator.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"
#include "passthrough_allocator.hpp"
#include "pytorch_caching_allocator.hpp"

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

// preset=pytorch: PyTorch's CUDA caching allocator (pytorch_caching_allocator.hpp), with its
// settings under their own names. It has no growth, preallocation or gc switch of ours: segments
// are sized per request, and cached segments are always released before an OOM.
Policy PytorchPreset() {
  Policy pt;
  pt.name = "pytorch";
  pt.description =
      "PyTorch's CUDA caching allocator: small and large pools, 2/20 MiB segments, its split and "
      "release rules; expandable_segments, max_split_size_mb, garbage_collection_threshold, "
      "roundup_power2_divisions as in PYTORCH_CUDA_ALLOC_CONF";
  pt.check = [](const AllocConf& conf) {
    if (conf.expandable.value_or(false)) {
      throw ConfigError("expandable", "preset=pytorch pages with PyTorch's own setting: use "
                                      "expandable_segments=on instead of expandable=on");
    }
    if (conf.preallocate > 0.0) {
      throw ConfigError("preallocate", "preset=pytorch reserves segments per request, as PyTorch does; "
                                       "it has no preallocation");
    }
    if (!conf.growth) {
      throw ConfigError("growth", "preset=pytorch has no growth setting: PyTorch sizes each segment by "
                                  "the request (2 MiB, 20 MiB, or the request rounded to 2 MiB)");
    }
    if (!conf.gc) {
      throw ConfigError("gc", "preset=pytorch always releases its cached segments and retries before "
                              "an OOM, as PyTorch does: gc=off has no PyTorch equivalent");
    }
    if (conf.pytorch.expandable_segments && !TraitsOf(conf.backing).grows_in_place) {
      throw ConfigError("expandable_segments",
                        fmt::format("expandable_segments=on needs backing sim, host or vmm, not backing {}",
                                    ToString(conf.backing)));
    }
  };
  pt.create = [](const PolicyContext& context) -> std::unique_ptr<DeviceAllocator> {
    pytorch::PytorchOptions options;
    options.device = context.device;
    options.limit = context.limit;
    options.capacity = context.backing.info().capacity;
    options.settings = context.conf.pytorch;
    return std::make_unique<pytorch::PytorchCachingAllocator>(context.backing, options);
  };
  pt.describe = [](const AllocConf& conf) {
    std::string text = conf.pytorch.expandable_segments ? "pytorch expandable_segments" : "pytorch";
    if (conf.pytorch.max_split_size != UINT64_MAX) {
      text += fmt::format(" max_split_size_mb={}", conf.pytorch.max_split_size >> 20);
    }
    if (conf.pytorch.garbage_collection_threshold > 0.0) {
      text += fmt::format(" garbage_collection_threshold={}", conf.pytorch.garbage_collection_threshold);
    }
    return text;
  };
  pt.advise = [](OomReport& report, const AllocConf& conf) { pytorch::AddPytorchAdvice(report, conf.pytorch); };
  return pt;
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
  policies.push_back(PytorchPreset());

  return policies;
}

}  // namespace fragscope
