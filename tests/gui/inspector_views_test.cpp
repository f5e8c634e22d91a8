// The inspector's views beyond the first wave (issue 17): the active-memory timeline, envelopes
// instead of a wall on long traces, the event list around the cursor, and scaling for HiDPI screens.
// Windowed tests under xvfb-run, like gui_test.cpp; each skips with a message when no display can
// be opened.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../import/torch_profiler_fixtures.hpp"
#include "app.hpp"
#include "gui_support.hpp"

namespace fragscope::gui {
namespace {

using namespace fragscope::gui::testing;

// Issue 17, memory_viz parity: "stack live allocations" draws the active-memory timeline. At the
// peak's column the bands lie bottom up as the model says (the rest, then each band live there in
// its colour, each at its byte rows), and the stack's top is the peak in use.
TEST(Inspector, TheActiveMemoryTimelineStacksTheLargestLiveAllocations) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "timeline", std::uint64_t{0}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  TimelinePanel& timeline = app->timeline();
  timeline.stacked = true;
  timeline.show_reserved = false;  // lines over the stack would hide its pixels
  timeline.show_load = false;
  Render(*app);
  timeline.WaitStack();
  Render(*app);
  const Frame frame(*app);
  const PixelRect plot = timeline.plot_rect();
  ASSERT_FALSE(plot.empty());
  const analysis::ActiveMemoryStack& stack = timeline.active_stack();
  ASSERT_EQ(stack.bands.size(), TimelinePanel::kBands);
  ASSERT_EQ(stack.column_event.size(), static_cast<std::size_t>(plot.x1 - plot.x0));
  const auto& model = *app->document()->model;
  EXPECT_EQ(stack.peak_in_use, model.Metrics(app->selection().device).peak_in_use);
  std::size_t peak_column = 0;
  while (stack.column_event[peak_column] != stack.peak_event) ++peak_column;
  const int x = plot.x0 + static_cast<int>(peak_column);
  ASSERT_NE(x, plot.x0) << "the cursor's column (event 0) is not the peak's";
  const auto row_of = [&](std::uint64_t bytes) { return RowOf(plot, timeline.y_max(), bytes); };
  std::uint64_t below = stack.Rest(peak_column);
  std::size_t checked = 0;
  if (row_of(0) - row_of(below) >= 3) {
    EXPECT_EQ(frame.At(x, (row_of(0) + row_of(below)) / 2), ToRgb(colours::kRestBand));
  }
  for (std::size_t b = 0; b < stack.bands.size(); ++b) {
    const analysis::ActiveBand& band = stack.bands[b];
    ASSERT_TRUE(band.LiveAfter(stack.peak_event)) << "every band is live at the peak";
    const int bottom = row_of(below), top = row_of(below + band.chunk.size);
    below += band.chunk.size;
    if (bottom - top < 3) continue;  // too thin to sample apart from its neighbours
    EXPECT_EQ(frame.At(x, (bottom + top) / 2), ToRgb(colours::Band(b))) << "band " << b;
    ++checked;
  }
  EXPECT_EQ(below, stack.peak_in_use);
  EXPECT_GE(checked, 2u);
  // The top of the stack is the peak's row: a band colour there, the background two rows above.
  const int top = row_of(stack.peak_in_use);
  EXPECT_NE(frame.At(x, top), ToRgb(colours::kBackground));
  EXPECT_EQ(frame.At(x, top - 2), ToRgb(colours::kBackground));
  // Off, the in-use curve is back and nothing is stacked.
  timeline.stacked = false;
  Render(*app);
  EXPECT_TRUE(timeline.active_stack().bands.empty());
  const Frame lines(*app);
  EXPECT_NE(lines.At(x, (row_of(0) + top) / 2), frame.At(x, (row_of(0) + top) / 2));
}

// Issue 17, item 6: zoomed out on 10 M events the timeline was a white wall (each column's LOAD
// spans whole steps, min to max, drawn solid). A wide span is an envelope now: dim inside, its max
// and min as lines.
TEST(Inspector, AWideColumnIsAnEnvelopeNotAWall) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "timeline", std::uint64_t{0}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  TimelinePanel& timeline = app->timeline();
  timeline.show_reserved = false;
  timeline.show_in_use = false;
  Render(*app);
  const Frame frame(*app);
  const PixelRect plot = timeline.plot_rect();
  const auto& model = *app->document()->model;
  const auto columns = static_cast<std::uint32_t>(plot.x1 - plot.x0);
  std::vector<std::uint64_t> lo, hi;
  model.Downsample(app->selection().device, analysis::Series::kLoad, 0, model.event_count(), columns, &lo, &hi);
  const auto row_of = [&](std::uint64_t bytes) { return RowOf(plot, timeline.y_max(), bytes); };
  int envelopes = 0;
  // The grid values' labels sit on dark boxes over the plot's first columns: sampled past them.
  constexpr std::uint32_t kPastTheLabels = 120;
  for (std::uint32_t c = kPastTheLabels; c + 1 < columns && envelopes < 20; ++c) {
    const int top = row_of(hi[c]), bottom = row_of(lo[c]);
    if (bottom - top < 12) continue;
    const int x = plot.x0 + static_cast<int>(c);
    if (x == timeline.plot_rect().x0) continue;  // the cursor's column
    ++envelopes;
    EXPECT_EQ(frame.At(x, top), ToRgb(colours::kLoad)) << "the max line, column " << c;
    EXPECT_EQ(frame.At(x, bottom), ToRgb(colours::kLoad)) << "the min line, column " << c;
    const Rgb inside = frame.At(x, (top + bottom) / 2);
    EXPECT_NE(inside, ToRgb(colours::kLoad)) << "not solid inside, column " << c;
    EXPECT_NE(inside, ToRgb(colours::kBackground)) << "but not empty either, column " << c;
  }
  EXPECT_GT(envelopes, 0) << "synth-small has columns that span a step";
}

