// The inspector's compare carries the recorded limits into a side that sets none, the
// virtual devices' sizes (one limit each) as well as a single limit.
#include "fragscope/analysis/recorded_limits.hpp"

#include <gtest/gtest.h>

namespace fragscope::analysis {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

TEST(RecordedLimits, VirtualDevicesAreCarriedWithTheirSizes) {
  const AllocConf recorded = ParseAllocConf("backing=sim,virtual_devices=1GiB+200MiB");
  const RecordedLimits side = WithRecordedLimits(ParseAllocConf("preset=tensorflow"), &recorded);
  EXPECT_TRUE(side.carried);
  EXPECT_EQ(side.conf.virtual_devices, (std::vector<std::uint64_t>{1024 * kMiB, 200 * kMiB}));
  EXPECT_EQ(side.conf.policy, "tensorflow");  // the side's own policy stays
  EXPECT_EQ(side.LimitOf(0), 1024 * kMiB);
  EXPECT_EQ(side.LimitOf(1), 200 * kMiB);
  EXPECT_EQ(side.LimitOf(2), std::nullopt);
  EXPECT_EQ(side.Note(1), " (limit 200.00 MiB as recorded, virtual device 1 of 2)");
  // For every device at once (`fragscope compare`'s rows, `replay`'s allocator line).
  EXPECT_EQ(side.Summary(), "virtual devices 1.00 GiB + 200.00 MiB as recorded");
}

TEST(RecordedLimits, OneLimitIsCarriedToEveryDevice) {
  const AllocConf recorded = ParseAllocConf("limit=2GiB");
  const RecordedLimits side = WithRecordedLimits(ParseAllocConf("growth=on"), &recorded);
  EXPECT_TRUE(side.carried);
  EXPECT_EQ(side.conf.limit, 2048 * kMiB);
  EXPECT_EQ(side.LimitOf(3), 2048 * kMiB);
  EXPECT_EQ(side.Note(0), " (limit 2.00 GiB as recorded)");
  EXPECT_EQ(side.Summary(), "limit 2.00 GiB as recorded");
}

TEST(RecordedLimits, ASideWithItsOwnLimitOrNothingRecordedKeepsItsConfiguration) {
  const AllocConf recorded = ParseAllocConf("virtual_devices=1GiB+200MiB");
  const RecordedLimits own = WithRecordedLimits(ParseAllocConf("limit=4GiB"), &recorded);
  EXPECT_FALSE(own.carried);
  EXPECT_EQ(own.conf.limit, 4096 * kMiB);
  EXPECT_TRUE(own.conf.virtual_devices.empty());
  EXPECT_EQ(own.Note(0), "");
  EXPECT_EQ(own.Summary(), "");
  const RecordedLimits own_devices = WithRecordedLimits(ParseAllocConf("virtual_devices=300MiB"), &recorded);
  EXPECT_FALSE(own_devices.carried);
  EXPECT_EQ(own_devices.conf.virtual_devices, (std::vector<std::uint64_t>{300 * kMiB}));
  const RecordedLimits none = WithRecordedLimits(ParseAllocConf("growth=on"), nullptr);
  EXPECT_FALSE(none.carried);
  EXPECT_EQ(none.LimitOf(0), std::nullopt);
  const AllocConf unlimited = ParseAllocConf("growth=on");
  EXPECT_FALSE(WithRecordedLimits(ParseAllocConf(""), &unlimited).carried);
}

}  // namespace
}  // namespace fragscope::analysis
