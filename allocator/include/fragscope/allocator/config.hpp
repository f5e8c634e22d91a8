// The allocator configuration: one string of comma-separated key=value pairs, from --alloc-conf or
// FRAGSCOPE_ALLOC_CONF. Every key, its values and its default are in docs/allocator.md.
//
//   backing=sim,capacity=16GiB,growth=on,limit=12GiB,gc=on
//   backing=host,expandable=on
//   backing=sim,virtual_devices=2GiB+6GiB
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/allocator/backing.hpp"

namespace fragscope {

// When a paging region unmaps the whole pages that no live chunk touches any more.
//   lazy   (default) when the memory is needed elsewhere: when mapping new pages would take
//          reserved past its peak, that excess is first unmapped from free pages elsewhere (below
//          the peak new pages are simply mapped); all of them before an OOM and on
//          gc/empty_cache. Same peak as eager, a fraction of the calls.
//   eager  as soon as a free leaves them untouched: reserved follows the live set page by page
enum class UnmapMode : std::uint8_t { kLazy, kEager };
std::string_view ToString(UnmapMode mode);

// Whether `policy` names a preset: another framework's allocator (PresetNames()).
bool IsPreset(std::string_view policy);

// preset=pytorch's settings, under PyTorch's own names (PYTORCH_CUDA_ALLOC_CONF): keys
// expandable_segments, max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions.
// docs/allocator.md, "Presets".
struct PytorchSettings {
  bool expandable_segments = false;
  std::uint64_t max_split_size = UINT64_MAX;    // max_split_size_mb, in bytes; UINT64_MAX: unset
  double garbage_collection_threshold = 0.0;    // a fraction of the limit; 0: off
  // Divisions per size interval, as PyTorch keeps them: [0] sizes below 2 MiB, [i] sizes in
  // [2^(20+i), 2^(21+i)), [15] from 32 GiB. 0 (and 1): plain 512-byte rounding.
  std::array<std::uint32_t, 16> roundup_power2_divisions{};
  bool operator==(const PytorchSettings&) const = default;
};

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
  // Paging (address space apart from mapped pages: sim, host, vmm). Unset: the default, paging
  // wherever the backing can page (see Paging()); giving growth or preallocate sets it off.
  std::optional<bool> expandable;
  UnmapMode unmap = UnmapMode::kLazy;      // paging: when whole free pages are unmapped
  bool passthrough = false;                // one backing call per request, no caching
  std::string policy;                      // a registered policy (policy.hpp); empty: by passthrough
  PytorchSettings pytorch;                 // preset=pytorch only

  // Whether this configuration pages: expandable when given, else wherever the backing can page
  // (sim, host, vmm) and the policy caches.
  // A preset (another framework's allocator) pages only when it is asked to.
  bool Paging() const {
    return expandable.value_or(TraitsOf(backing).grows_in_place && !passthrough && !IsPreset(policy));
  }

  // Canonical form, in documentation order, that ParseAllocConf reads back equal (what is left out:
  // docs/allocator.md, "Canonical form"). expandable is always written as resolved (Paging()),
  // unmap only when the configuration pages.
  std::string ToString() const;
  // Equal when they configure the same allocator: expandable compares as resolved (Paging()).
  bool operator==(const AllocConf& other) const;
};

// The policies that preset= names: other frameworks' allocators ("tensorflow", "pytorch").
const std::vector<std::string_view>& PresetNames();

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
