// The inspector tells the truth at a glance (issue 17): the device that ran out of memory, a state
// as a moment, an error message explained, compare under the recorded limit, controls that stay in
// the window, the limit line, the reconstructed start of a snapshot, bin labels apart. Windowed
// tests under xvfb-run, like gui_test.cpp; each skips with a message when no display can be opened.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "app.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "gui_support.hpp"

namespace fragscope::gui {
namespace {

using namespace fragscope::gui::testing;

// Issue 17, item 3: synth-oom ran out of memory 29 times under a 2 GiB limit; compared under
// "growth=on" and "expandable=on" without it, both sides showed 0 OOMs. A side that sets no limit
// now replays under the recorded one, and says so.
TEST(Inspector, CompareKeepsTheRecordedLimitAndRefusesAState) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-oom.fst", "compare", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  app->compare().SetConfs("growth=on", "growth=on,limit=4GiB");
  app->compare().Start(*app->document());
  app->compare().Wait();
  Render(*app);
  ASSERT_TRUE(app->compare().has_result()) << app->compare().error();
  EXPECT_EQ(app->compare().side_label(0), "growth=on (limit 2.00 GiB as recorded)");
  EXPECT_GT(app->compare().side_ooms(0), 0u);
  EXPECT_EQ(app->compare().side_label(1), "growth=on,limit=4GiB");  // its own limit stands
  EXPECT_EQ(app->compare().side_ooms(1), 0u);
  app.reset();  // one window (one ImGui context) at a time

  auto state = OpenApp((std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "tf" /
                        "two_dumps_two_devices.log").string(),
                       "compare", std::nullopt, &skip);
  ASSERT_NE(state, nullptr);
  ASSERT_TRUE(state->WaitLoaded(false));
  state->compare().Start(*state->document());
  EXPECT_FALSE(state->compare().running());
  EXPECT_NE(state->compare().error().find("a state is one moment"), std::string::npos) << state->compare().error();
  // Headless, that is what compare says of a state, not a failure: the screenshot run exits 0.
  const std::string png = (std::filesystem::temp_directory_path() / "fragscope_state_compare.png").string();
  EXPECT_EQ(state->RunScreenshot(png), 0);
  EXPECT_TRUE(std::filesystem::exists(png));
  std::filesystem::remove(png);
}

// Issue 17, item 4: with a long path the "compare..." button fell off the top bar (7 of 8 real files
// at 1600x1000, all at 1280x800). It is drawn before the status text now; checked with a path of
// more than 200 characters in a 1200x800 window.
TEST(Inspector, TopBarControlsStayInsideTheWindowWithALongPath) {
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 0; i < 4; ++i) dir /= std::string(48, static_cast<char>('a' + i));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "a_trace_with_a_long_name.fst").string();
  ASSERT_GT(path.size(), 200u);
  std::filesystem::copy_file(kSamples + "synth-oom.fst", path, std::filesystem::copy_options::overwrite_existing);
  std::string skip;
  auto app = OpenApp(path, "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  Render(*app);
  const PixelRect button = app->compare_button();
  EXPECT_FALSE(button.empty());
  EXPECT_GE(button.x0, 0);
  EXPECT_LE(button.x1, 1200);
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / std::string(48, 'a'));
}

// Issue 17, item 6: the plot had one y label (at 110 % of the peak, which read like a limit) and no
// limit line. synth-oom ran under a 2 GiB limit: a line in the limit's colour at its pixel row.
TEST(Inspector, TheLimitIsDrawnAtItsRow) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-oom.fst", "timeline", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  Render(*app);
  const PixelRect plot = app->timeline().plot_rect();
  const int row = app->timeline().limit_row();
  ASSERT_GE(row, plot.y0);
  ASSERT_LT(row, plot.y1);
  const double limit = 2.0 * 1024 * 1024 * 1024;
  const double expected = plot.y1 - limit / static_cast<double>(app->timeline().y_max()) * (plot.y1 - plot.y0);
  EXPECT_NEAR(row, expected, 1.0);
  const Frame frame(*app);
  int on_line = 0;
  for (int x = plot.x0; x < plot.x1; ++x) on_line += frame.At(x, row) == ToRgb(colours::kLimit);
  EXPECT_GT(on_line, (plot.x1 - plot.x0) / 2);  // across the plot, but where OOM lines cross it
}

