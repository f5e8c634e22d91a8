// The events around the cursor (issue 17: "an event list around the cursor", memory_viz's allocator
// state history): the right events of the right device, in order, each described in words with
// what it left in use and reserved.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/analysis/event_list.hpp"
#include "support/model_of.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

struct TwoDeviceTrace {
  traces::TraceHeader header;
  std::vector<Event> events;
  std::vector<std::string> tags = {"weights", "step 1 begin"};
  Event& Add(EventType type, std::uint32_t device, std::uint64_t address, std::uint64_t size, std::uint64_t rounded = 0,
             traces::TagId tag = 0) {
    Event& e = events.emplace_back();
    e.type = type;
    e.device = device;
    e.seq = events.size() - 1;
    e.address = address;
    e.size = size;
    e.rounded = rounded;
    e.tag = tag;
    if (type == EventType::kAlloc) e.region = 0x10000000 * (device + 1), e.alloc_id = e.seq + 1;
    return e;
  }
  std::unique_ptr<TimelineModel> Model() const { return testing::ModelOf(header, events, &tags); }
};

TEST(EventList, TheDevicesEventsAroundTheCursorInWords) {
  TwoDeviceTrace t;
  t.header.devices = {{0, "gpu 0", "sim", 1ull << 30, 1ull << 30}, {1, "gpu 1", "sim", 1ull << 30, 1ull << 30}};
  t.Add(EventType::kRegionReserve, 0, 0x10000000, 64 << 20);                 // 0
  t.Add(EventType::kRegionReserve, 1, 0x20000000, 64 << 20);                 // 1
  t.Add(EventType::kMarker, 0, 0, 0, 0, 2);                                  // 2 step 1 begin
  t.Add(EventType::kAlloc, 0, 0x10000000, 1000, 1024, 1);                    // 3 weights
  t.Add(EventType::kAlloc, 1, 0x20000000, 4 << 20, 4 << 20);                 // 4 (device 1)
  t.Add(EventType::kAlloc, 0, 0x10100000, 2 << 20, 2 << 20);                 // 5
  t.Add(EventType::kFree, 0, 0x10100000, 2 << 20, 2 << 20);                  // 6
  Event& oom = t.Add(EventType::kOom, 0, 0, 0);                              // 7
  oom.oom.request = 100 << 20;
  oom.oom.rounded = 100 << 20;
  oom.oom.limit = 64 << 20;
  oom.oom.cause = traces::OomCause::kRequestTooLarge;
  t.Add(EventType::kFree, 1, 0x20000000, 4 << 20, 4 << 20);                  // 8 (device 1)
  const auto model = t.Model();
  ASSERT_EQ(model->event_count(), 9u);

  // Cursor on event 5 (device 0): two before, the cursor, two after; device 1's events skipped.
  std::vector<EventRow> rows = EventsAround(*model, 0, 5, 2, 2);
  ASSERT_EQ(rows.size(), 5u);
  const std::vector<std::uint64_t> expected = {2, 3, 5, 6, 7};
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].index, expected[i]) << i;
  EXPECT_EQ(rows[0].what, "marker: step 1 begin");
  EXPECT_EQ(rows[1].what, "alloc 1000 B (rounded 1.00 KiB) at 0x10000000, tag weights");
  EXPECT_EQ(rows[2].what, "alloc 2.00 MiB at 0x10100000");
  EXPECT_EQ(rows[3].what, "free 2.00 MiB at 0x10100000");
  EXPECT_EQ(rows[4].what, "OUT OF MEMORY: a request of 100.00 MiB failed (request-too-large)");
  EXPECT_EQ(rows[2].in_use, 1024u + (2u << 20));
  EXPECT_EQ(rows[3].in_use, 1024u);
  EXPECT_EQ(rows[2].reserved, 64u << 20);

  // Device 1 with the cursor on a device-0 event: its events on either side, none at the cursor.
  rows = EventsAround(*model, 1, 5, 10, 10);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].index, 1u);
  EXPECT_EQ(rows[0].what, "region reserved: 64.00 MiB at 0x20000000");
  EXPECT_EQ(rows[1].index, 4u);
  EXPECT_EQ(rows[2].index, 8u);
  EXPECT_EQ(rows[2].in_use, 0u);

  // The ends of the trace, and a scan limit that stops before device 1's first event.
  rows = EventsAround(*model, 0, 0, 3, 1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].index, 0u);
  EXPECT_EQ(rows[1].index, 2u);
  rows = EventsAround(*model, 0, 8, 1, 5);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].index, 7u);
  rows = EventsAround(*model, 1, 8, 5, 0, /*max_scan=*/2);
  ASSERT_EQ(rows.size(), 1u) << "events 7 and 6 looked at, neither device 1's; then the cursor's own";
  EXPECT_EQ(rows[0].index, 8u);
}

// TensorFlow's "RESOURCE_EXHAUSTED: failed to allocate memory" gives no size: the row says so
// rather than "a request of 0 B".
TEST(EventList, AnOomWhoseRequestIsUnknownSaysSo) {
  TwoDeviceTrace t;
  t.header.devices = {{0, "gpu 0", "sim", 1ull << 30, 1ull << 30}};
  Event& oom = t.Add(EventType::kOom, 0, 0, 0);
  oom.oom.limit = 1ull << 30;
  oom.oom.present = traces::kOomLimit | traces::kOomInUse;
  oom.oom.cause = traces::OomCause::kUnknown;
  const std::vector<EventRow> rows = EventsAround(*t.Model(), 0, 0, 0, 0);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].what, "OUT OF MEMORY: a request of unknown size failed (unknown)");
}

}  // namespace
}  // namespace fragscope::analysis
