// Names of the backings and the one place that turns a configuration into a backing. The CUDA
// backings exist only in builds with FRAGSCOPE_HAVE_CUDA; without it the same names parse (so that a
// configuration string means the same everywhere) and MakeBacking says what is missing.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "host_backing.hpp"
#include "sim_backing.hpp"

#if FRAGSCOPE_HAVE_CUDA
#include "cuda/async_backing.hpp"
#include "cuda/cuda_backing.hpp"
#include "cuda/cuda_common.hpp"
#include "cuda/vmm_backing.hpp"
#endif

namespace fragscope {
namespace {

constexpr std::array<BackingKind, 5> kAllKinds = {BackingKind::kSim, BackingKind::kHost,
                                                  BackingKind::kCuda, BackingKind::kVmm,
                                                  BackingKind::kAsync};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

BackingTraits TraitsOf(BackingKind kind) {
  constexpr std::uint64_t k2MiB = std::uint64_t{2} << 20;
  BackingTraits traits;
  switch (kind) {
    case BackingKind::kSim:
      traits.grows_in_place = traits.simulates_external_use = true;
      traits.map_granularity = k2MiB;
      break;
    case BackingKind::kHost:
      traits.grows_in_place = traits.simulates_external_use = true;
      traits.map_granularity = k2MiB;
      break;
    case BackingKind::kCuda:
      traits.needs_gpu = true;
      break;
    case BackingKind::kVmm:
      traits.grows_in_place = traits.needs_gpu = true;
      traits.map_granularity = k2MiB;  // at least; the device's own granularity when larger
      break;
    case BackingKind::kAsync:
      traits.needs_gpu = traits.always_passthrough = true;
      break;
  }
  return traits;
}

std::string_view ToString(BackingKind kind) {
  switch (kind) {
    case BackingKind::kSim:
      return "sim";
    case BackingKind::kHost:
      return "host";
    case BackingKind::kCuda:
      return "cuda";
    case BackingKind::kVmm:
      return "vmm";
    case BackingKind::kAsync:
      return "async";
  }
  return "unknown";
}

bool ParseBackingKind(std::string_view text, BackingKind* out) {
  for (BackingKind kind : kAllKinds) {
    if (EqualsIgnoreCase(text, ToString(kind))) {
      if (out != nullptr) *out = kind;
      return true;
    }
  }
  return false;
}

std::unique_ptr<Backing> MakeBacking(const AllocConf& conf) {
  if (TraitsOf(conf.backing).needs_gpu) {
#if FRAGSCOPE_HAVE_CUDA
    // external_use simulates other processes on a device that has no real ones; on a GPU the other
    // processes are real and cudaMalloc already sees them.
    if (conf.external_use != 0) {
      throw ConfigError("external_use",
                        fmt::format("external_use={} is for backing=sim and backing=host only; "
                                    "with backing={} the memory other processes hold is real "
                                    "(set limit or capacity instead)",
                                    FormatSizeExact(conf.external_use), ToString(conf.backing)));
    }
    if (conf.device < 0) {
      throw ConfigError("device", fmt::format("device={} is not a CUDA device ordinal (0, 1, ...)",
                                              conf.device));
    }
    switch (conf.backing) {
      case BackingKind::kCuda:
        return std::make_unique<CudaBacking>(conf);
      case BackingKind::kVmm:
        return std::make_unique<VmmBacking>(conf);
      default:
        return std::make_unique<AsyncBacking>(conf);
    }
#else
    throw ConfigError("backing", fmt::format("backing={} needs a build with CUDA; this build has "
                                             "none (use backing=sim or backing=host)",
                                             ToString(conf.backing)));
#endif
  }
  switch (conf.backing) {
    case BackingKind::kSim:
      return std::make_unique<SimBacking>(conf);
    case BackingKind::kHost:
      return std::make_unique<HostBacking>(conf);
    default:
      break;
  }
  throw ConfigError("backing", fmt::format("unknown backing kind {}; valid: sim, host, cuda, vmm, "
                                           "async",
                                           static_cast<int>(conf.backing)));
}

bool CudaDeviceAvailable(std::string* why) {
#if FRAGSCOPE_HAVE_CUDA
  return cuda::DeviceAvailable(0, why);
#else
  if (why != nullptr) *why = "this build has no CUDA support";
  return false;
#endif
}

}  // namespace fragscope
