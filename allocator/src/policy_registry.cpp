// The policy registry (policy.hpp): a list under a mutex, the built-ins added on first use so that
// no static initializer of a static library can be dropped by the linker.
#include <algorithm>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"

namespace fragscope {

std::vector<Policy> BuiltinPolicies();  // builtin_policies.cpp

namespace {

struct Registry {
  std::mutex mutex;
  // Entries are never removed, and a deque-like stable storage keeps references valid.
  std::vector<std::unique_ptr<Policy>> policies;
};

Registry& Instance() {
  static Registry* registry = [] {
    auto* r = new Registry();  // never destroyed: policies may be looked up at exit
    for (Policy& policy : BuiltinPolicies()) r->policies.push_back(std::make_unique<Policy>(std::move(policy)));
    return r;
  }();
  return *registry;
}

}  // namespace

void RegisterPolicy(Policy policy) {
  if (policy.name.empty()) throw std::logic_error("RegisterPolicy: a policy needs a name");
  if (!policy.create) throw std::logic_error(fmt::format("RegisterPolicy: policy '{}' has no factory", policy.name));
  Registry& registry = Instance();
  std::lock_guard lock(registry.mutex);
  for (const auto& existing : registry.policies) {
    if (existing->name == policy.name) {
      throw std::logic_error(fmt::format("RegisterPolicy: policy '{}' is already registered", policy.name));
    }
  }
  registry.policies.push_back(std::make_unique<Policy>(std::move(policy)));
}

const Policy* FindPolicy(std::string_view name) {
  Registry& registry = Instance();
  std::lock_guard lock(registry.mutex);
  for (const auto& policy : registry.policies) {
    if (policy->name == name) return policy.get();
  }
  return nullptr;
}

std::vector<std::string> PolicyNames() {
  Registry& registry = Instance();
  std::lock_guard lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto& policy : registry.policies) names.push_back(policy->name);
  return names;
}

const Policy& PolicyOf(const AllocConf& conf) {
  const std::string_view name = !conf.policy.empty() ? std::string_view(conf.policy)
                                : conf.passthrough  ? std::string_view("passthrough")
                                                    : std::string_view("bfc");
  if (const Policy* policy = FindPolicy(name)) return *policy;
  std::string names;
  for (const std::string& known : PolicyNames()) names += (names.empty() ? "" : ", ") + known;
  throw ConfigError("policy", fmt::format("unknown policy '{}'; registered: {}", name, names));
}

}  // namespace fragscope
