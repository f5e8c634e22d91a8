// EventSizeProblem's inline fast path against its exact rule, at the edges of the cap and of the
// address space, and on seeded random values clustered around them.
#include <random>

#include <gtest/gtest.h>

#include "fragscope/traces/event.hpp"

namespace fragscope::traces {
namespace {

constexpr std::uint64_t kTop = ~std::uint64_t{0};

// The rule as documented: an alloc, free or range event whose size or rounded size is above
// kMaxBytes, or whose [address, address + max(size, rounded)) runs past 2^64.
bool Refused(const Event& e) {
  switch (e.type) {
    case EventType::kOom:
    case EventType::kMarker:
      return false;
    default:
      break;
  }
  const std::uint64_t span = std::max(e.size, e.rounded);
  return e.size > kMaxBytes || e.rounded > kMaxBytes || e.address > kTop - span;
}

Event Ev(EventType type, std::uint64_t address, std::uint64_t size, std::uint64_t rounded) {
  Event e;
  e.type = type;
  e.address = address;
  e.size = size;
  e.rounded = rounded;
  return e;
}

TEST(EventSize, EdgesOfTheCapAndTheAddressSpace) {
  EXPECT_EQ(EventSizeProblem(Ev(EventType::kAlloc, 0, kMaxBytes, 0)), nullptr);
  EXPECT_STREQ(EventSizeProblem(Ev(EventType::kAlloc, 0, kMaxBytes + 1, 0)),
               "size over 4 EiB, the largest size fragscope represents");
  EXPECT_NE(EventSizeProblem(Ev(EventType::kFree, 0, 256, kMaxBytes + 1)), nullptr);
  // A range that ends exactly at 2^64 fits; one byte more does not.
  EXPECT_EQ(EventSizeProblem(Ev(EventType::kMap, kTop - 4096, 4096, 0)), nullptr);
  EXPECT_STREQ(EventSizeProblem(Ev(EventType::kMap, kTop - 4095, 4096, 0)),
               "address range runs past the end of the 64-bit address space");
  EXPECT_EQ(EventSizeProblem(Ev(EventType::kRegionReserve, kTop - kMaxBytes, kMaxBytes, kMaxBytes)), nullptr);
  EXPECT_NE(EventSizeProblem(Ev(EventType::kRegionReserve, kTop - kMaxBytes + 1, 1, kMaxBytes)), nullptr);
  // oom and marker events carry any number.
  EXPECT_EQ(EventSizeProblem(Ev(EventType::kOom, kTop, kTop, kTop)), nullptr);
  EXPECT_EQ(EventSizeProblem(Ev(EventType::kMarker, kTop, kTop, 0)), nullptr);
}

TEST(EventSize, FastPathAgreesWithTheRuleOnValuesNearTheEdges) {
  std::mt19937_64 rng(77);
  const std::uint64_t anchors[] = {0, 1, kMaxBytes, kTop - kMaxBytes, kTop, std::uint64_t{1} << 40};
  auto near = [&] {
    const std::uint64_t a = anchors[rng() % std::size(anchors)];
    const std::uint64_t d = rng() % 3 == 0 ? rng() : rng() % 5000;
    return rng() % 2 ? a + d : a - d;
  };
  const EventType types[] = {EventType::kAlloc, EventType::kFree,  EventType::kRegionReserve,
                             EventType::kUnmap, EventType::kOom,   EventType::kMarker,
                             EventType::kMap,   EventType::kAddressRelease};
  int refused = 0;
  for (int i = 0; i < 200'000; ++i) {
    const Event e = Ev(types[rng() % std::size(types)], near(), near(), rng() % 2 ? 0 : near());
    ASSERT_EQ(EventSizeProblem(e) != nullptr, Refused(e))
        << "type " << static_cast<int>(e.type) << " address " << e.address << " size " << e.size << " rounded "
        << e.rounded;
    refused += Refused(e);
  }
  EXPECT_GT(refused, 20'000);  // both outcomes are exercised
  EXPECT_LT(refused, 180'000);
}

}  // namespace
}  // namespace fragscope::traces