// Issue 17, item 2: the ~1,350 reconstructed events at the start of a snapshot whose blocks predate
// recording read as a ramp the program made. That stretch is shaded and named.
TEST(Inspector, TheReconstructedStartOfASnapshotIsMarked) {
  const std::string snapshot = std::string(FRAGSCOPE_SOURCE_DIR) + "/../shared/data/torch/pt_eor_cnn_counterfactuals.pickle";
  if (!std::filesystem::exists(snapshot)) GTEST_SKIP() << snapshot << " is absent: no PyTorch snapshot";
  std::string skip;
  auto app = OpenApp(snapshot, "timeline", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  EXPECT_EQ(app->document()->model->header().source.reconstructed_events, 34u);
  Render(*app);
  const PixelRect shaded = app->timeline().reconstructed_rect();
  const PixelRect plot = app->timeline().plot_rect();
  ASSERT_FALSE(shaded.empty());
  EXPECT_EQ(shaded.x0, plot.x0);  // from the first event
  // 34 of 5,837 events: under 1 % of the width, but at least a pixel.
  EXPECT_LE(shaded.x1 - shaded.x0, (plot.x1 - plot.x0) / 100 + 2);
}

// Issue 17, item 4: bin labels ran together ("256.00 KiB1.00 MiB"). In a narrow bins window every
// label written is clear of the next one and inside the canvas.
TEST(Inspector, BinLabelsNeverOverlap) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-oom.fst", "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  Render(*app);
  const auto& labels = app->histogram().label_rects();
  ASSERT_GE(labels.size(), 2u);
  // The first bar holds every hole below the second's lower bound (512 B), and says so.
  ASSERT_EQ(app->histogram().label_texts().size(), labels.size());
  EXPECT_EQ(app->histogram().label_texts().front(), "< 512 B");
  const PixelRect canvas = app->histogram().canvas_rect();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    EXPECT_LE(labels[i].x1, canvas.x1) << i;
    if (i > 0) {
      EXPECT_GT(labels[i].x0, labels[i - 1].x1) << i;
    }
  }
}

