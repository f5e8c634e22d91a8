// A state is one moment: Diagnose gives its findings — the evidence's numbers first, what the
// layout adds up to, empty regions, free whole pages — and nothing that needs time.
#include "fragscope/analysis/state_findings.hpp"

#include <gtest/gtest.h>

#include "fragscope/analysis/diagnosis.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

Event Make(EventType type, std::uint64_t seq, std::uint64_t address, std::uint64_t size, std::uint64_t region = 0) {
  Event e;
  e.type = type;
  e.seq = seq;
  e.address = address;
  e.size = size;
  e.rounded = type == EventType::kAlloc ? size : 0;
  e.region = region;
  e.alloc_id = type == EventType::kAlloc ? seq + 1 : 0;
  return e;
}

// A PyTorch-like state on device 0: a 2 MiB small segment with one 512-byte block; a 100 MiB
// segment with blocks at [0, 10 MiB) and [70, 100 MiB): a 60 MiB hole from 10 to 70 MiB, which
// holds whole 20 MiB pages [20, 40) and [40, 60) (aligned to the segment start); and an empty
// 40 MiB segment.
struct StateTrace {
  traces::TraceHeader header;
  std::vector<Event> events;
};

StateTrace PytorchLikeState() {
  StateTrace t;
  t.header.producer = "test";
  t.header.kind = traces::EvidenceKind::kState;
  t.header.source.allocator = "PyTorch CUDA caching allocator";
  t.header.devices = {{0, "cuda:0", "pytorch", 0, 0}};
  const std::uint64_t small = 0x1000'0000, large = 0x2000'0000, empty = 0x4000'0000;
  t.events = {Make(EventType::kRegionReserve, 0, small, 2 * kMiB),
              Make(EventType::kAlloc, 1, small, 512, small),
              Make(EventType::kRegionReserve, 2, large, 100 * kMiB),
              Make(EventType::kAlloc, 3, large, 10 * kMiB, large),
              Make(EventType::kAlloc, 4, large + 70 * kMiB, 30 * kMiB, large),
              Make(EventType::kRegionReserve, 5, empty, 40 * kMiB)};
  traces::StateSummary s;
  s.device = 0;
  s.moment = "when the snapshot was taken";
  s.at_seq = 5;
  t.header.source.states = {s};
  return t;
}

Diagnosis DiagnoseTrace(const StateTrace& t) {
  auto context = AnalysisContext::Read(t.header, [&](const BlockObserver& observer) -> BlockSource {
    auto done = std::make_shared<bool>(false);
    return [&, done, observer](std::vector<Event>* out) {
      if (*done) return false;
      *out = t.events;
      if (observer) observer(*out);
      *done = true;
      return true;
    };
  });
  return Diagnose(*context);
}

TEST(StateFindings, LayoutHolesEmptySegmentsAndFreePages) {
  const Diagnosis d = DiagnoseTrace(PytorchLikeState());
  EXPECT_EQ(d.kind, traces::EvidenceKind::kState);
  EXPECT_FALSE(d.min_limit.has_value());
  ASSERT_EQ(d.states.size(), 1u);
  const StateFindings& s = d.states[0];
  EXPECT_EQ(s.moment, "when the snapshot was taken");
  EXPECT_EQ(s.regions, 3u);
  EXPECT_EQ(s.chunks, 3u);
  EXPECT_EQ(s.layout_reserved, 142 * kMiB);
  EXPECT_EQ(s.layout_in_use, 40 * kMiB + 512);
  EXPECT_EQ(s.in_use, 40 * kMiB + 512);  // no summary: the layout's sum
  EXPECT_FALSE(s.in_use_from_summary);
  EXPECT_EQ(s.reserved, 142 * kMiB);
  EXPECT_EQ(s.limit, std::nullopt);
  EXPECT_EQ(s.free_in_regions, 142 * kMiB - 40 * kMiB - 512);
  // Holes: the small segment's tail, the large segment's 60 MiB middle, the empty segment whole.
  EXPECT_EQ(s.holes, 3u);
  EXPECT_EQ(s.largest_hole, 60 * kMiB);
  EXPECT_EQ(s.empty_regions, 1u);
  EXPECT_EQ(s.empty_region_bytes, 40 * kMiB);
  // 2 MiB pages in the 2 MiB segment (none whole: its block sits in the only page), 20 MiB pages
  // in the large one: [20, 40) and [40, 60) lie inside the hole [10, 70).
  EXPECT_EQ(s.free_pages, 2u);
  EXPECT_EQ(s.free_page_bytes, 40 * kMiB);
  EXPECT_EQ(s.page_bytes_small, 2 * kMiB);
  EXPECT_EQ(s.page_bytes_large, 20 * kMiB);
}