// Issue 17, memory_viz parity: an event list around the cursor. Opened on synth-oom's first OOM, the
// list holds the device's events on both sides with the OOM's row the cursor's; each row's numbers
// are the model's.
TEST(Inspector, TheEventListShowsTheEventsAroundTheCursor) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-oom.fst", "events", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  Render(*app);
  const auto& model = *app->document()->model;
  const std::uint64_t cursor = app->selection().cursor;
  ASSERT_EQ(model.event(cursor).type, traces::EventType::kOom) << "opened on the first OOM";
  const EventListPanel& events = app->events();
  ASSERT_GE(events.cursor_row(), 0);
  EXPECT_EQ(events.rows()[static_cast<std::size_t>(events.cursor_row())].index, cursor);
  EXPECT_EQ(events.rows()[static_cast<std::size_t>(events.cursor_row())].what.rfind("OUT OF MEMORY", 0), 0u);
  EXPECT_EQ(static_cast<std::size_t>(events.cursor_row()), std::min<std::uint64_t>(cursor, EventListPanel::kAround));
  EXPECT_EQ(events.rows().size(), static_cast<std::size_t>(events.cursor_row()) + 1 +
                                      std::min<std::uint64_t>(model.event_count() - 1 - cursor, EventListPanel::kAround));
  for (std::size_t i = 0; i < events.rows().size(); i += 37) {
    const analysis::EventRow& row = events.rows()[i];
    EXPECT_EQ(row.in_use, model.ValueAt(app->selection().device, analysis::Series::kInUse, row.index)) << i;
    if (i > 0) {
      EXPECT_LT(events.rows()[i - 1].index, row.index);
    }
  }
  // The cursor moves: the list follows.
  app->SetCursor(cursor + 5);
  Render(*app);
  ASSERT_GE(events.cursor_row(), 0);
  EXPECT_EQ(events.rows()[static_cast<std::size_t>(events.cursor_row())].index, cursor + 5);
}

