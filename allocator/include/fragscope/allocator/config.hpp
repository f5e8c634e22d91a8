// The allocator configuration: one string of comma-separated key=value pairs, from --alloc-conf or
// FRAGSCOPE_ALLOC_CONF. Every key, its values and its default are in docs/allocator.md.
//
//   backing=sim,capacity=16GiB,growth=on,limit=12GiB,gc=on
//   backing=host,expandable=on
//   backing=sim,virtual_devices=2GiB+6GiB
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/allocator/backing.hpp"

namespace fragscope {

struct AllocConf {
  BackingKind backing = BackingKind::kSim;
  std::optional<std::uint64_t> capacity;   // device size; default: sim 80 GiB, host RAM, GPU total
  int device = 0;                          // CUDA device ordinal
  std::uint64_t external_use = 0;          // sim/host: bytes other processes hold (simulated)
  bool growth = true;                      // regions start at 2 MiB and double
  double preallocate = 0.0;                // fraction of capacity reserved at start; 0 = off
  std::optional<std::uint64_t> limit;      // most the allocator may reserve; default: capacity - external_use
  std::vector<std::uint64_t> virtual_devices;  // one limit per logical device; empty = one device
  bool gc = true;                          // on failure release empty regions and retry
  bool expandable = false;                 // one region that grows in place (sim, host, vmm)
  bool passthrough = false;                // one backing call per request, no caching
  std::string policy;                      // a registered policy (policy.hpp); empty: by passthrough

  // Canonical form: every key, in documentation order, that ParseAllocConf reads back equal.
  std::string ToString() const;
  bool operator==(const AllocConf&) const = default;
};

// The keys ParseAllocConf accepts, in documentation order.
const std::vector<std::string_view>& AllocConfKeys();

// Parses a configuration string; empty means all defaults. Throws ConfigError naming the key and,
// for an unknown key, listing the valid ones. Checks the combination (e.g. expandable needs a
// backing that can grow in place) but not against the device: MemorySystem::Create does that.
AllocConf ParseAllocConf(std::string_view text);

// The configuration a program should use: `cli` when given (non-empty), else FRAGSCOPE_ALLOC_CONF,
// else defaults. `source` (optional) receives where it came from, for error messages.
AllocConf ResolveAllocConf(std::string_view cli, std::string* source = nullptr);

inline constexpr const char* kAllocConfEnv = "FRAGSCOPE_ALLOC_CONF";

}  // namespace fragscope
