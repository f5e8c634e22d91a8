// The tables of the conformance and stress suites, enumerated from the policy registry: every
// registered policy (PolicyNames(): the built-ins and whatever a program registered before the
// tests were listed) on every backing, plus the variants a policy reacts to. So a new policy is
// tested everywhere by registering it; nobody edits a table.
#pragma once

#include <string>
#include <vector>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"

namespace fragscope::testing {

struct PolicyCase {
  std::string name;  // "sim_bfc_expandable": backing, policy, variant (a gtest name)
  std::string conf;
};
inline std::ostream& operator<<(std::ostream& os, const PolicyCase& c) { return os << c.conf; }

struct BackingBase {
  BackingKind kind;
  std::string conf;   // "backing=sim,capacity=4GiB"
  std::string limit;  // ",limit=1GiB"
};

// A configuration change a policy may react to. Kept for a policy only when its check accepts it
// and its description changes (a policy that ignores a key describes itself the same), except
// `for_every_policy` ones, which MemorySystem handles for all (virtual devices).
struct Variant {
  std::string name;
  std::string suffix;           // appended to the backing's conf
  bool keeps_limit = true;      // false: the suffix sets the limits itself
  bool needs_grows_in_place = false;
  bool for_every_policy = false;
};

inline std::string DescribePolicy(const AllocConf& conf) {
  const Policy& policy = PolicyOf(conf);
  return policy.describe ? policy.describe(conf) : policy.name;
}

inline std::vector<PolicyCase> EnumeratePolicyCases(const std::vector<BackingBase>& backings,
                                                    const std::vector<Variant>& variants) {
  std::vector<PolicyCase> cases;
  for (const BackingBase& backing : backings) {
    const std::string backing_name(ToString(backing.kind));
    for (const std::string& policy : PolicyNames()) {
      // A backing that caches on its own (cudaMallocAsync pools) is measured as it is, through
      // passthrough; a cache on top of it would test the cache twice.
      if (TraitsOf(backing.kind).always_passthrough && policy != "passthrough") continue;
      const std::string base = backing.conf + backing.limit + ",policy=" + policy;
      AllocConf conf;
      try {
        conf = ParseAllocConf(base);
      } catch (const ConfigError&) {
        continue;  // the backing or the policy refuses the combination (async caches on its own)
      }
      const std::string described = DescribePolicy(conf);
      cases.push_back({backing_name + "_" + policy, base});
      for (const Variant& variant : variants) {
        if (variant.needs_grows_in_place && !TraitsOf(backing.kind).grows_in_place) continue;
        const std::string text =
            backing.conf + (variant.keeps_limit ? backing.limit : "") + variant.suffix + ",policy=" + policy;
        try {
          const AllocConf changed = ParseAllocConf(text);
          if (!variant.for_every_policy && DescribePolicy(changed) == described) continue;
        } catch (const ConfigError&) {
          continue;  // the policy's own check: it cannot do this (passthrough and expandable=on)
        }
        cases.push_back({backing_name + "_" + policy + "_" + variant.name, text});
      }
    }
  }
  return cases;
}

}  // namespace fragscope::testing
