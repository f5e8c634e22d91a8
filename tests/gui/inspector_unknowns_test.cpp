// The inspector draws what the evidence does not tell as unknown: a cut dump's unlisted ranges, free
// memory where no region is recorded, a message's missing layout, a dump's missing requested sizes;
// a state as one moment (no events, no cursor, no ages); each device's OOMs and recorded limits on
// that device only; labels on the plot apart. Windowed tests under xvfb-run, like gui_test.cpp; each
// skips with a message when no display can be opened.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "gui_support.hpp"

namespace fragscope::gui {
namespace {

using namespace fragscope::gui::testing;

std::string TempPath(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

// A TensorFlow dump without its "ran out of memory" header whose chunk list is cut, in the shape of
// TensorFlow 2.x's lines: a 1 MiB region, four in-use chunks listed (2 KiB), no requested sizes, no
// Stats block. 1022 KiB of the region is not covered by a listed chunk.
std::string WriteCutDump() {
  const std::string path = TempPath("fragscope_gui_cut_dump.log");
  const std::string at = "I tensorflow/core/common_runtime/bfc_allocator.cc:1031] ";
  std::ofstream(path) << "I tensorflow/core/common_runtime/bfc_allocator.cc:1011] Next region of size 1048576\n"
                      << at << "InUse at f00950000 of size 1280 next 1\n"
                      << at << "InUse at f00950500 of size 256 next 2\n"
                      << at << "InUse at f00950600 of size 256 next 3\n"
                      << at << "InUse at f00950700 of size 256 next 4\n";
  return path;
}

// The cut dump's uncovered 1022 KiB were drawn green, counted as one free hole in the bins ("external
// fragmentation 0.00") and in the findings ("1021.00 KiB free in 1 hole(s)"), while `fragscope
// report` called them "not known to be free". Now: their own colour and legend, no bins, and the
// report's sentences.
TEST(InspectorUnknowns, ACutDumpDrawsItsUnlistedRangesAsUnknownNotFree) {
  const std::string path = WriteCutDump();
  std::string skip;
  auto app = OpenApp(path, "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(true)) << app->load_error();
  const Document& document = *app->document();
  ASSERT_EQ(document.kind, traces::EvidenceKind::kState);
  EXPECT_EQ(document.FreeMemoryAt(0, app->selection().cursor), Document::FreeMemory::kUnlisted);
  EXPECT_TRUE(document.RequestedUnknown(0, app->selection().cursor));
  Render(*app);

  // The map: no cell free, the unlisted range in its own colour.
  const MemoryMapPanel& map = app->map();
  const auto& cells = map.layout().cells;
  EXPECT_EQ(std::count_if(cells.begin(), cells.end(), [](const analysis::MapCell& c) { return c.kind == analysis::CellKind::kFree; }), 0);
  const auto unlisted = std::count_if(cells.begin(), cells.end(),
                                      [](const analysis::MapCell& c) { return c.kind == analysis::CellKind::kUnlisted; });
  EXPECT_GT(unlisted, static_cast<long>(cells.size()) * 9 / 10);  // 1022 of 1024 KiB
  const PixelRect canvas = map.canvas_rect();
  const int width = canvas.x1 - canvas.x0;
  const Frame frame(*app);
  int free_pixels = 0, unlisted_pixels = 0;
  for (int y = canvas.y0; y < canvas.y1; ++y) {
    for (int x = canvas.x0; x < canvas.x1; ++x) {
      free_pixels += frame.At(x, y) == ToRgb(colours::kFree);
      unlisted_pixels += frame.At(x, y) == ToRgb(colours::kUnlisted);
    }
  }
  EXPECT_EQ(free_pixels, 0);
  EXPECT_GT(unlisted_pixels, width * map.row_height());  // rows of it
  // The last cell's row, in the middle of the row height: not listed.
  const int last_row = static_cast<int>(cells.size() - 1) / width;
  EXPECT_EQ(frame.At(canvas.x1 - 1, canvas.y0 + last_row * map.row_pitch() + map.row_gap() + map.row_height() / 2),
            ToRgb(colours::kUnlisted));
  EXPECT_EQ(map.header(), "device 0, in the dump on line 1: 1 region(s) listed (1.00 MiB), in use at least 2.00 KiB, "
                          "LOAD unknown (the dump gives no requested sizes); 1022.00 KiB in 1 range(s) not listed in "
                          "the dump (its chunk list is cut: not known to be free)");

  // The bins: nothing counted as free.
  EXPECT_TRUE(app->histogram().buckets().empty());
  EXPECT_EQ(app->histogram().summary(), "free in regions unknown, largest hole unknown, external fragmentation unknown");

  // The findings in place of a timeline: the report's sentences.
  const std::vector<std::string> expected = {
      "device 0 (unknown TensorFlow allocator), in the dump on line 1",
      "in use at least 2.00 KiB, reserved at least 1.00 MiB, limit unknown",
      "listed (incomplete: what follows counts only what is listed): 1 region of 1.00 MiB, 4 live chunks of 2.00 KiB",
      "not covered by a listed chunk: 1022.00 KiB in 1 range, the largest 1022.00 KiB (the chunk list is cut: not "
      "known to be free)"};
  const std::vector<std::string>& lines = app->timeline().moment_lines();
  ASSERT_GE(lines.size(), expected.size() + 1);
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(lines[i], expected[i]) << i;
  EXPECT_EQ(lines[expected.size()].rfind("incomplete: the chunks listed cover 2.00 KiB of the 1.00 MiB", 0), 0u);

  // A state has no events to count or a cursor in them, nor ages and allocating events.
  EXPECT_EQ(app->toolbar().status().find("cursor"), std::string::npos) << app->toolbar().status();
  EXPECT_NE(app->toolbar().status().find("(TensorFlow BFC log, a state: one moment, loaded in"), std::string::npos)
      << app->toolbar().status();
  EXPECT_EQ(app->table().columns(), (std::vector<std::string>{"address", "size", "requested", "tag"}));
  EXPECT_EQ(app->table().row_count(), 4u);
  app.reset();

  // The events panel says what the evidence is instead of listing the events that lay it out.
  auto events = OpenApp(path, "events", std::nullopt, &skip);
  ASSERT_NE(events, nullptr);
  ASSERT_TRUE(events->WaitLoaded(false));
  Render(*events);
  EXPECT_TRUE(events->events().rows().empty());
  EXPECT_EQ(events->events().state_note(),
            "A state: 4 live blocks on device 0 at one moment (in the dump on line 1), not a history of events. The "
            "live table and the memory map show them.");
  std::filesystem::remove(path);
}

// A state's OOM panel gave "the trace recorded no fragscope configuration" as the reason for no
// minimal limit; the reason is that a state has no history. Its OOM has no event to go to.
TEST(InspectorUnknowns, AStatesOomSaysWhyThereIsNoMinimalLimit) {
  const std::string dump =
      (std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "tf" / "two_dumps_two_devices.log")
          .string();
  std::string skip;
  auto app = OpenApp(dump, "oom", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(true)) << app->load_error();
  EXPECT_EQ(app->document()->min_limit_error,
            "a state is one moment, not a history: the smallest limit needs the order in which memory was allocated "
            "and freed");
  app->selection().device = app->document()->states[1].device;
  Render(*app);
  EXPECT_EQ(app->oom().shown_oom(), 0u);
}

// An error message: the bins said "no free holes at the cursor" and "free in regions 0 B, largest
// hole 0 B, external fragmentation 0.00".
TEST(InspectorUnknowns, AMessagesBinsSayItHasNoLayout) {
  const std::string path = TempPath("fragscope_gui_bins_message.log");
  std::ofstream(path) << "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total "
                         "capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\n";
  std::string skip;
  auto app = OpenApp(path, "bins", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  Render(*app);
  EXPECT_TRUE(app->histogram().buckets().empty());
  EXPECT_EQ(app->histogram().canvas_note(), "an error message has numbers, no layout: no holes to sort into bins");
  EXPECT_EQ(app->histogram().summary(),
            "its free bytes and largest free block, where it gives them, are in the out-of-memory panel");
  EXPECT_EQ(app->toolbar().status().find("cursor"), std::string::npos) << app->toolbar().status();
  std::filesystem::remove(path);
}

// An RMM log (no regions): one 256 B allocation filled every row of the map, and the OOM panel said
// "(no free hole at that moment)" though nothing is known of free memory; the minimap was empty.
TEST(InspectorUnknowns, AnRmmLogDrawsItsAllocationsWithoutAReservedExtent) {
  const std::string path = TempPath("fragscope_gui_rmm_one_alloc.csv");
  std::ofstream(path) << "Thread,Time,Action,Pointer,Size,Stream\n"
                      << "7,10:00:00.000001,allocate,0x30a000000,256,0x2\n"
                      << "7,10:00:00.000002,allocate failure,0x0,85899345920,0x2\n"
                      << "7,10:00:00.000003,free,0x30a000000,256,0x2\n";
  std::string skip;
  auto app = OpenApp(path, "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(true)) << app->load_error();
  ASSERT_TRUE(app->document()->ReservedUnknown(0));
  ASSERT_EQ(app->document()->model->event(app->selection().cursor).type, traces::EventType::kOom);
  Render(*app);
  const analysis::MapLayout& layout = app->map().layout();
  const auto cells = static_cast<std::uint32_t>(layout.cells.size());
  EXPECT_EQ(layout.total_bytes, std::uint64_t{cells} * 256);
  EXPECT_EQ(std::count_if(layout.cells.begin(), layout.cells.end(),
                          [](const analysis::MapCell& c) { return c.kind == analysis::CellKind::kUsed; }),
            1);
  const Frame frame(*app);
  const PixelRect canvas = app->map().canvas_rect();
  int used_pixels = 0;
  for (int y = canvas.y0; y < canvas.y1; ++y) {
    for (int x = canvas.x0; x < canvas.x1; ++x) used_pixels += frame.At(x, y) == ToRgb(colours::kUsed);
  }
  EXPECT_EQ(used_pixels, app->map().row_height());  // one cell: a pixel wide, a row high
  EXPECT_EQ(app->oom().holes_note(), "(free holes unknown: the evidence records no regions)");
  EXPECT_EQ(app->timeline().minimap_note(), "in use (reserved unknown: no regions recorded)");
  std::filesystem::remove(path);
}

// Two virtual devices, 1 GiB and 200 MiB, device 1 out of memory under its 200 MiB: 100 MiB and
// 80 MiB live, a request of 60 MiB failed (the trace's last event). A marker near the end names the
// last stretch.
std::string WriteVirtualDevicesTrace() {
  const std::string path = TempPath("fragscope_gui_virtual_devices.fst");
  traces::Trace trace;
  trace.header.producer = "gui_test";
  trace.header.alloc_conf = "backing=sim,virtual_devices=1GiB+200MiB";
  trace.header.devices = {{0, "virtual 0", "sim", 80ull << 30, 1 << 30}, {1, "virtual 1", "sim", 80ull << 30, 200 * kMiB}};
  trace.tags = {"forward"};
  const auto add = [&](traces::EventType type, std::uint32_t device, std::uint64_t address, std::uint64_t size,
                       std::uint64_t region) {
    traces::Event& e = trace.events.emplace_back();
    e.type = type;
    e.device = device;
    e.seq = trace.events.size() - 1;
    e.time_ns = e.seq * 1000;
    e.address = address;
    e.size = size;
    if (type == traces::EventType::kAlloc) e.rounded = size, e.region = region, e.alloc_id = e.seq + 1;
    return &e;
  };
  add(traces::EventType::kRegionReserve, 0, 0x10000000, 64 * kMiB, 0);
  for (std::uint64_t i = 0; i < 16; ++i) add(traces::EventType::kAlloc, 0, 0x10000000 + i * 2 * kMiB, kMiB, 0x10000000);
  add(traces::EventType::kRegionReserve, 1, 0x40000000, 190 * kMiB, 0);
  add(traces::EventType::kAlloc, 1, 0x40000000, 100 * kMiB, 0x40000000);
  for (std::uint64_t i = 0; i < 16; ++i) add(traces::EventType::kFree, 0, 0x10000000 + i * 2 * kMiB, kMiB, 0);
  for (std::uint64_t i = 0; i < 4; ++i) add(traces::EventType::kAlloc, 0, 0x10000000 + i * 2 * kMiB, kMiB, 0x10000000);
  traces::Event* marker = add(traces::EventType::kMarker, 1, 0, 0, 0);
  marker->tag = 1;
  add(traces::EventType::kAlloc, 1, 0x40000000 + 100 * kMiB, 80 * kMiB, 0x40000000);
  traces::Event* oom = add(traces::EventType::kOom, 1, 0, 0, 0);
  oom->oom.request = oom->oom.rounded = 60 * kMiB;
  oom->oom.limit = 200 * kMiB;
  oom->oom.reserved = 190 * kMiB;
  oom->oom.in_use = oom->oom.live_requested = 180 * kMiB;
  oom->oom.free_in_regions = oom->oom.largest_free = 10 * kMiB;
  oom->oom.headroom = 10 * kMiB;
  oom->oom.cause = traces::OomCause::kCapacity;
  traces::WriteTrace(trace, path);
  return path;
}

// Device 1's OOM was drawn on device 0's timeline (a red line and triangle while the OOM panel said
// "No out-of-memory event on device 0"). Each device's plot draws its own OOMs.
TEST(InspectorUnknowns, EachDevicesTimelineDrawsItsOwnOomsOnly) {
  const std::string path = WriteVirtualDevicesTrace();
  std::string skip;
  auto app = OpenApp(path, "timeline", std::uint64_t{5}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  ASSERT_EQ(app->selection().device, 0u);
  ASSERT_EQ(app->document()->cursor_index.ooms().size(), 1u);
  Render(*app);
  EXPECT_TRUE(app->timeline().oom_columns().empty());
  const PixelRect plot = app->timeline().plot_rect();
  const Frame frame(*app);
  for (int x = plot.x0; x < plot.x1; ++x) EXPECT_NE(frame.At(x, plot.y1 - 2), ToRgb(colours::kOom)) << x;
  app->selection().device = 1;
  Render(*app);
  ASSERT_EQ(app->timeline().oom_columns().size(), 1u);
  const std::uint64_t oom_event = app->document()->cursor_index.ooms()[0];
  const double events = static_cast<double>(app->document()->model->event_count());
  EXPECT_EQ(app->timeline().oom_columns()[0],
            plot.x0 + static_cast<int>(std::floor(static_cast<double>(oom_event) / events * (plot.x1 - plot.x0))));
  std::filesystem::remove(path);
}

// Compare replayed device 1 of virtual_devices=1GiB+200MiB with no limit ("0 OOMs", no "(limit ...
// as recorded)"): each side that sets none runs on the recorded virtual devices, and says so.
TEST(InspectorUnknowns, CompareCarriesEachVirtualDevicesLimit) {
  const std::string path = WriteVirtualDevicesTrace();
  std::string skip;
  auto app = OpenApp(path, "compare", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  app->compare().SetConfs("growth=on", "growth=on,virtual_devices=1GiB+2GiB");
  app->compare().Start(*app->document());
  app->compare().Wait();
  Render(*app);
  ASSERT_TRUE(app->compare().has_result()) << app->compare().error();
  EXPECT_EQ(app->compare().side_label(0, 1), "growth=on (limit 200.00 MiB as recorded, virtual device 1 of 2)");
  EXPECT_EQ(app->compare().side_label(0, 0), "growth=on (limit 1.00 GiB as recorded, virtual device 0 of 2)");
  EXPECT_EQ(app->compare().side_recorded_limit(0, 1), 200 * kMiB);
  EXPECT_GT(app->compare().side_ooms(0), 0u);  // 100 + 80 + 60 MiB do not fit in 200 MiB
  EXPECT_EQ(app->compare().side_label(1, 1), "growth=on,virtual_devices=1GiB+2GiB");  // its own stand
  EXPECT_EQ(app->compare().side_ooms(1), 0u);
  std::filesystem::remove(path);
}

// At 1300x450 with fragmentation shown, "limit 200.00 MiB", "fragmentation 1" and the "forward"
// marker's name were written over one another at the top right. No label on the plot overlaps another.
TEST(InspectorUnknowns, PlotLabelsNeverOverlap) {
  const std::string path = WriteVirtualDevicesTrace();
  ViewOptions options;
  options.trace = path;
  options.panel = "timeline";
  options.persist = false;
  options.width = 1300;
  options.height = 450;
  options.fragmentation = true;
  options.at = 18;  // a device 1 event: the plot of device 1, whose limit is near the top
  App app(options);
  std::string error;
  if (!app.Init(&error)) GTEST_SKIP() << "no display (" << error << "); run under xvfb-run";
  ASSERT_TRUE(app.WaitLoaded(false)) << app.load_error();
  ASSERT_EQ(app.selection().device, 1u);
  app.Frame(false);
  app.timeline().WaitFragmentation();
  Render(app);
  ASSERT_TRUE(app.timeline().fragmentation_drawn());
  const auto& labels = app.timeline().plot_labels();
  std::vector<std::string> names;
  for (const auto& [name, rect] : labels) names.push_back(name);
  EXPECT_NE(std::find(names.begin(), names.end(), "limit 200.00 MiB"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "fragmentation 1"), names.end());
  const PixelRect plot = app.timeline().plot_rect();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const PixelRect& a = labels[i].second;
    EXPECT_GE(a.x0, plot.x0) << labels[i].first;
    EXPECT_LE(a.x1, plot.x1) << labels[i].first;
    for (std::size_t j = i + 1; j < labels.size(); ++j) {
      const PixelRect& b = labels[j].second;
      EXPECT_FALSE(a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1)
          << labels[i].first << " overlaps " << labels[j].first;
    }
  }
  // The limit's name is beside its line: just above or just below it.
  const auto limit = std::find(names.begin(), names.end(), "limit 200.00 MiB") - names.begin();
  const PixelRect& limit_rect = labels[static_cast<std::size_t>(limit)].second;
  const int row = app.timeline().limit_row();
  EXPECT_TRUE(limit_rect.y1 <= row + 1 || limit_rect.y0 >= row) << limit_rect.y0 << " " << row;
  EXPECT_LE(std::min(std::abs(limit_rect.y1 - row), std::abs(limit_rect.y0 - row)), 3);
  std::filesystem::remove(path);
}

// `view --at 99999999` was clamped to the last event without a word.
TEST(InspectorUnknowns, ACursorPastTheLastEventIsWarnedAbout) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-oom.fst", "timeline", std::uint64_t{99999999}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  const std::uint64_t last = app->document()->model->event_count() - 1;
  EXPECT_EQ(app->selection().cursor, last);
  const auto& warnings = app->document()->warnings;
  const std::string expected =
      "--at 99999999: past the last event (" + std::to_string(last) + "): the cursor is at event " + std::to_string(last);
  EXPECT_NE(std::find(warnings.begin(), warnings.end(), expected), warnings.end());
}

}  // namespace
}  // namespace fragscope::gui
