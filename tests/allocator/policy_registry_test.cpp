// The policy registry: a policy defined here, in the test, is one registration; the configuration
// parser, MemorySystem (so replay, compare, min-limit, the trainer and the C ABI) and Describe pick it
// up. The toy is an adaptor over the passthrough policy that counts the calls it forwards (as RMM's
// adaptors wrap an upstream resource).
#include <atomic>

#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/policy.hpp"
#include "support/counting_allocator.hpp"

namespace fragscope {
namespace {

std::atomic<int> toy_created{0};
std::atomic<int> toy_allocations{0};

// Forwards everything to `upstream`, counting allocations.
using testing::CountingAllocator;

// One registration, once per process.
void RegisterToy() {
  static const bool registered = [] {
    Policy toy;
    toy.name = "toy";
    toy.description = "counts the calls it forwards to passthrough (a test)";
    toy.check = [](const AllocConf& conf) {
      if (!conf.gc) throw ConfigError("gc", "policy=toy keeps no cache: gc=off means nothing to it");
    };
    toy.create = [](const PolicyContext& context) -> std::unique_ptr<DeviceAllocator> {
      ++toy_created;
      return std::make_unique<CountingAllocator>(FindPolicy("passthrough")->create(context), &toy_allocations);
    };
    toy.describe = [](const AllocConf&) { return std::string("toy over passthrough"); };
    RegisterPolicy(std::move(toy));
    return true;
  }();
  (void)registered;
}

TEST(PolicyRegistry, BuiltInsComeFirst) {
  const std::vector<std::string> names = PolicyNames();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "bfc");
  EXPECT_EQ(names[1], "passthrough");
  EXPECT_EQ(&PolicyOf(AllocConf{}), FindPolicy("bfc"));
  AllocConf passthrough;
  passthrough.passthrough = true;
  EXPECT_EQ(&PolicyOf(passthrough), FindPolicy("passthrough"));
}

TEST(PolicyRegistry, ANewPolicyIsOneRegistrationThatTheParserAndMemorySystemPickUp) {
  RegisterToy();
  EXPECT_EQ(PolicyNames().back(), "toy");
  const AllocConf conf = ParseAllocConf("backing=sim,capacity=1GiB,virtual_devices=64MiB+128MiB,policy=toy");
  EXPECT_EQ(conf.policy, "toy");
  EXPECT_NE(conf.ToString().find(",policy=toy"), std::string::npos) << conf.ToString();
  EXPECT_EQ(ParseAllocConf(conf.ToString()), conf);

  const int created = toy_created.load(), allocations = toy_allocations.load();
  auto system = MemorySystem::Create(conf);
  EXPECT_EQ(toy_created.load() - created, 2);  // one per virtual device
  EXPECT_NE(system->Describe().find("toy over passthrough"), std::string::npos) << system->Describe();
  void* ptr = system->device(1).Allocate(4096);
  EXPECT_EQ(toy_allocations.load() - allocations, 1);
  EXPECT_EQ(system->device(1).Stats().allocations, 1u);
  // The limit is the policy's context: 64 MiB on device 0.
  OomReport report;
  EXPECT_EQ(system->device(0).TryAllocate(100 << 20, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kRequestTooLarge);
  system->device(1).Free(ptr);
  system->device(1).CheckInvariants();
}

TEST(PolicyRegistry, ThePolicysOwnCheckRunsWhenTheConfigurationIsParsed) {
  RegisterToy();
  try {
    ParseAllocConf("policy=toy,gc=off");
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "gc");
  }
}

TEST(PolicyRegistry, NamesAreCheckedAndTheBuiltInsKeepOneSpelling) {
  try {
    ParseAllocConf("policy=tensorflw");
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    const std::string what = error.what();
    EXPECT_EQ(error.key(), "policy");
    EXPECT_NE(what.find("a registered policy: bfc, passthrough"), std::string::npos) << what;
  }
  EXPECT_EQ(ParseAllocConf("policy=passthrough"), ParseAllocConf("passthrough=on"));
  EXPECT_EQ(ParseAllocConf("policy=bfc"), ParseAllocConf(""));
  EXPECT_EQ(ParseAllocConf("policy=passthrough").ToString().find("policy="), std::string::npos);
  EXPECT_THROW(ParseAllocConf("policy=bfc,passthrough=on"), ConfigError);
  RegisterToy();
  EXPECT_THROW(ParseAllocConf("policy=toy,passthrough=on"), ConfigError);
  EXPECT_THROW(RegisterPolicy(Policy{"toy", "again", {}, FindPolicy("bfc")->create, {}, {}}), std::logic_error);
  EXPECT_THROW(RegisterPolicy(Policy{"", "no name", {}, FindPolicy("bfc")->create, {}, {}}), std::logic_error);
  EXPECT_THROW(RegisterPolicy(Policy{"nofactory", "none", {}, {}, {}, {}}), std::logic_error);
}

}  // namespace
}  // namespace fragscope
