// A PyTorch snapshot's oom event: the numbers the importer records and the cause by the rule of
// docs/importers.md (S <= F unknown, R > F + U capacity, else fragmentation); the segment size S;
// what a snapshot with nothing in it says; malformed values named at their byte offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"
#include "import/snapshot_oom_cases.hpp"

namespace fragscope::traces {
namespace {

using namespace fragscope::testing::snapshot_oom_cases;

Trace Import(const Py& root) { return ReadPytorchSnapshot(Pickle(root), "oom.pickle"); }

const Event& OnlyOom(const Trace& t) {
  const auto it = std::find_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.type == EventType::kOom; });
  EXPECT_NE(it, t.events.end());
  return *it;
}

TEST(PytorchSnapshotOom, SegmentSizeFollowsGetAllocationSize) {
  EXPECT_EQ(PytorchSegmentSize(512), 2 * kMiB);
  EXPECT_EQ(PytorchSegmentSize(kMiB), 2 * kMiB);  // the small pool's largest request
  EXPECT_EQ(PytorchSegmentSize(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(PytorchSegmentSize(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(PytorchSegmentSize(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(PytorchSegmentSize(64 * kMiB + 512), 66 * kMiB);
  EXPECT_EQ(PytorchSegmentSize(kMaxBytes), kMaxBytes);
}

// A free block on another stream: the numbers say fragmentation (R = 20 <= F + U = 31 MiB, and the
// 20 MiB segment does not fit in 1 MiB); the stream is kept for the words.
TEST(PytorchSnapshotOom, CrossStreamIsFragmentationByTheRule) {
  const auto trace = Import(CrossStream());  // the event lives in it
  const Event& o = OnlyOom(trace);
  EXPECT_EQ(o.stream, kSideStream);
  EXPECT_EQ(o.oom.rounded, 20 * kMiB);
  EXPECT_EQ(o.oom.reserved, 40 * kMiB);
  EXPECT_EQ(o.oom.in_use, 10 * kMiB);
  EXPECT_EQ(o.oom.free_in_regions, 30 * kMiB);
  EXPECT_EQ(o.oom.largest_free, 30 * kMiB);
  EXPECT_EQ(o.oom.headroom, kMiB);
  EXPECT_EQ(o.oom.limit, 41 * kMiB);  // reserved + device_free: what PyTorch could have held then
  EXPECT_EQ(o.oom.cause, OomCause::kFragmentation);
}

TEST(PytorchSnapshotOom, SmallRequestAndMidRequestAreFragmentation) {
  const auto small_trace = Import(SmallPool());  // the events live in the traces
  const Event& small = OnlyOom(small_trace);
  EXPECT_EQ(small.oom.rounded, 512u * 1024);
  EXPECT_EQ(small.oom.headroom, 0u);
  EXPECT_EQ(small.oom.cause, OomCause::kFragmentation);  // 0.5 <= 0 + 30 MiB; S = 2 MiB > 0
  const auto mid_trace = Import(MidRequest());
  const Event& mid = OnlyOom(mid_trace);
  EXPECT_EQ(mid.oom.free_in_regions, 4 * kMiB);
  EXPECT_EQ(mid.oom.largest_free, 4 * kMiB);
  EXPECT_EQ(mid.oom.cause, OomCause::kFragmentation);  // 5 <= 1 + 4 MiB; S = 20 MiB > 1 MiB
}

// R = 64 MiB > F + U = 1 + 10 MiB: capacity of what was left, not a request larger than the device
// (whose size a snapshot does not record).
TEST(PytorchSnapshotOom, MoreThanFreeAndCachedIsCapacity) {
  const Trace t = Import(Capacity());
  const Event& o = OnlyOom(t);
  EXPECT_EQ(o.device, 1u);
  EXPECT_EQ(o.oom.cause, OomCause::kCapacity);
  EXPECT_EQ(o.oom.in_use, 30 * kMiB);
  EXPECT_EQ(o.oom.free_in_regions, 10 * kMiB);
  ASSERT_EQ(t.header.devices.size(), 1u);
  EXPECT_EQ(t.header.devices[0].capacity, 0u);  // unknown
}

// S <= F: the segment fit in what the driver reported free, so the numbers contradict an OOM
// (unknown); one byte less free and it is the rule's next case.
TEST(PytorchSnapshotOom, SegmentThatFitsInFreeIsUnknown) {
  EXPECT_EQ(OnlyOom(Import(MidRequestWithFree(20 * kMiB))).oom.cause, OomCause::kUnknown);
  EXPECT_EQ(OnlyOom(Import(MidRequestWithFree(512 * kMiB))).oom.cause, OomCause::kUnknown);
  EXPECT_EQ(OnlyOom(Import(MidRequestWithFree(20 * kMiB - 1))).oom.cause, OomCause::kFragmentation);
  // Nothing free on the device: 5 MiB > F + U = 0 + 4 MiB is capacity.
  EXPECT_EQ(OnlyOom(Import(MidRequestWithFree(0))).oom.cause, OomCause::kCapacity);
}

// torch writes one trace list per device; with nothing allocated the state's sums are a known 0,
// and a snapshot that lists no device names none.
TEST(PytorchSnapshotOom, NothingAllocatedIsAKnownZero) {
  const Trace one = Import(D({{"segments", L({})}, {"device_traces", L({L({})})}}));
  ASSERT_EQ(one.header.devices.size(), 1u);
  ASSERT_EQ(one.header.source.states.size(), 1u);
  const StateSummary& s = one.header.source.states[0];
  EXPECT_EQ(s.device, 0u);
  EXPECT_EQ(s.in_use, std::optional<std::uint64_t>(0));
  EXPECT_EQ(s.reserved, std::optional<std::uint64_t>(0));
  EXPECT_EQ(s.requested, std::optional<std::uint64_t>(0));
  const Trace none = Import(D({{"segments", L({})}, {"device_traces", L({})}}));
  EXPECT_TRUE(none.header.devices.empty());
  EXPECT_TRUE(none.header.source.states.empty());
  // With segments, their layout gives the sums (the report adds them up): the summary leaves them.
  const Trace state = Import(D({{"segments", L({Segment(0, kA, 40 * kMiB,
                                                        {Block(kA, 10 * kMiB, "active_allocated"),
                                                         Block(kA + 10 * kMiB, 30 * kMiB, "inactive")})})}}));
  ASSERT_EQ(state.header.source.states.size(), 1u);
  EXPECT_FALSE(state.header.source.states[0].in_use.has_value());
  EXPECT_FALSE(state.header.source.states[0].reserved.has_value());
  EXPECT_TRUE(state.header.source.states[0].layout_complete);
}

// The offset of the bytes that encode `value` inside the pickle of `root` (where it is unique).
std::uint64_t OffsetOf(const Py& root, const Py& value) {
  const std::vector<std::uint8_t> all = Pickle(root);
  std::vector<std::uint8_t> part;
  value.Encode(part);
  const auto it = std::search(all.begin(), all.end(), part.begin(), part.end());
  EXPECT_NE(it, all.end());
  return static_cast<std::uint64_t>(it - all.begin());
}

std::pair<std::uint64_t, std::string> ErrorOf(const Py& root) {
  try {
    (void)Import(root);
  } catch (const TraceError& e) {
    return {e.offset(), e.what()};
  }
  return {0, "(no error)"};
}

TEST(PytorchSnapshotOom, MalformedValueIsNamedAtItsOffset) {
  const Py address = S("0x7f00");
  const Py wrong_type = D({{"segments", L({D({{"device", I(0)}, {"address", address}, {"total_size", I(2 * kMiB)}})})}});
  const auto [type_offset, type_message] = ErrorOf(wrong_type);
  EXPECT_EQ(type_offset, OffsetOf(wrong_type, address));
  EXPECT_GT(type_offset, 20u);
  EXPECT_NE(type_message.find("segment 0: 'address' is a str, not an int"), std::string::npos) << type_message;
  EXPECT_NE(type_message.find(fmt::format("at byte {}", type_offset)), std::string::npos) << type_message;

  const Py size = Negative(4096);
  const Py negative = D({{"device_traces", L({L({D({{"action", S("alloc")}, {"addr", I(kA)}, {"size", size}})})})}});
  const auto [size_offset, size_message] = ErrorOf(negative);
  EXPECT_EQ(size_offset, OffsetOf(negative, size));
  EXPECT_NE(size_message.find("device 0 trace event 0: 'size' is negative"), std::string::npos) << size_message;

  // Saved as JSON, the value's offset is not known: no "at byte" rather than a false 0.
  std::string json;
  wrong_type.Json(json);
  try {
    (void)ReadPytorchSnapshot(std::span(reinterpret_cast<const std::uint8_t*>(json.data()), json.size()), "s.json");
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()).find("at byte"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'address' is a str"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fragscope::traces