// Issue 17, item 4: a fixed 13 px font, no DPI scaling. `--scale` (or the monitor's content scale)
// sizes the font and the layout: at 2 the font is 26 px, the map's rows twice as tall, and the top
// bar's controls still inside a 1280x800 window.
TEST(Inspector, ScaleSizesTheFontAndTheLayout) {
  const auto open = [](float scale, std::string* skip) -> std::unique_ptr<App> {
    ViewOptions options;
    options.trace = kSamples + "synth-oom.fst";
    options.persist = false;
    options.width = 1280;
    options.height = 800;
    options.scale = scale;
    auto app = std::make_unique<App>(options);
    std::string error;
    if (!app->Init(&error)) {
      *skip = "no display (" + error + "); run under xvfb-run";
      return nullptr;
    }
    return app;
  };
  std::string skip;
  auto one = open(1, &skip);
  if (one == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(one->WaitLoaded(false));
  Render(*one);
  EXPECT_EQ(one->scale(), 1.0f);
  EXPECT_EQ(ImGui::GetFontSize(), 13.0f);
  const PixelRect button1 = one->compare_button();
  const int row1 = one->map().row_height();
  one.reset();

  auto two = open(2, &skip);
  ASSERT_NE(two, nullptr) << skip;
  ASSERT_TRUE(two->WaitLoaded(false));
  Render(*two);
  EXPECT_EQ(two->scale(), 2.0f);
  EXPECT_EQ(ImGui::GetFontSize(), 26.0f);
  EXPECT_EQ(two->map().row_height(), 2 * row1);
  const PixelRect button2 = two->compare_button();
  EXPECT_GE(button2.y1 - button2.y0, 2 * (button1.y1 - button1.y0) - 2) << "the button grew with the font";
  EXPECT_GE(button2.x0, 0);
  EXPECT_LE(button2.x1, 1280);
  EXPECT_LE(button2.y1, 800);
  two.reset();

  auto clamped = open(100, &skip);  // out of range: clamped, not a crash
  ASSERT_NE(clamped, nullptr) << skip;
  EXPECT_EQ(clamped->scale(), kMaxScale);
}

// DESIGN.md's "external fragmentation over time": the timeline draws it on its own 0..1 scale when
// asked, once the model's pass (a job, off the UI thread) has run. The columns are the model's, and
// each column's max is a line of the series' colour at its row.
TEST(Inspector, FragmentationOverTimeIsDrawnOnItsOwnScale) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "timeline", std::uint64_t{0}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  TimelinePanel& timeline = app->timeline();
  timeline.show_reserved = false;
  timeline.show_in_use = false;
  timeline.show_load = false;
  Render(*app);
  EXPECT_FALSE(timeline.fragmentation_drawn()) << "off by default";
  timeline.show_fragmentation = true;
  Render(*app);
  timeline.WaitFragmentation();
  Render(*app);
  ASSERT_TRUE(timeline.fragmentation_drawn());
  const Frame frame(*app);
  const PixelRect plot = timeline.plot_rect();
  const auto& model = *app->document()->model;
  const auto columns = static_cast<std::uint32_t>(plot.x1 - plot.x0);
  std::vector<float> lo, hi;
  model.DownsampleFragmentation(app->selection().device, 0, model.event_count(), columns, &lo, &hi);
  EXPECT_EQ(timeline.fragmentation_min(), lo);
  EXPECT_EQ(timeline.fragmentation_max(), hi);
  const auto row_of = [&](float f) { return static_cast<int>(std::round(plot.y1 - static_cast<double>(f) * (plot.y1 - plot.y0))); };
  // Every column's max is a line of its colour at its row (solid or the top of an envelope), but
  // where a marker line, the cursor or a label covers it.
  int checked = 0, matched = 0, raised = 0;
  for (std::uint32_t c = 120; c < columns; ++c) {  // past the grid labels' boxes
    const int top = row_of(hi[c]);
    if (top <= plot.y0 + 30 || top >= plot.y1 - 1) continue;  // the scale's label, the bottom row
    ++checked;
    matched += frame.At(plot.x0 + static_cast<int>(c), top) == ToRgb(colours::kFragmentation);
    raised += hi[c] > 0.05f;
  }
  EXPECT_GE(checked, 100);
  EXPECT_GE(matched * 10, checked * 9) << matched << " of " << checked;
  EXPECT_GE(raised, 1) << "synth-small fragments: the line is not flat at 0";
  timeline.show_fragmentation = false;
  Render(*app);
  EXPECT_FALSE(timeline.fragmentation_drawn());
}