// Issue 17, item 6: PyTorch's annotations (AdamW step START/END) and other markers were read but
// not drawn. Each is a line at its event's column, named at the top where the name fits; step
// markers stay ticks; the hover tooltip names a marker whose name did not fit.
TEST(Inspector, MarkersAndAnnotationsAreDrawnAndNamed) {
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_gui_markers.fst").string();
  {
    traces::Trace trace;
    trace.header.producer = "gui_test";
    trace.header.devices = {{0, "gpu 0", "sim", 1 << 30, 1 << 30}};
    trace.tags = {"annotation: START AdamW.step", "annotation: END AdamW.step", "step 1 begin"};
    const auto add = [&](traces::EventType type, std::uint64_t address, std::uint64_t size, traces::TagId tag) {
      AddEvent(trace, type, address, size, tag);
    };
    add(traces::EventType::kRegionReserve, 0x10000000, 64 << 20, 0);
    for (std::uint64_t i = 0; i < 40; ++i) {
      if (i == 10) add(traces::EventType::kMarker, 0, 0, 3);  // step 1 begin: a tick
      if (i == 20) add(traces::EventType::kMarker, 0, 0, 1);  // START
      if (i == 30) add(traces::EventType::kMarker, 0, 0, 2);  // END
      add(traces::EventType::kAlloc, 0x10000000 + i * (1 << 20), 1 << 20, 0);
    }
    traces::WriteTrace(trace, path);
  }
  std::string skip;
  auto app = OpenApp(path, "timeline", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  ASSERT_EQ(app->document()->model->markers().size(), 3u);
  Render(*app);
  const TimelinePanel& timeline = app->timeline();
  ASSERT_EQ(timeline.marker_columns().size(), 2u) << "the step marker is a tick, not a line";
  EXPECT_EQ(timeline.marker_labels(), (std::vector<std::string>{"annotation: START AdamW.step", "annotation: END AdamW.step"}));
  const PixelRect plot = timeline.plot_rect();
  const auto events = static_cast<double>(app->document()->model->event_count());
  const Frame frame(*app);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::uint64_t event = app->document()->model->markers()[i + 1].event_index;
    const int expected = plot.x0 + static_cast<int>(std::floor(static_cast<double>(event) / events * (plot.x1 - plot.x0)));
    EXPECT_EQ(timeline.marker_columns()[i], expected) << i;
    // The line is in the marker colour below the names, where no series is drawn (the top third).
    EXPECT_EQ(frame.At(timeline.marker_columns()[i], plot.y0 + 40), ToRgb(colours::kMarker)) << i;
    const PixelRect label = timeline.marker_label_rects()[i];
    EXPECT_GE(label.x0, plot.x0);
    EXPECT_LE(label.x1, plot.x1);
    if (i > 0) {
      EXPECT_GT(label.x0, timeline.marker_label_rects()[i - 1].x1) << "names never overlap";
    }
  }
  std::filesystem::remove(path);
}

