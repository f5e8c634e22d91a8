// The CUDA backings (cuda, vmm, async) on real device memory. Each test skips with the reason (no
// driver, no device, no CUDA in this build) where no GPU can be used.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#if defined(FRAGSCOPE_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

AllocConf Conf(BackingKind kind, std::optional<std::uint64_t> capacity = std::nullopt) {
  AllocConf conf;
  conf.backing = kind;
  conf.capacity = capacity;
  return conf;
}

std::uintptr_t A(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
char* At(void* base, std::uint64_t offset) { return static_cast<char*>(base) + offset; }

// Skips the test, with the reason, where no GPU can be used (no driver, no device, no CUDA build).
#define SKIP_WITHOUT_GPU()                                             \
  do {                                                                 \
    std::string why_no_gpu;                                            \
    if (!CudaDeviceAvailable(&why_no_gpu)) GTEST_SKIP() << why_no_gpu; \
  } while (0)

// cudaMemset `bytes` at `p` to `pattern`, copy them back and compare.
void ExpectDeviceRoundTrip(void* p, std::uint64_t bytes, std::uint8_t pattern) {
#if defined(FRAGSCOPE_HAVE_CUDA)
  ASSERT_EQ(cudaMemset(p, pattern, bytes), cudaSuccess);
  std::vector<std::uint8_t> host(bytes);
  ASSERT_EQ(cudaMemcpy(host.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::size_t i = 0; i < host.size(); ++i) {
    ASSERT_EQ(host[i], pattern) << "byte " << i << " of " << bytes;
  }
#else
  (void)p, (void)bytes, (void)pattern;
  FAIL() << "built without CUDA";
#endif
}

TEST(CudaBackingTest, ReservesDeviceMemory) {
  SKIP_WITHOUT_GPU();
  auto b = MakeBacking(Conf(BackingKind::kCuda));
  EXPECT_EQ(b->info().kind, BackingKind::kCuda);
  EXPECT_GT(b->info().capacity, 0u);
  EXPECT_FALSE(b->info().host_accessible);
  EXPECT_EQ(b->expandable(), nullptr);
  void* p = b->Reserve(16 * MiB, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(A(p) % 256, 0u);
  EXPECT_EQ(b->held(), 16 * MiB);
  ExpectDeviceRoundTrip(p, 16 * MiB, 0x5a);
  EXPECT_THROW(b->Release(At(p, 256), 16 * MiB, 0), BackingError);
  EXPECT_THROW(b->Release(p, 8 * MiB, 0), BackingError);
  b->Release(p, 16 * MiB, 0);
  EXPECT_EQ(b->held(), 0u);
}

TEST(CudaBackingTest, OutOfMemoryReturnsNull) {
  SKIP_WITHOUT_GPU();
  auto b = MakeBacking(Conf(BackingKind::kCuda));
  EXPECT_EQ(b->Reserve(1ULL << 50, 0), nullptr);  // 1 PiB
  void* p = b->Reserve(1 * MiB, 0);  // the failure left nothing behind
  ASSERT_NE(p, nullptr);
  ExpectDeviceRoundTrip(p, 1 * MiB, 0x11);
  b->Release(p, 1 * MiB, 0);

  auto small = MakeBacking(Conf(BackingKind::kCuda, 64 * MiB));  // rehearse a smaller device
  EXPECT_EQ(small->info().capacity, 64 * MiB);
  void* q = small->Reserve(48 * MiB, 0);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(small->Reserve(32 * MiB, 0), nullptr);
  small->Release(q, 48 * MiB, 0);
}

TEST(VmmBackingTest, RegionHoldsData) {
  SKIP_WITHOUT_GPU();
  auto b = MakeBacking(Conf(BackingKind::kVmm));
  ASSERT_NE(b->expandable(), nullptr);
  const std::uint64_t g = b->expandable()->map_granularity();
  EXPECT_GE(g, 2 * MiB);
  EXPECT_EQ(b->info().granularity, g);
  void* p = b->Reserve(2 * g, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(b->held(), 2 * g);
  ExpectDeviceRoundTrip(p, 2 * g, 0xa5);
  b->Release(p, 2 * g, 0);
  EXPECT_EQ(b->held(), 0u);
  EXPECT_EQ(b->Reserve((1ULL << 50) / g * g, 0), nullptr);
}

TEST(VmmBackingTest, MapUnmapRemapInPlace) {
  SKIP_WITHOUT_GPU();
  auto b = MakeBacking(Conf(BackingKind::kVmm));
  ExpandableBacking* e = b->expandable();
  ASSERT_NE(e, nullptr);
  const std::uint64_t g = e->map_granularity();
  void* base = e->ReserveRange(8 * g);
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(b->held(), 0u);
  ASSERT_TRUE(e->Map(base, 0, 2 * g));
  ExpectDeviceRoundTrip(base, 2 * g, 0x01);
  ASSERT_TRUE(e->Map(base, 2 * g, 2 * g));  // grows in place
  ExpectDeviceRoundTrip(base, 4 * g, 0x02);
  EXPECT_EQ(b->held(), 4 * g);
  e->Unmap(base, 2 * g, 2 * g);  // the tail alone
  EXPECT_EQ(b->held(), 2 * g);
  ASSERT_TRUE(e->Map(base, 2 * g, 2 * g));  // and back, at the same address
  ExpectDeviceRoundTrip(base, 4 * g, 0x03);
  EXPECT_THROW(e->Map(base, g, 2 * g), BackingError);
  e->Unmap(base, 0, 4 * g);  // pages of several Map calls at once
  EXPECT_EQ(b->held(), 0u);
  e->ReleaseRange(base, 8 * g);
}

TEST(VmmBackingTest, MapBeyondCapacityIsRefused) {
  SKIP_WITHOUT_GPU();
  auto probe = MakeBacking(Conf(BackingKind::kVmm));
  const std::uint64_t g = probe->expandable()->map_granularity();
  auto b = MakeBacking(Conf(BackingKind::kVmm, 4 * g));
  ExpandableBacking* e = b->expandable();
  void* base = e->ReserveRange(16 * g);
  ASSERT_NE(base, nullptr);
  ASSERT_TRUE(e->Map(base, 0, 4 * g));
  EXPECT_FALSE(e->Map(base, 4 * g, g));
  EXPECT_EQ(b->held(), 4 * g);
  e->Unmap(base, 0, 4 * g);
  e->ReleaseRange(base, 16 * g);
}

TEST(AsyncBackingTest, ReserveAndRelease) {
  SKIP_WITHOUT_GPU();
  auto b = MakeBacking(Conf(BackingKind::kAsync));
  EXPECT_EQ(b->info().kind, BackingKind::kAsync);
  EXPECT_EQ(b->expandable(), nullptr);
  void* p = b->Reserve(16 * MiB, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(b->held(), 16 * MiB);
  ExpectDeviceRoundTrip(p, 16 * MiB, 0x3c);
  b->Release(p, 16 * MiB, 0);
  EXPECT_EQ(b->held(), 0u);
  EXPECT_EQ(b->Reserve(1ULL << 50, 0), nullptr);
  void* q = b->Reserve(1 * MiB, 0);
  ASSERT_NE(q, nullptr);
  b->Release(q, 1 * MiB, 0);
}

}  // namespace
}  // namespace fragscope