// Evidence without reserved memory (a torch.profiler trace): reserved, holes and fragmentation are
// unknown, not 0: the fragmentation switch draws nothing there (its series would be a flat, false 0).
TEST(Inspector, EvidenceWithoutRegionsShowsNoFragmentation) {
  const std::string path = std::string(FRAGSCOPE_SOURCE_DIR) +
                           "/../shared/data/torch_profiler/kineto_resnet50_train_memevents.pt.trace.json.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent (the shared data lives next to the project)";
  std::string skip;
  auto app = OpenApp(path, "timeline", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  ASSERT_TRUE(app->document()->ReservedUnknown(app->selection().device));
  TimelinePanel& timeline = app->timeline();
  timeline.show_fragmentation = true;
  Render(*app);
  timeline.WaitFragmentation();
  Render(*app);
  EXPECT_FALSE(timeline.fragmentation_drawn());
  app.reset();  // one window at a time
  // A fragscope trace records its regions: known there.
  auto ours = OpenApp(kSamples + "synth-small.fst", "timeline", std::uint64_t{0}, &skip);
  ASSERT_NE(ours, nullptr) << skip;
  ASSERT_TRUE(ours->WaitLoaded(false));
  EXPECT_FALSE(ours->document()->ReservedUnknown(ours->selection().device));
}

// A torch.profiler trace's CPU device is PyTorch's host memory: the inspector's compare leaves it
// out of the replays, as `fragscope compare` does (it was replayed on a simulated GPU, a row of
// numbers no GPU policy means), and says so when that device is selected.
TEST(Inspector, CompareLeavesAProfilersHostMemoryOut) {
  using traces::profiler_fixtures::MemoryEvent;
  using traces::profiler_fixtures::Totals;
  const auto cuda = [](double ts, std::int64_t bytes, std::uint64_t addr, std::uint64_t allocated) {
    return MemoryEvent(ts, bytes, 1, 0, addr, "7", Totals{allocated, 8 * kMiB});
  };
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_compare_host.json").string();
  std::ofstream(path, std::ios::binary) << traces::profiler_fixtures::Trace(
      {cuda(10, kMiB, 0x100000, kMiB), MemoryEvent(15, 256, 0, -1, 0x9000), cuda(20, 2 * kMiB, 0x200000, 3 * kMiB),
       MemoryEvent(25, -256, 0, -1, 0x9000), cuda(30, -kMiB, 0x100000, 2 * kMiB)});
  std::string skip;
  auto app = OpenApp(path, "compare", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  app->compare().SetConfs("growth=on", "growth=off,preallocate=1");
  app->compare().Start(*app->document());
  app->compare().Wait();
  app->selection().device = 0;
  Render(*app);
  ASSERT_TRUE(app->compare().has_result()) << app->compare().error();
  const std::map<std::uint32_t, std::string> expected = {{1000000u, "pytorch host memory"}};
  EXPECT_EQ(app->compare().left_out_devices(), expected);
  EXPECT_EQ(app->compare().overhead_texts().size(), 3u);  // as recorded, A, B
  for (int side = 0; side < 2; ++side) EXPECT_EQ(app->compare().side_devices(side), std::vector<std::uint32_t>{0});
  app->selection().device = 1000000;
  Render(*app);
  EXPECT_EQ(app->compare().overhead_texts().size(), 1u);  // as recorded only: no replay of host memory
  app.reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fragscope::gui