// A PyTorch snapshot logs free_requested before each free: kept as markers, never drawn as
// annotations (on the cs336 snapshot they walled the plot in). Annotations denser than one per
// 12 px become ticks along the top until a zoom spreads them.
TEST(Inspector, DenseMarkersAreTicksAndAllocatorActionsAreNotDrawn) {
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_gui_dense_markers.fst").string();
  {
    traces::Trace trace;
    trace.header.producer = "gui_test";
    trace.header.devices = {{0, "gpu 0", "sim", 1 << 30, 1 << 30}};
    trace.tags = {"free_requested", "annotation: layer"};
    const auto add = [&](traces::EventType type, std::uint64_t address, std::uint64_t size, traces::TagId tag) {
      AddEvent(trace, type, address, size, tag);
    };
    add(traces::EventType::kRegionReserve, 0x10000000, 64 << 20, 0);
    for (std::uint64_t i = 0; i < 400; ++i) {
      add(traces::EventType::kAlloc, 0x10000000, 1 << 20, 0);
      add(traces::EventType::kMarker, 0, 0, 1);  // free_requested
      add(traces::EventType::kFree, 0x10000000, 1 << 20, 0);
      if (i % 2 == 0) add(traces::EventType::kMarker, 0, 0, 2);  // 200 annotations
    }
    traces::WriteTrace(trace, path);
  }
  std::string skip;
  auto app = OpenApp(path, "timeline", std::uint64_t{0}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  ASSERT_EQ(app->document()->model->markers().size(), 600u);
  Render(*app);
  const TimelinePanel& timeline = app->timeline();
  const PixelRect plot = timeline.plot_rect();
  EXPECT_EQ(timeline.marker_columns().size(), 200u) << "one column per annotation, none for free_requested";
  EXPECT_TRUE(timeline.markers_dense());
  EXPECT_TRUE(timeline.marker_labels().empty());
  const Frame frame(*app);
  const int x = timeline.marker_columns()[100];
  EXPECT_EQ(frame.At(x, plot.y0 + 2), ToRgb(colours::kMarker)) << "a tick at the top";
  EXPECT_NE(frame.At(x, plot.y0 + 40), ToRgb(colours::kMarker)) << "no line through the plot";
  // Zoomed in on 40 events, a handful of annotations: lines with names again.
  app->selection().view = {600, 640};
  Render(*app);
  EXPECT_FALSE(timeline.markers_dense());
  EXPECT_GE(timeline.marker_columns().size(), 5u);
  EXPECT_FALSE(timeline.marker_labels().empty());
  const Frame zoomed(*app);
  EXPECT_EQ(zoomed.At(timeline.marker_columns()[0], plot.y0 + 40), ToRgb(colours::kMarker));
  std::filesystem::remove(path);
}

// Zoomed out, a pixel column keeps at most four annotation names for its tooltip and skips the
// rest of its annotations (visiting every one of millions each frame cost a millisecond): the
// columns drawn and the names kept are still exactly those of a walk over every annotation.
TEST(Inspector, ManyAnnotationsPerColumnAreDrawnOncePerColumnWithTheirFirstNames) {
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_gui_many_markers.fst").string();
  constexpr std::uint64_t kAnnotations = 20'000;
  std::vector<std::uint64_t> annotation_events;
  {
    traces::Trace trace;
    trace.header.producer = "gui_test";
    trace.header.devices = {{0, "gpu 0", "sim", 1 << 30, 1 << 30}};
    trace.tags = {"free_requested"};
    for (std::uint64_t i = 0; i < kAnnotations; ++i) trace.tags.push_back(fmt::format("annotation: {}", i));
    AddEvent(trace, traces::EventType::kRegionReserve, 0x10000000, 64 << 20, 0);
    for (std::uint64_t i = 0; i < kAnnotations; ++i) {
      AddEvent(trace, traces::EventType::kAlloc, 0x10000000, 1 << 20, 0);
      if (i % 3 == 0) AddEvent(trace, traces::EventType::kMarker, 0, 0, 1);  // free_requested: not drawn
      AddEvent(trace, traces::EventType::kFree, 0x10000000, 1 << 20, 0);
      annotation_events.push_back(trace.events.size());
      AddEvent(trace, traces::EventType::kMarker, 0, 0, static_cast<traces::TagId>(2 + i));
    }
    traces::WriteTrace(trace, path);
  }
  std::string skip;
  auto app = OpenApp(path, "timeline", std::uint64_t{0}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  Render(*app);
  const TimelinePanel& timeline = app->timeline();
  const PixelRect plot = timeline.plot_rect();
  const int width = plot.x1 - plot.x0;
  const auto n = static_cast<double>(app->document()->model->event_count());
  // The walk over every annotation: its pixel column, and the first four names of each column.
  std::vector<int> columns;
  std::map<int, std::vector<std::string>> names;
  for (std::uint64_t i = 0; i < kAnnotations; ++i) {
    const int x = plot.x0 + static_cast<int>(std::floor(static_cast<double>(annotation_events[i]) / n * width));
    if (columns.empty() || columns.back() != x) columns.push_back(x);
    if (names[x].size() < 4) names[x].push_back(fmt::format("annotation: {}", i));
  }
  ASSERT_GT(kAnnotations / columns.size(), 10u) << "the test needs many annotations per column";
  EXPECT_EQ(timeline.marker_columns(), columns);
  EXPECT_TRUE(timeline.markers_dense());
  for (const int x : {columns.front(), columns[columns.size() / 2], columns.back()}) {
    // MarkersNear looks 3 px either side: the names of up to seven columns, the first eight kept.
    std::vector<std::string> expected;
    for (int c = x - 3; c <= x + 3; ++c) {
      for (const std::string& name : names[c]) {
        if (expected.size() < 8) expected.push_back(name);
      }
    }
    EXPECT_EQ(timeline.MarkersNear(static_cast<float>(x)), expected) << "column " << x;
  }
  std::filesystem::remove(path);
}

// Issue 17, item 1: a trace whose device 1 ran out of memory opened on device 0, whose OOM panel
// then said "No out-of-memory event on device 0". It opens on the device of the first OOM.
TEST(Inspector, OpensOnTheDeviceThatRanOutOfMemory) {
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_gui_oom_dev1.fst").string();
  {
    traces::Trace trace;
    trace.header.producer = "gui_test";
    trace.header.devices = {{0, "gpu 0", "sim", 1 << 30, 1 << 30}, {1, "gpu 1", "sim", 1 << 30, 1 << 30}};
    const auto add = [&](traces::EventType type, std::uint32_t device, std::uint64_t address, std::uint64_t size) {
      traces::Event& e = trace.events.emplace_back();
      e.type = type;
      e.device = device;
      e.seq = trace.events.size() - 1;
      e.address = address;
      e.size = size;
      if (type == traces::EventType::kAlloc) e.rounded = size, e.region = address, e.alloc_id = e.seq + 1;
      return &e;
    };
    add(traces::EventType::kRegionReserve, 0, 0x10000000, 8 << 20);
    add(traces::EventType::kAlloc, 0, 0x10000000, 4 << 20);
    add(traces::EventType::kRegionReserve, 1, 0x20000000, 8 << 20);
    add(traces::EventType::kAlloc, 1, 0x20000000, 6 << 20);
    traces::Event* oom = add(traces::EventType::kOom, 1, 0, 0);
    oom->oom.request = oom->oom.rounded = 4 << 20;
    oom->oom.limit = oom->oom.reserved = 8 << 20;
    oom->oom.in_use = oom->oom.live_requested = 6 << 20;
    oom->oom.free_in_regions = oom->oom.largest_free = 2 << 20;
    oom->oom.cause = traces::OomCause::kCapacity;
    add(traces::EventType::kAlloc, 0, 0x10400000, 1 << 20);
    traces::WriteTrace(trace, path);
  }
  std::string skip;
  auto app = OpenApp(path, "oom", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  EXPECT_EQ(app->selection().device, 1u);
  EXPECT_EQ(app->selection().cursor, 4u);
  Render(*app);
  EXPECT_EQ(app->oom().shown_oom(), 0u);  // the panel explains device 1's OOM
  std::filesystem::remove(path);
}

// Issue 17, item 2: a state (a TensorFlow dump) was drawn as a timeline of the events it is laid out
// as — a ramp that never happened. It shows the moment's findings instead, and no plot.
TEST(Inspector, AStateIsShownAsAMomentNotATimeline) {
  const std::string dump =
      (std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "tf" / "two_dumps_two_devices.log")
          .string();
  std::string skip;
  auto app = OpenApp(dump, "timeline", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  EXPECT_EQ(app->document()->kind, traces::EvidenceKind::kState);
  ASSERT_EQ(app->document()->states.size(), 2u);  // one dump per device
  EXPECT_EQ(app->document()->states[1].moment, "at the OOM on line 48");
  Render(*app);
  EXPECT_TRUE(app->timeline().drew_moment());
  EXPECT_TRUE(app->timeline().plot_rect().empty());  // no plot of invented time
}

TEST(Inspector, OomPanelExplainsAnErrorMessageAsTheReportDoes) {
  // A PyTorch message: R 20 MiB, T 1.96 GiB, A 1.24 GiB, F 2.88 MiB, Rv 1.25 GiB: F + U = 13.1 MiB
  // is less than R, so capacity (the corpus's file 14 has the same numbers).
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_gui_message.log").string();
  std::ofstream(path) << "epoch 3\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB "
                         "total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by "
                         "PyTorch)\n";
  std::string skip;
  auto app = OpenApp(path, "oom", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(true)) << app->load_error();
  ASSERT_EQ(app->document()->messages.size(), 1u);
  const auto& diagnosis = app->document()->messages[0].diagnosis;
  EXPECT_EQ(diagnosis.cause, traces::OomCause::kCapacity);
  EXPECT_FALSE(diagnosis.arithmetic.empty());
  EXPECT_FALSE(diagnosis.advice.empty());
  Render(*app);
  EXPECT_EQ(app->oom().messages_drawn(), 1u);
  EXPECT_EQ(app->oom().shown_oom(), static_cast<std::size_t>(-1));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fragscope::gui
