// Seeded random stress: a million operations per policy over sizes from 256 B to 512 MiB
// (log-uniform), with the full invariant checker after every single operation.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "policy_cases.hpp"

namespace fragscope {
namespace {

using testing::PolicyCase;

// Sanitizer builds run a quarter of the operations (the same seeded sequence, cut short): they
// look for memory errors and races, which the first 250,000 operations reach as well, at 10 to 20
// times the cost per operation. The release build runs all of them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kOperationDivisor = 4;
#else
constexpr int kOperationDivisor = 1;
#endif
// A million operations on the simulated device; a quarter of that on host memory, where every
// region is an mmap and the kernel's cost would dominate without finding more.
int Operations(const PolicyCase& c) {
  return (c.conf.starts_with("backing=host") ? 250'000 : 1'000'000) / kOperationDivisor;
}

// Every registered policy on the backings that need no GPU, with the variants it reacts to
// (policy_cases.hpp), so a policy registered anywhere before the tests are listed is stressed too.
std::vector<PolicyCase> StressCases() {
  const std::vector<testing::BackingBase> backings = {
      {BackingKind::kSim, "backing=sim,capacity=80GiB", ",limit=4GiB"},
      {BackingKind::kHost, "backing=host,capacity=16GiB", ",limit=4GiB"},
  };
  const std::vector<testing::Variant> variants = {
      {"growth", ",growth=on"},
      {"growth_off", ",growth=off"},
      {"preallocate", ",preallocate=0.025"},
      {"unmap_eager", ",unmap=eager", true, true},
      {"gc_off", ",gc=off"},
      {"virtual_device", ",virtual_devices=4GiB+4GiB", false, false, true},
      {"expandable_segments", ",expandable_segments=on", true, true},
  };
  return testing::EnumeratePolicyCases(backings, variants);
}

class Stress : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(Stress, MillionOperationsWithInvariantsAfterEach) {
  auto system = MemorySystem::Create(ParseAllocConf(GetParam().conf));
  DeviceAllocator& allocator = system->device(system->device_count() - 1);
  std::mt19937_64 rng(20261121);
  std::uniform_real_distribution<double> log_size(std::log(256.0), std::log(512.0 * MiB));
  std::vector<void*> live;
  std::uint64_t allocations = 0, ooms = 0, frees = 0;
  for (int op = 0; op < Operations(GetParam()); ++op) {
    // Keep about 48 allocations alive: the mean size (~37 MiB) then fills a good part of 4 GiB,
    // so growth, gc and OOM paths all run.
    const bool allocate = live.empty() || (live.size() < 96 && rng() % 2 == 0);
    if (allocate) {
      const auto size = static_cast<std::uint64_t>(std::exp(log_size(rng)));
      OomReport report;
      void* ptr = allocator.TryAllocate(size, {}, &report);
      if (ptr != nullptr) {
        live.push_back(ptr);
        ++allocations;
      } else {
        ++ooms;
        ASSERT_LE(report.numbers.reserved, report.numbers.limit);
        ASSERT_FALSE(report.explanation.empty());
      }
    } else {
      const std::size_t index = rng() % live.size();
      std::swap(live[index], live.back());
      allocator.Free(live.back());
      live.pop_back();
      ++frees;
    }
    allocator.CheckInvariants();
    // What the allocators count as reserved is what the backing says it holds: regions plus
    // mapped pages, never the address space of an expandable range.
    std::uint64_t reserved = 0;
    for (std::size_t d = 0; d < system->device_count(); ++d) reserved += system->device(d).Stats().reserved;
    ASSERT_EQ(system->backing().held(), reserved) << "after operation " << op;
  }
  for (void* ptr : live) allocator.Free(ptr);
  allocator.CheckInvariants();
  const AllocatorStats stats = allocator.Stats();
  EXPECT_EQ(stats.in_use, 0u);
  EXPECT_EQ(stats.total_allocs, allocations);
  EXPECT_EQ(stats.total_ooms, ooms);
  EXPECT_GT(allocations, static_cast<std::uint64_t>(Operations(GetParam())) / 3);
  EXPECT_GT(frees, 0u);
  std::cout << GetParam().name << ": " << allocations << " allocations, " << ooms << " OOMs, peak reserved "
            << FormatBytes(stats.peak_reserved) << ", " << stats.region_reserves << " region reserves, " << stats.maps
            << " maps\n";
}

INSTANTIATE_TEST_SUITE_P(Policies, Stress, ::testing::ValuesIn(StressCases()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace fragscope