TEST(StateFindings, SummaryIsTheTruthWhereTheLayoutIsCut) {
  StateTrace t = PytorchLikeState();
  t.header.source.allocator = "TensorFlow BFC allocator";
  traces::StateSummary& s = t.header.source.states[0];
  s.in_use = 900 * kMiB;
  s.limit = 1000 * kMiB;
  s.max_in_use = 950 * kMiB;
  s.layout_complete = false;
  s.missing = "the chunks listed hold 40.00 MiB in use where its Stats say 900.00 MiB: the list is incomplete";
  const Diagnosis d = DiagnoseTrace(t);
  ASSERT_EQ(d.states.size(), 1u);
  const StateFindings& f = d.states[0];
  EXPECT_EQ(f.in_use, 900 * kMiB);
  EXPECT_TRUE(f.in_use_from_summary);
  EXPECT_EQ(f.layout_in_use, 40 * kMiB + 512);
  EXPECT_EQ(f.reserved, std::nullopt);  // no count of its own, and the listed regions are not all
  EXPECT_EQ(f.layout_reserved, 142 * kMiB);
  EXPECT_EQ(f.limit, 1000 * kMiB);
  EXPECT_EQ(f.max_in_use, 950 * kMiB);
  EXPECT_FALSE(f.layout_complete);
  EXPECT_EQ(f.missing, s.missing);
  // Not PyTorch: 2 MiB pages everywhere; the large segment's hole [10, 70) holds 30 of them.
  EXPECT_EQ(f.free_pages, 30u);
  EXPECT_EQ(f.free_page_bytes, 60 * kMiB);
}

// Where the in-use figure is what a cut listing holds, it is a lower bound, and the
// findings say so (the report's text said "at least" while its JSON said in_use_at_least false).
TEST(StateFindings, InUseOfACutListingIsALowerBound) {
  StateTrace t = PytorchLikeState();
  t.header.source.allocator = "TensorFlow BFC allocator";
  t.header.source.states[0].layout_complete = false;
  t.header.source.states[0].requested_known = false;
  const Diagnosis d = DiagnoseTrace(t);
  ASSERT_EQ(d.states.size(), 1u);
  const StateFindings& f = d.states[0];
  EXPECT_EQ(f.in_use, 40 * kMiB + 512);
  EXPECT_FALSE(f.in_use_from_summary);
  EXPECT_TRUE(f.in_use_at_least);
  EXPECT_FALSE(f.requested_known);
  // A whole listing's sum is exact.
  const Diagnosis whole = DiagnoseTrace(PytorchLikeState());
  EXPECT_FALSE(whole.states[0].in_use_at_least);
  EXPECT_TRUE(whole.states[0].requested_known);
}

TEST(StateFindings, TheMomentIsTheEventWithItsSeq) {
  // Two moments of one device: the first before the large segment existed.
  StateTrace t = PytorchLikeState();
  traces::StateSummary first = t.header.source.states[0];
  first.at_seq = 1;
  first.moment = "first";
  t.header.source.states.insert(t.header.source.states.begin(), first);
  const Diagnosis d = DiagnoseTrace(t);
  ASSERT_EQ(d.states.size(), 2u);
  EXPECT_EQ(d.states[0].moment, "first");
  EXPECT_EQ(d.states[0].regions, 1u);
  EXPECT_EQ(d.states[0].layout_reserved, 2 * kMiB);
  EXPECT_EQ(d.states[1].regions, 3u);
}

TEST(StateFindings, AHeaderListingTooManyMomentsIsCutWithAWarning) {
  StateTrace t = PytorchLikeState();
  t.header.source.states.assign(kMaxStates + 10, t.header.source.states[0]);
  const Diagnosis d = DiagnoseTrace(t);
  EXPECT_EQ(d.states.size(), kMaxStates);
  ASSERT_FALSE(d.warnings.empty());
  EXPECT_EQ(d.warnings.back(), "the header lists 4106 moments; the first 4096 are examined");
}

TEST(StateFindings, AHistoryHasNone) {
  StateTrace t = PytorchLikeState();
  t.header.kind = traces::EvidenceKind::kHistory;
  t.header.source.states.clear();
  const Diagnosis d = DiagnoseTrace(t);
  EXPECT_EQ(d.kind, traces::EvidenceKind::kHistory);
  EXPECT_TRUE(d.states.empty());
}

}  // namespace
}  // namespace fragscope::analysis
