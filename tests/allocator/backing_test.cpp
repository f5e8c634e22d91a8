// The backings through their public interface (MakeBacking): sim and host, and the factory for
// every kind. The CUDA backings' own tests are in cuda_backing_test.cpp.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

AllocConf Conf(BackingKind kind, std::optional<std::uint64_t> capacity = std::nullopt,
               std::uint64_t external_use = 0) {
  AllocConf conf;
  conf.backing = kind;
  conf.capacity = capacity;
  conf.external_use = external_use;
  return conf;
}

std::unique_ptr<Backing> Sim(std::uint64_t capacity, std::uint64_t external_use = 0) {
  return MakeBacking(Conf(BackingKind::kSim, capacity, external_use));
}

std::uintptr_t A(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
char* At(void* base, std::uint64_t offset) { return static_cast<char*>(base) + offset; }

bool BuiltWithCuda() {
#if defined(FRAGSCOPE_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// ---------------------------------------------------------------------------------------- names

TEST(BackingKindTest, NamesRoundTrip) {
  for (BackingKind kind : {BackingKind::kSim, BackingKind::kHost, BackingKind::kCuda,
                           BackingKind::kVmm, BackingKind::kAsync}) {
    BackingKind parsed = BackingKind::kSim;
    ASSERT_TRUE(ParseBackingKind(ToString(kind), &parsed)) << ToString(kind);
    EXPECT_EQ(parsed, kind);
  }
  BackingKind parsed = BackingKind::kSim;
  EXPECT_TRUE(ParseBackingKind("VMM", &parsed));
  EXPECT_EQ(parsed, BackingKind::kVmm);
  EXPECT_FALSE(ParseBackingKind("gpu", &parsed));
  EXPECT_FALSE(ParseBackingKind("", &parsed));
  EXPECT_EQ(ToString(BackingKind::kHost), "host");
}

// ------------------------------------------------------------------------------------------ sim

TEST(SimBackingTest, Info) {
  auto b = Sim(141 * GiB);
  EXPECT_EQ(b->info().kind, BackingKind::kSim);
  EXPECT_EQ(b->info().capacity, 141 * GiB);
  EXPECT_EQ(b->info().granularity, 256u);
  EXPECT_FALSE(b->info().host_accessible);
  ASSERT_NE(b->expandable(), nullptr);
  EXPECT_EQ(b->expandable()->map_granularity(), 2 * MiB);
  EXPECT_EQ(b->held(), 0u);
}

TEST(SimBackingTest, DefaultCapacityIs80GiB) {
  EXPECT_EQ(MakeBacking(Conf(BackingKind::kSim))->info().capacity, 80 * GiB);
}

TEST(SimBackingTest, ReserveUntilFullReturnsNull) {
  auto b = Sim(64 * MiB);
  std::vector<void*> regions;
  for (int i = 0; i < 4; ++i) {
    void* p = b->Reserve(16 * MiB, 0);
    ASSERT_NE(p, nullptr) << i;
    regions.push_back(p);
  }
  EXPECT_EQ(b->held(), 64 * MiB);
  EXPECT_EQ(b->Reserve(256, 0), nullptr);
  EXPECT_EQ(b->held(), 64 * MiB);
  for (void* p : regions) b->Release(p, 16 * MiB, 0);
  EXPECT_EQ(b->held(), 0u);
  EXPECT_NE(b->Reserve(64 * MiB, 0), nullptr);
}

TEST(SimBackingTest, ReleasedAddressIsReused) {
  auto b = Sim(1 * GiB);
  void* a = b->Reserve(8 * MiB, 0);
  void* c = b->Reserve(8 * MiB, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(c, nullptr);
  b->Release(a, 8 * MiB, 0);
  void* again = b->Reserve(8 * MiB, 0);
  EXPECT_EQ(again, a);  // first fit: the lowest free address
  b->Release(again, 8 * MiB, 0);
  void* smaller = b->Reserve(1 * MiB, 0);
  EXPECT_EQ(smaller, a);
  b->Release(smaller, 1 * MiB, 0);
  b->Release(c, 8 * MiB, 0);
}

TEST(SimBackingTest, FreedNeighboursCoalesce) {
  auto b = Sim(1 * GiB);
  void* x = b->Reserve(2 * MiB, 0);
  void* y = b->Reserve(2 * MiB, 0);
  void* z = b->Reserve(2 * MiB, 0);
  ASSERT_EQ(A(y), A(x) + 2 * MiB);
  ASSERT_EQ(A(z), A(y) + 2 * MiB);
  b->Release(y, 2 * MiB, 0);
  b->Release(x, 2 * MiB, 0);
  // The two freed neighbours form one hole that a 4 MiB region fits in.
  EXPECT_EQ(b->Reserve(4 * MiB, 0), x);
}

TEST(SimBackingTest, Capacity141GiB) {
  auto b = Sim(141 * GiB);
  void* big = b->Reserve(140 * GiB, 0);
  ASSERT_NE(big, nullptr);
  void* rest = b->Reserve(1 * GiB, 0);
  ASSERT_NE(rest, nullptr);
  EXPECT_GE(A(rest), A(big) + 140 * GiB);
  EXPECT_EQ(b->held(), 141 * GiB);
  EXPECT_EQ(b->Reserve(256, 0), nullptr);
  b->Release(big, 140 * GiB, 0);
  b->Release(rest, 1 * GiB, 0);
  EXPECT_EQ(b->held(), 0u);
}

TEST(SimBackingTest, ExternalUseReducesWhatFits) {
  auto b = Sim(1 * GiB, 768 * MiB);
  EXPECT_EQ(b->info().capacity, 1 * GiB);
  void* p = b->Reserve(256 * MiB, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(b->Reserve(256, 0), nullptr);
  void* range = b->expandable()->ReserveRange(64 * MiB);
  ASSERT_NE(range, nullptr);
  EXPECT_FALSE(b->expandable()->Map(range, 0, 2 * MiB));
  b->expandable()->ReleaseRange(range, 64 * MiB);
  b->Release(p, 256 * MiB, 0);
}

TEST(SimBackingTest, ExternalUseMustLeaveSomething) {
  for (BackingKind kind : {BackingKind::kSim, BackingKind::kHost}) {
    try {
      MakeBacking(Conf(kind, 1 * GiB, 1 * GiB));
      ADD_FAILURE() << "expected ConfigError for " << ToString(kind);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "external_use");
    }
  }
}

TEST(SimBackingTest, RegionsAreAlignedAndDisjoint) {
  auto b = Sim(4 * GiB);
  const std::vector<std::uint64_t> sizes = {256, 768, 4096, 2 * MiB - 256, 2 * MiB,
                                            3 * MiB + 256, 64 * MiB, 512};
  std::vector<std::pair<std::uintptr_t, std::uint64_t>> taken;
  for (std::uint64_t size : sizes) {
    void* p = b->Reserve(size, 0);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(A(p) % 256, 0u);
    EXPECT_EQ(A(p) % (2 * MiB), 0u);  // regions start on 2 MiB boundaries, as on a GPU
    taken.emplace_back(A(p), size);
  }
  std::sort(taken.begin(), taken.end());
  for (std::size_t i = 1; i < taken.size(); ++i) {
    EXPECT_LE(taken[i - 1].first + taken[i - 1].second, taken[i].first);
  }
  std::uint64_t total = 0;
  for (const auto& [addr, size] : taken) total += size;
  EXPECT_EQ(b->held(), total);  // held counts requested bytes, not the 2 MiB footprints
  for (const auto& [addr, size] : taken) b->Release(reinterpret_cast<void*>(addr), size, 0);
}

TEST(SimBackingTest, RejectsBadSizes) {
  auto b = Sim(1 * GiB);
  EXPECT_THROW(b->Reserve(0, 0), BackingError);
  EXPECT_THROW(b->Reserve(100, 0), BackingError);
  EXPECT_THROW(b->expandable()->ReserveRange(1 * MiB), BackingError);
  EXPECT_THROW(b->expandable()->ReserveRange(0), BackingError);
  EXPECT_EQ(b->held(), 0u);
}

TEST(SimBackingTest, ExpandableMapUnmapAccounting) {
  auto b = Sim(16 * MiB);
  ExpandableBacking* e = b->expandable();
  void* base = e->ReserveRange(64 * MiB);  // address space only: more than the capacity is fine
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(A(base) % (2 * MiB), 0u);
  EXPECT_EQ(b->held(), 0u);
  EXPECT_TRUE(e->Map(base, 0, 8 * MiB));
  EXPECT_EQ(b->held(), 8 * MiB);
  EXPECT_TRUE(e->Map(base, 8 * MiB, 8 * MiB));
  EXPECT_EQ(b->held(), 16 * MiB);
  EXPECT_FALSE(e->Map(base, 16 * MiB, 2 * MiB));  // beyond capacity: refused, nothing mapped
  EXPECT_EQ(b->held(), 16 * MiB);
  e->Unmap(base, 8 * MiB, 8 * MiB);
  EXPECT_EQ(b->held(), 8 * MiB);
  void* region = b->Reserve(8 * MiB, 0);  // regions and mapped pages share the capacity
  ASSERT_NE(region, nullptr);
  EXPECT_FALSE(e->Map(base, 8 * MiB, 2 * MiB));
  b->Release(region, 8 * MiB, 0);
  EXPECT_TRUE(e->Map(base, 8 * MiB, 8 * MiB));
  e->Unmap(base, 0, 16 * MiB);  // one Unmap over pages of two Map calls
  EXPECT_EQ(b->held(), 0u);
  e->ReleaseRange(base, 64 * MiB);
  EXPECT_EQ(e->ReserveRange(64 * MiB), base);  // the address space is reused
  e->ReleaseRange(base, 64 * MiB);
}

TEST(SimBackingTest, ExpandableMisuseThrowsAndChangesNothing) {
  auto b = Sim(1 * GiB);
  ExpandableBacking* e = b->expandable();
  void* base = e->ReserveRange(16 * MiB);
  ASSERT_NE(base, nullptr);
  ASSERT_TRUE(e->Map(base, 0, 4 * MiB));
  EXPECT_THROW(e->Map(base, 2 * MiB, 4 * MiB), BackingError);       // overlaps mapped pages
  EXPECT_THROW(e->Unmap(base, 4 * MiB, 2 * MiB), BackingError);     // not mapped
  EXPECT_THROW(e->Unmap(base, 2 * MiB, 4 * MiB), BackingError);     // partly mapped
  EXPECT_THROW(e->Map(base, 1 * MiB, 2 * MiB), BackingError);       // misaligned offset
  EXPECT_THROW(e->Map(base, 4 * MiB, 3 * MiB), BackingError);       // misaligned size
  EXPECT_THROW(e->Map(base, 14 * MiB, 4 * MiB), BackingError);      // past the end
  EXPECT_THROW(e->Map(At(base, 2 * MiB), 0, 2 * MiB), BackingError);  // not a range base
  EXPECT_THROW(e->ReleaseRange(base, 16 * MiB), BackingError);      // pages still mapped
  EXPECT_THROW(e->ReleaseRange(base, 32 * MiB), BackingError);      // wrong size
  EXPECT_THROW(b->Release(base, 16 * MiB, 0), BackingError);        // a range, not a region
  EXPECT_EQ(b->held(), 4 * MiB);
  e->Unmap(base, 0, 4 * MiB);
  e->ReleaseRange(base, 16 * MiB);
  EXPECT_THROW(e->ReleaseRange(base, 16 * MiB), BackingError);      // twice
  EXPECT_EQ(b->held(), 0u);
}

TEST(SimBackingTest, BadReleaseThrows) {
  auto b = Sim(1 * GiB);
  void* p = b->Reserve(4 * MiB, 0);
  ASSERT_NE(p, nullptr);
  try {
    b->Release(At(p, 256), 4 * MiB, 0);
    ADD_FAILURE() << "misaligned release accepted";
  } catch (const BackingError& e) {
    EXPECT_NE(std::string(e.what()).find("misaligned"), std::string::npos) << e.what();
  }
  try {
    b->Release(At(p, 64 * MiB), 4 * MiB, 0);
    ADD_FAILURE() << "unknown release accepted";
  } catch (const BackingError& e) {
    EXPECT_NE(std::string(e.what()).find("not a block"), std::string::npos) << e.what();
  }
  EXPECT_THROW(b->Release(p, 2 * MiB, 0), BackingError);  // wrong size
  EXPECT_THROW(b->expandable()->ReleaseRange(p, 4 * MiB), BackingError);  // a region
  EXPECT_EQ(b->held(), 4 * MiB);
  b->Release(p, 4 * MiB, 0);
  EXPECT_THROW(b->Release(p, 4 * MiB, 0), BackingError);  // double release
  EXPECT_EQ(b->held(), 0u);
}

TEST(SimBackingTest, RangeBeyondAddressSpaceReturnsNull) {
  auto b = Sim(64 * MiB);
  EXPECT_EQ(b->expandable()->ReserveRange(1ULL << 62), nullptr);
}

TEST(SimBackingTest, ConcurrentReserveReleaseKeepsHeldExact) {
  // Small enough that the threads contend for capacity, so refusals happen too.
  auto b = Sim(48 * MiB);
  ExpandableBacking* e = b->expandable();
  constexpr int kThreads = 4;
  struct Holdings {
    std::vector<std::pair<void*, std::uint64_t>> regions;
    void* range = nullptr;
    std::vector<bool> mapped = std::vector<bool>(8, false);  // 8 pages of 2 MiB
    std::uint64_t bytes = 0;
  };
  std::vector<Holdings> holdings(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Holdings& h = holdings[t];
      std::mt19937 rng(static_cast<std::uint32_t>(t) + 1);
      h.range = e->ReserveRange(16 * MiB);
      for (int i = 0; i < 3000; ++i) {
        const std::uint32_t op = rng() % 4;
        if (op == 0 && h.regions.size() < 6) {
          const std::uint64_t size = (1 + rng() % 8192) * 256;  // 256 B .. 2 MiB
          if (void* p = b->Reserve(size, 0)) {
            h.regions.emplace_back(p, size);
            h.bytes += size;
          }
        } else if (op == 1 && !h.regions.empty()) {
          const std::size_t k = rng() % h.regions.size();
          b->Release(h.regions[k].first, h.regions[k].second, 0);
          h.bytes -= h.regions[k].second;
          h.regions.erase(h.regions.begin() + static_cast<std::ptrdiff_t>(k));
        } else if (h.range != nullptr) {
          const std::uint32_t page = rng() % 8;
          if (h.mapped[page]) {
            e->Unmap(h.range, page * 2 * MiB, 2 * MiB);
            h.mapped[page] = false;
            h.bytes -= 2 * MiB;
          } else if (e->Map(h.range, page * 2 * MiB, 2 * MiB)) {
            h.mapped[page] = true;
            h.bytes += 2 * MiB;
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();

  std::uint64_t expected = 0;
  std::vector<std::pair<std::uintptr_t, std::uint64_t>> spans;
  for (const Holdings& h : holdings) {
    ASSERT_NE(h.range, nullptr);
    expected += h.bytes;
    for (const auto& [p, size] : h.regions) spans.emplace_back(A(p), size);
    spans.emplace_back(A(h.range), 16 * MiB);
  }
  EXPECT_EQ(b->held(), expected);
  EXPECT_LE(b->held(), 48 * MiB);
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    EXPECT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first) << "overlap at " << i;
  }
  for (Holdings& h : holdings) {
    for (const auto& [p, size] : h.regions) b->Release(p, size, 0);
    for (std::uint64_t page = 0; page < 8; ++page) {
      if (h.mapped[page]) e->Unmap(h.range, page * 2 * MiB, 2 * MiB);
    }
    e->ReleaseRange(h.range, 16 * MiB);
  }
  EXPECT_EQ(b->held(), 0u);
}

// ----------------------------------------------------------------------------------------- host

std::uint8_t PatternByte(std::uint64_t i, std::uint8_t seed) {
  return static_cast<std::uint8_t>((i * 131 + seed) % 251);
}

void WritePattern(void* p, std::uint64_t bytes, std::uint8_t seed) {
  auto* bytes_ptr = static_cast<std::uint8_t*>(p);
  for (std::uint64_t i = 0; i < bytes; ++i) bytes_ptr[i] = PatternByte(i, seed);
}

// Index of the first byte that differs from the pattern, or `bytes`.
std::uint64_t CheckPattern(const void* p, std::uint64_t bytes, std::uint8_t seed) {
  const auto* bytes_ptr = static_cast<const std::uint8_t*>(p);
  for (std::uint64_t i = 0; i < bytes; ++i) {
    if (bytes_ptr[i] != PatternByte(i, seed)) return i;
  }
  return bytes;
}

TEST(HostBackingTest, Info) {
  auto b = MakeBacking(Conf(BackingKind::kHost));
  const auto ram = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                   static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(b->info().kind, BackingKind::kHost);
  EXPECT_EQ(b->info().capacity, ram);
  EXPECT_EQ(b->info().granularity, 256u);
  EXPECT_TRUE(b->info().host_accessible);
  EXPECT_EQ(b->info().device_name.rfind("host", 0), 0u) << b->info().device_name;
  ASSERT_NE(b->expandable(), nullptr);
  EXPECT_EQ(b->expandable()->map_granularity(), 2 * MiB);
}

TEST(HostBackingTest, ReservedMemoryHoldsData) {
  auto b = MakeBacking(Conf(BackingKind::kHost, 1 * GiB));
  const std::uint64_t bytes = 8 * MiB + 256;  // not a whole number of pages
  void* p = b->Reserve(bytes, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(b->held(), bytes);
  WritePattern(p, bytes, 7);
  EXPECT_EQ(CheckPattern(p, bytes, 7), bytes);
  b->Release(p, bytes, 0);
  EXPECT_EQ(b->held(), 0u);
}

TEST(HostBackingTest, ExpandableMapWriteUnmapRemap) {
  auto b = MakeBacking(Conf(BackingKind::kHost, 1 * GiB));
  ExpandableBacking* e = b->expandable();
  void* base = e->ReserveRange(32 * MiB);
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(A(base) % (2 * MiB), 0u);
  EXPECT_EQ(b->held(), 0u);
  ASSERT_TRUE(e->Map(base, 0, 4 * MiB));
  WritePattern(base, 4 * MiB, 1);
  ASSERT_TRUE(e->Map(base, 4 * MiB, 4 * MiB));  // grows in place, right after the first piece
  WritePattern(At(base, 4 * MiB), 4 * MiB, 2);
  EXPECT_EQ(b->held(), 8 * MiB);
  EXPECT_EQ(CheckPattern(base, 4 * MiB, 1), 4 * MiB);
  EXPECT_EQ(CheckPattern(At(base, 4 * MiB), 4 * MiB, 2), 4 * MiB);

  e->Unmap(base, 4 * MiB, 4 * MiB);
  EXPECT_EQ(b->held(), 4 * MiB);
  ASSERT_TRUE(e->Map(base, 4 * MiB, 4 * MiB));
  // The pages were given back: the remapped piece reads as fresh zero pages; the rest is intact.
  const std::vector<char> zeros(4 * MiB, 0);
  EXPECT_EQ(std::memcmp(At(base, 4 * MiB), zeros.data(), zeros.size()), 0);
  EXPECT_EQ(CheckPattern(base, 4 * MiB, 1), 4 * MiB);
  WritePattern(At(base, 4 * MiB), 4 * MiB, 3);
  EXPECT_EQ(CheckPattern(At(base, 4 * MiB), 4 * MiB, 3), 4 * MiB);

  e->Unmap(base, 0, 8 * MiB);
  EXPECT_EQ(b->held(), 0u);
  e->ReleaseRange(base, 32 * MiB);
}

TEST(HostBackingTest, CapacityRefusal) {
  auto b = MakeBacking(Conf(BackingKind::kHost, 64 * MiB));
  EXPECT_EQ(b->info().capacity, 64 * MiB);
  void* p = b->Reserve(48 * MiB, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(b->Reserve(32 * MiB, 0), nullptr);
  ExpandableBacking* e = b->expandable();
  void* base = e->ReserveRange(64 * MiB);  // address space is not capacity
  ASSERT_NE(base, nullptr);
  EXPECT_TRUE(e->Map(base, 0, 16 * MiB));
  EXPECT_FALSE(e->Map(base, 16 * MiB, 2 * MiB));
  EXPECT_EQ(b->held(), 64 * MiB);
  e->Unmap(base, 0, 16 * MiB);
  e->ReleaseRange(base, 64 * MiB);
  b->Release(p, 48 * MiB, 0);
  EXPECT_EQ(b->held(), 0u);
}

TEST(HostBackingTest, ExternalUseReducesWhatFits) {
  auto b = MakeBacking(Conf(BackingKind::kHost, 64 * MiB, 32 * MiB));
  void* p = b->Reserve(32 * MiB, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(b->Reserve(256, 0), nullptr);
  b->Release(p, 32 * MiB, 0);
}

TEST(HostBackingTest, BadReleaseThrows) {
  auto b = MakeBacking(Conf(BackingKind::kHost, 1 * GiB));
  void* p = b->Reserve(1 * MiB, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_THROW(b->Release(At(p, 256), 1 * MiB, 0), BackingError);
  EXPECT_THROW(b->Release(At(p, 1 * MiB + 64 * MiB), 1 * MiB, 0), BackingError);
  EXPECT_THROW(b->Release(p, 2 * MiB, 0), BackingError);
  EXPECT_THROW(b->Reserve(100, 0), BackingError);
  WritePattern(p, 1 * MiB, 9);  // still mapped and usable after the refused calls
  EXPECT_EQ(CheckPattern(p, 1 * MiB, 9), 1 * MiB);
  b->Release(p, 1 * MiB, 0);
  EXPECT_THROW(b->Release(p, 1 * MiB, 0), BackingError);
}

// ------------------------------------------------------------------------------------- factory

TEST(MakeBackingTest, EveryKind) {
  EXPECT_EQ(MakeBacking(Conf(BackingKind::kSim))->info().kind, BackingKind::kSim);
  EXPECT_EQ(MakeBacking(Conf(BackingKind::kHost))->info().kind, BackingKind::kHost);
  std::string why;
  const bool gpu = CudaDeviceAvailable(&why);
  if (!gpu) {
    EXPECT_FALSE(why.empty());
  }
  for (BackingKind kind : {BackingKind::kCuda, BackingKind::kVmm, BackingKind::kAsync}) {
    SCOPED_TRACE(std::string(ToString(kind)));
    if (gpu) {
      EXPECT_EQ(MakeBacking(Conf(kind))->info().kind, kind);
    } else if (!BuiltWithCuda()) {
      try {
        MakeBacking(Conf(kind));
        ADD_FAILURE() << "expected ConfigError";
      } catch (const ConfigError& e) {
        EXPECT_EQ(e.key(), "backing");
        EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
      }
    } else {
      try {
        MakeBacking(Conf(kind));
        ADD_FAILURE() << "expected BackingError";
      } catch (const BackingError& e) {
        const std::string message = Lower(e.what());
        EXPECT_TRUE(message.find("driver") != std::string::npos ||
                    message.find("device") != std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(MakeBackingTest, CudaKindsRejectExternalUse) {
  for (BackingKind kind : {BackingKind::kCuda, BackingKind::kVmm, BackingKind::kAsync}) {
    try {
      MakeBacking(Conf(kind, std::nullopt, 1 * GiB));
      ADD_FAILURE() << "expected ConfigError for " << ToString(kind);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), BuiltWithCuda() ? "external_use" : "backing") << e.what();
    }
  }
}

}  // namespace
}  // namespace fragscope
