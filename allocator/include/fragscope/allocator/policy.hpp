// The policy registry: every allocator policy that a configuration can name, each one entry with its
// name, description, configuration check, factory and advice. MemorySystem builds every device's
// allocator through it, so whatever builds allocators from a configuration (fragscope-train, replay,
// compare, min-limit, the C ABI, the PyTorch shim) picks up every registered policy.
//
// Built in: "bfc" (best fit with coalescing; growth, preallocate, gc, expandable) and "passthrough"
// (one backing call per request, no cache). A configuration names a policy with `policy=NAME`;
// without it, passthrough=on means "passthrough" and anything else "bfc". Adding one:
// docs/architecture.md, "Adding a policy".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/allocator/oom_report.hpp"

namespace fragscope {

// What a policy's factory gets for one (virtual) device.
struct PolicyContext {
  Backing& backing;
  const AllocConf& conf;
  std::uint32_t device = 0;
  std::uint64_t limit = 0;              // this device's limit
  std::uint64_t preallocate_bytes = 0;  // conf.preallocate of this device's share, in bytes
};

struct Policy {
  std::string name;         // the value of policy=
  std::string description;  // one line, for --help and the docs
  // Checks the parts of a parsed configuration this policy cares about; throws ConfigError naming
  // the key. Optional.
  std::function<void(const AllocConf&)> check;
  // Builds one device's allocator. Throws BackingError when the backing refuses what it needs.
  std::function<std::unique_ptr<DeviceAllocator>(const PolicyContext&)> create;
  // One line for logs and trace headers ("bfc growth gc"). Optional: the name otherwise.
  std::function<std::string(const AllocConf&)> describe;
  // Adds the policy's own advice to an OOM report of a run under `conf` (e.g. "turn gc on").
  // Optional.
  std::function<void(OomReport&, const AllocConf&)> advise;
};

// Adds a policy. Throws std::logic_error for an empty name, a name already registered or a
// policy without a factory. Thread-safe.
void RegisterPolicy(Policy policy);
// The registered policy of that name, or nullptr.
const Policy* FindPolicy(std::string_view name);
// Every registered name, built-ins first, then in registration order.
std::vector<std::string> PolicyNames();
// The policy a configuration selects (policy=, else passthrough=on, else "bfc"). Throws ConfigError
// when conf.policy names none that is registered.
const Policy& PolicyOf(const AllocConf& conf);

}  // namespace fragscope
