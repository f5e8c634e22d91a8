// The inspector window, rendered and read back pixel by pixel (run under xvfb-run by ctest). Each
// test skips with a message when no display can be opened.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdlib.h>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app.hpp"
#include "gui_support.hpp"
#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/synth.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace fragscope::gui {
namespace {

using namespace fragscope::gui::testing;  // the shared helpers (gui_support.hpp)

// A trace whose one 64 MiB region has free holes at [8, 16) MiB and [40, 44) MiB and a 256-byte
// hole at 60 MiB; everything else is allocated.
std::string WriteHoleTrace() {
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_gui_holes.fst").string();
  traces::TraceHeader header;
  header.producer = "gui_test";
  header.alloc_conf = "backing=sim,capacity=1GiB";
  traces::TraceWriter writer(path, header);
  const std::uint64_t base = std::uint64_t{1} << 32;
  traces::Event region{traces::EventType::kRegionReserve};
  region.address = base;
  region.size = 64 * kMiB;
  writer.Record(region);
  struct Piece {
    std::uint64_t offset, size;
    bool freed;
  };
  const std::vector<Piece> pieces = {{0, 8 * kMiB, false},          {8 * kMiB, 8 * kMiB, true},
                                     {16 * kMiB, 24 * kMiB, false}, {40 * kMiB, 4 * kMiB, true},
                                     {44 * kMiB, 16 * kMiB, false}, {60 * kMiB, 256, true},
                                     {60 * kMiB + 256, 4 * kMiB - 256, false}};
  const traces::TagId tag = writer.Intern("tensor");
  std::uint64_t id = 1;
  for (const Piece& p : pieces) {
    traces::Event alloc{traces::EventType::kAlloc};
    alloc.address = base + p.offset;
    alloc.size = alloc.rounded = p.size;
    alloc.region = base;
    alloc.alloc_id = id++;
    alloc.tag = tag;
    writer.Record(alloc);
  }
  id = 1;
  for (const Piece& p : pieces) {
    const std::uint64_t this_id = id++;
    if (!p.freed) continue;
    traces::Event free{traces::EventType::kFree};
    free.address = base + p.offset;
    free.size = free.rounded = p.size;
    free.alloc_id = this_id;
    writer.Record(free);
  }
  writer.Close();
  return path;
}

TEST(Inspector, MemoryMapShowsTheFreeColourExactlyOverTheHoles) {
  std::string skip;
  const std::string trace = WriteHoleTrace();
  auto app = OpenApp(trace, "map", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(true)) << app->load_error();
  app->SetCursor(app->document()->model->event_count() - 1);
  Render(*app);
  const Frame frame(*app);
  const PixelRect rect = app->map().canvas_rect();
  ASSERT_FALSE(rect.empty());
  const int width = rect.x1 - rect.x0;
  const int rows = (rect.y1 - rect.y0) / app->map().row_pitch();
  ASSERT_GE(rows, 1);
  const double total = 64.0 * kMiB;
  const double per_cell = total / (static_cast<double>(width) * rows);
  const Rgb free_colour = ToRgb(colours::kFree);
  auto in_hole = [](double a, double b) {  // [a, b) entirely inside a hole / entirely outside all
    const double holes[3][2] = {{8.0 * kMiB, 16.0 * kMiB}, {40.0 * kMiB, 44.0 * kMiB}, {60.0 * kMiB, 60.0 * kMiB + 256}};
    int inside = 0, touching = 0;
    for (const auto& h : holes) {
      if (a >= h[0] && b <= h[1]) ++inside;
      if (a < h[1] && b > h[0]) ++touching;
    }
    return inside > 0 ? 1 : touching > 0 ? 0 : -1;  // 1 inside, -1 outside, 0 straddles an edge
  };
  int free_pixels = 0, checked = 0;
  bool tiny_hole_seen = false;
  for (int r = 0; r < rows; ++r) {
    const int y = rect.y0 + r * app->map().row_pitch() + app->map().row_gap() + app->map().row_height() / 2;
    for (int x = 0; x < width; ++x) {
      const double cell = static_cast<double>(r) * width + x;
      const int where = in_hole(cell * per_cell, (cell + 1) * per_cell);
      const bool is_free = frame.At(rect.x0 + x, y) == free_colour;
      free_pixels += is_free;
      if (where == 1) {
        EXPECT_TRUE(is_free) << "row " << r << " column " << x << " lies in a hole";
        ++checked;
      } else if (where == -1) {
        EXPECT_FALSE(is_free) << "row " << r << " column " << x << " is allocated";
        ++checked;
      } else if (is_free && cell * per_cell <= 60.0 * kMiB && (cell + 1) * per_cell > 60.0 * kMiB + 256) {
        tiny_hole_seen = true;
      }
    }
  }
  EXPECT_GT(checked, width * rows - 8);
  EXPECT_TRUE(tiny_hole_seen) << "the 256-byte hole must keep its pixel";
  // 12 MiB of 64 MiB is free: about 3/16 of the cells, plus the tiny hole's one.
  EXPECT_NEAR(free_pixels, width * rows * 12.0 / 64.0, 4);
}

TEST(Inspector, TimelinesHighestPointIsThePeak) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "timeline", std::uint64_t{0}, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false)) << app->load_error();
  Render(*app);
  const Frame frame(*app);
  const PixelRect plot = app->timeline().plot_rect();
  ASSERT_FALSE(plot.empty());
  const Rgb series[3] = {ToRgb(colours::kReserved), ToRgb(colours::kInUse), ToRgb(colours::kLoad)};
  int top = -1, top_x = -1;
  for (int y = plot.y0; y < plot.y1 && top < 0; ++y) {
    for (int x = plot.x0 + 1; x < plot.x1; ++x) {
      const Rgb p = frame.At(x, y);
      if (p == series[0] || p == series[1] || p == series[2]) {
        top = y;
        top_x = x;
        break;
      }
    }
  }
  ASSERT_GE(top, 0) << "no series drawn";
  const auto metrics = app->document()->model->Metrics(app->selection().device);
  const double expected = plot.y1 - static_cast<double>(metrics.peak_reserved) /
                                        static_cast<double>(app->timeline().y_max()) * (plot.y1 - plot.y0);
  EXPECT_NEAR(top, expected, 1.0);
  EXPECT_EQ(frame.At(top_x, top), series[0]) << "the highest point is reserved's";
  // And it is drawn where the peak happens: the peak event's column.
  const auto n = static_cast<double>(app->document()->model->event_count());
  std::uint64_t peak_event = 0;
  for (std::uint64_t i = 0; i < app->document()->model->event_count(); ++i) {
    if (app->document()->model->ValueAt(0, analysis::Series::kReserved, i) == metrics.peak_reserved) {
      peak_event = i;
      break;
    }
  }
  const double peak_x = plot.x0 + std::floor(static_cast<double>(peak_event) / n * (plot.x1 - plot.x0));
  EXPECT_LE(peak_x - 1, top_x + 0.0);  // the reserved line stays at its peak from there on or later

  // With x by time the highest point is still the peak.
  app->selection().time_axis = true;
  Render(*app);
  const Frame by_time(*app);
  int time_top = -1;
  for (int y = plot.y0; y < plot.y1 && time_top < 0; ++y) {
    for (int x = plot.x0 + 1; x < plot.x1; ++x) {
      const Rgb p = by_time.At(x, y);
      if (p == series[0] || p == series[1] || p == series[2]) {
        time_top = y;
        break;
      }
    }
  }
  EXPECT_NEAR(time_top, expected, 1.0);
}

TEST(Inspector, OomPanelExplainsTheOomAndDrawsTheRequestAgainstTheHoles) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-oom.fst", "oom", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(true)) << app->load_error();
  const auto& ooms = app->document()->OomsOf(app->selection().device);
  ASSERT_FALSE(ooms.empty());
  EXPECT_EQ(app->selection().cursor, ooms.front().event_index);  // opens at the first OOM
  Render(*app);
  ASSERT_EQ(app->oom().shown_oom(), 0u);
  const PixelRect bars = app->oom().bars_rect();
  ASSERT_FALSE(bars.empty());
  const Frame frame(*app);
  int request = 0, holes = 0;
  for (int y = bars.y0; y < bars.y1; ++y) {
    for (int x = bars.x0; x < bars.x1; ++x) {
      request += frame.At(x, y) == ToRgb(colours::kRequest);
      holes += frame.At(x, y) == ToRgb(colours::kFree);
    }
  }
  EXPECT_GT(request, 0);
  if (!ooms.front().nearest_holes.empty()) {
    EXPECT_GT(holes, 0);
  }
  // The background job diagnoses from what the load kept (no second read): the same minimal limit
  // that `fragscope report synth-oom.fst` gives, 2434793472 bytes (growth=on, TensorFlow's rule).
  ASSERT_TRUE(app->document()->min_limit.has_value()) << app->document()->min_limit_error;
  EXPECT_EQ(*app->document()->min_limit, 2434793472u);
  EXPECT_EQ(ooms.front().min_limit, std::optional<std::uint64_t>(2434793472u));
  // The free advice was checked by replay: paging (expandable=on) meets no OOM on this trace at
  // the same limit, so it comes first.
  const std::string& suggestion = ooms.front().report.suggestion;
  EXPECT_EQ(suggestion.find("try expandable=on"), 0u) << suggestion;
  EXPECT_EQ(suggestion.find("checked by replay"), std::string::npos) << suggestion;
}

TEST(Inspector, ABadFileShowsAnErrorAndTheWindowGoesOn) {
  std::string skip;
  const std::string bad = (std::filesystem::temp_directory_path() / "fragscope_gui_bad.txt").string();
  std::ofstream(bad) << "this is not a trace\n";
  auto app = OpenApp(bad, "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  EXPECT_FALSE(app->WaitLoaded(false));
  EXPECT_NE(app->load_error().find("unknown format"), std::string::npos) << app->load_error();
  Render(*app);  // draws the error and the welcome box
  app->Open(kSamples + "synth-small.fst");
  EXPECT_TRUE(app->WaitLoaded(false));
  EXPECT_TRUE(app->load_error().empty());
  Render(*app);
}

// A damaged input never opens looking whole: the reader's warnings are counted in an amber badge in
// the top bar, and listed on click.
TEST(Inspector, ATruncatedTraceShowsItsWarnings) {
  std::string skip;
  const std::string clean = kSamples + "synth-small.fst";
  const std::string cut = (std::filesystem::temp_directory_path() / "fragscope_gui_cut.fst").string();
  std::filesystem::copy_file(clean, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(clean) * 6 / 10);
  auto app = OpenApp(cut, "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  const auto& warnings = app->document()->warnings;
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("fragscope_gui_cut.fst"), std::string::npos) << warnings.front();
  Render(*app);
  const ImVec2 min = app->warnings().badge_min(), max = app->warnings().badge_max();
  ASSERT_GT(max.x - min.x, 20.f) << "no warnings badge drawn";
  const Frame frame(*app);
  const Rgb inside = frame.At(static_cast<int>(min.x) + 2, static_cast<int>((min.y + max.y) / 2));
  EXPECT_EQ(inside, (Rgb{230, 160, 20})) << "the badge is not amber";
  EXPECT_EQ(app->warnings().rows_drawn(), 0u);
  app->warnings().set_open(true);
  Render(*app);
  EXPECT_EQ(app->warnings().rows_drawn(), warnings.size());

  // The whole file: no badge.
  app->Open(clean);
  ASSERT_TRUE(app->WaitLoaded(false));
  Render(*app);
  EXPECT_TRUE(app->document()->warnings.empty());
  EXPECT_EQ(app->warnings().badge_max().x, app->warnings().badge_min().x);
  std::filesystem::remove(cut);
}

TEST(Inspector, CompareReplaysBothConfigurationsSideBySide) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "compare", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  app->compare().SetConfs("growth=on", "expandable=on");
  app->compare().Start(*app->document());
  app->compare().Wait();
  Render(*app);
  EXPECT_TRUE(app->compare().has_result());
}

// Every row's overhead is against the trace's own peak LOAD, as `fragscope compare` measures it: a
// side that runs out of memory has a smaller LOAD of its own, which made it read as near perfect.
TEST(Inspector, CompareMeasuresEveryRowAgainstTheTracesLoad) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "compare", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  const std::uint64_t load = app->document()->model->Metrics(0).peak_load;
  ASSERT_GT(load, 0u);
  // A limit of half the LOAD must fail; the default policy with no limit must not.
  app->compare().SetConfs("limit=" + std::to_string(load / 2 / 256 * 256), "");
  app->compare().Start(*app->document());
  app->compare().Wait();
  Render(*app);
  ASSERT_TRUE(app->compare().has_result()) << app->compare().error();
  const auto& texts = app->compare().overhead_texts();
  ASSERT_EQ(texts.size(), 3u);
  EXPECT_EQ(texts[1].back(), '*') << texts[1];  // ran out of memory, and says so
  EXPECT_NE(texts[2].back(), '*') << texts[2];
  // Below 1.00: reserved never passed half the LOAD, and the row no longer hides it.
  EXPECT_LT(std::stod(texts[1]), 0.55) << texts[1];
  EXPECT_GE(std::stod(texts[2]), 1.0) << texts[2];
}

// Without configurations of its own, compare sets TensorFlow's allocator (allow_growth) against
// fragscope's default policy: the presets `fragscope compare` runs (analysis::ComparisonPresets).
TEST(Inspector, CompareDefaultsToTensorflowAgainstTheDefaultPolicy) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "compare", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  app->compare().Start(*app->document());
  app->compare().Wait();
  Render(*app);
  ASSERT_TRUE(app->compare().has_result());
  EXPECT_EQ(app->compare().side_label(0).rfind("preset=tensorflow", 0), 0u) << app->compare().side_label(0);
  EXPECT_EQ(app->compare().side_label(1).rfind("default policy", 0), 0u) << app->compare().side_label(1);
}

// The presets issue: the inspector's compare offers every preset of `fragscope compare`, PyTorch's
// two among them, and replays them side by side without an error.
TEST(Inspector, CompareOffersPytorchsPresets) {
  std::vector<std::string> confs;
  for (const auto& preset : analysis::ComparisonPresets()) confs.emplace_back(preset.conf);
  ASSERT_EQ(confs.size(), 5u);
  EXPECT_EQ(confs[3], "preset=pytorch");
  EXPECT_EQ(confs[4], "preset=pytorch,expandable_segments=on");
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "compare", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  app->compare().SetConfs(confs[3], confs[4]);
  app->compare().Start(*app->document());
  app->compare().Wait();
  Render(*app);
  ASSERT_TRUE(app->compare().has_result()) << app->compare().error();
  EXPECT_EQ(app->compare().side_label(0).rfind("preset=pytorch", 0), 0u) << app->compare().side_label(0);
  EXPECT_NE(app->compare().side_label(1).find("expandable_segments=on"), std::string::npos)
      << app->compare().side_label(1);
  EXPECT_EQ(app->compare().side_ooms(0), 0u);
  EXPECT_EQ(app->compare().side_ooms(1), 0u);
}

TEST(Inspector, AllPanelsRenderAndTheTableListsTheLiveAllocations) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  const std::uint64_t at = app->document()->model->event_count() / 2;
  app->SetCursor(at);
  Render(*app);
  const auto state = app->document()->model->StateAt(app->selection().device, at);
  std::size_t live = state.outside_regions.size();
  for (const auto& region : state.regions) live += region.chunks.size();
  EXPECT_EQ(app->table().row_count(), live);
  std::size_t holes = 0;
  for (const auto& b : app->histogram().buckets()) holes += b.count;
  std::size_t state_holes = 0;
  for (const auto& region : state.regions) state_holes += region.holes.size();
  EXPECT_EQ(holes, state_holes);
}

// Issue 17: the live set grouped by tag and by call site, with totals; the table shows what
// analysis::GroupLive computes, and the groups hold every live byte.
TEST(Inspector, TheLiveTableGroupsByTagAndByCallSite) {
  const std::filesystem::path snapshot =
      std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "torch" / "pt_eor_cnn_counterfactuals.pickle";
  const std::string file = std::filesystem::exists(snapshot) ? snapshot.string() : kSamples + "synth-small.fst";
  std::string skip;
  auto app = OpenApp(file, "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  const std::uint64_t at = app->document()->model->event_count() - 1;
  app->SetCursor(at);
  const auto state = app->document()->model->StateAt(app->selection().device, at);
  for (const auto grouping : {LiveTablePanel::Grouping::kTag, LiveTablePanel::Grouping::kFrame}) {
    app->table().SetGrouping(grouping);
    Render(*app);
    const auto& groups = app->table().groups();
    ASSERT_FALSE(groups.empty());
    std::uint64_t bytes = 0;
    for (const auto& group : groups) bytes += group.bytes;
    EXPECT_EQ(bytes, state.in_use);
    if (grouping == LiveTablePanel::Grouping::kFrame && file == snapshot.string()) {
      EXPECT_NE(groups.front().name, analysis::kNoStack) << "a snapshot's allocations have call sites";
      EXPECT_NE(groups.front().name.find(".py:"), std::string::npos) << groups.front().name;
    }
  }
  app->table().SetGrouping(LiveTablePanel::Grouping::kNone);
  Render(*app);
  std::size_t live = state.outside_regions.size();
  for (const auto& region : state.regions) live += region.chunks.size();
  EXPECT_EQ(app->table().row_count(), live);
}

TEST(Inspector, CursorKeysMoveByEventPageStepAndOom) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-oom.fst", "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  const Document& document = *app->document();
  const auto& ooms = document.OomsOf(app->selection().device);
  ASSERT_GE(ooms.size(), 3u);
  Render(*app);
  EXPECT_EQ(app->selection().cursor, ooms[0].event_index);
  app->Apply(CursorAction::kNextOom);
  EXPECT_EQ(app->selection().cursor, ooms[1].event_index);
  app->Apply(CursorAction::kNextOom);
  EXPECT_EQ(app->selection().cursor, ooms[2].event_index);
  app->Apply(CursorAction::kPrevOom);
  EXPECT_EQ(app->selection().cursor, ooms[1].event_index);
  const std::uint64_t at = app->selection().cursor;
  app->Apply(CursorAction::kNextEvent);
  EXPECT_EQ(app->selection().cursor, at + 1);
  app->Apply(CursorAction::kPrevEvent);
  app->Apply(CursorAction::kPrevEvent);
  EXPECT_EQ(app->selection().cursor, at - 1);
  app->Apply(CursorAction::kNextStep);
  const auto& steps = document.cursor_index.steps();
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(app->selection().cursor, *std::upper_bound(steps.begin(), steps.end(), at - 1));
  EXPECT_EQ(document.model->event(app->selection().cursor).type, traces::EventType::kMarker);
  app->Apply(CursorAction::kLast);
  EXPECT_EQ(app->selection().cursor, document.model->event_count() - 1);
  app->Apply(CursorAction::kNextOom);  // wraps to the first
  EXPECT_EQ(app->selection().cursor, ooms[0].event_index);
  app->Apply(CursorAction::kFirst);
  app->Apply(CursorAction::kPageForward);  // a tenth of the visible range (the whole trace here)
  EXPECT_EQ(app->selection().cursor, document.model->event_count() / 10);
  Render(*app);
  // The panels follow: the map and the table show the state at the new cursor.
  const auto state = document.model->StateAt(app->selection().device, app->selection().cursor);
  std::size_t live = state.outside_regions.size();
  for (const auto& region : state.regions) live += region.chunks.size();
  EXPECT_EQ(app->table().row_count(), live);
}

TEST(Inspector, ASelectedChunkIsOutlinedAndItsFreeIsFound) {
  std::string skip;
  auto app = OpenApp(kSamples + "synth-small.fst", "map", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  const auto& model = *app->document()->model;
  app->SetCursor(model.event_count() / 2);
  const auto state = model.StateAt(app->selection().device, app->selection().cursor);
  // The largest live chunk in a region.
  const analysis::LiveChunk* chunk = nullptr;
  for (const auto& region : state.regions) {
    for (const auto& c : region.chunks) {
      if (chunk == nullptr || c.size > chunk->size) chunk = &c;
    }
  }
  ASSERT_NE(chunk, nullptr);
  app->selection().selected_address = chunk->address;
  Render(*app);
  EXPECT_EQ(app->map().selected_free_event(),
            analysis::FindFreeEvent(model, app->selection().device, chunk->address, state.event_index, 2000000));
  if (auto free = app->map().selected_free_event()) {
    EXPECT_EQ(model.event(*free).type, traces::EventType::kFree);
    EXPECT_EQ(model.event(*free).address, chunk->address);
  }
  // Outlined: white marks in the gap above the chunk's cells.
  const Frame frame(*app);
  const auto& layout = app->map().layout();
  const PixelRect rect = app->map().canvas_rect();
  const int width = rect.x1 - rect.x0;
  std::uint64_t offset = 0;
  for (const auto& item : layout.items) {
    if (item.kind == analysis::MapItemKind::kChunk && item.address == chunk->address) offset = item.offset;
  }
  const std::uint32_t cell = layout.CellOf(offset + chunk->size / 2);
  const int x = rect.x0 + static_cast<int>(cell) % width;
  const int y = rect.y0 + static_cast<int>(cell) / width * app->map().row_pitch() + 1;
  EXPECT_EQ(frame.At(x, y), ToRgb(colours::kSelected));
  const std::uint64_t cursor = app->selection().cursor;
  // For the full layout: the largest chunk there that is freed later (the one above may live on).
  std::optional<std::uint64_t> freed_address;
  std::uint64_t freed_size = 0;
  for (const auto& region : state.regions) {
    for (const auto& c : region.chunks) {
      if (c.size > freed_size && analysis::FindFreeEvent(model, app->selection().device, c.address, cursor, 2000000)) {
        freed_address = c.address;
        freed_size = c.size;
      }
    }
  }
  ASSERT_TRUE(freed_address.has_value());
  app.reset();

  // Issue 17, item 4: in the full layout the "go to free" button was clipped behind the line of
  // text before it. It comes first now: inside the map panel, whatever the tag's length.
  auto full = OpenApp(kSamples + "synth-small.fst", "", std::nullopt, &skip);
  ASSERT_NE(full, nullptr) << skip;
  ASSERT_TRUE(full->WaitLoaded(false));
  full->SetCursor(cursor);
  full->selection().selected_address = freed_address;
  Render(*full);
  const PixelRect button = full->map().free_button();
  ASSERT_FALSE(button.empty());
  EXPECT_GE(button.x0, full->map().canvas_rect().x0);
  EXPECT_LE(button.x1, full->map().canvas_rect().x1);
}

TEST(Inspector, EachDeviceOfATwoDeviceTraceHasItsOwnTimelineAndMap) {
  const std::string path = (std::filesystem::temp_directory_path() / "fragscope_gui_two.fst").string();
  {
    analysis::SynthOptions synth;
    synth.events = 4000;
    synth.devices = 2;
    synth.seed = 3;
    traces::TraceWriter writer(path, analysis::SynthHeader(synth));
    analysis::Synthesize(synth, writer);
    writer.Close();
  }
  std::string skip;
  auto app = OpenApp(path, "", std::nullopt, &skip);
  if (app == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(app->WaitLoaded(false));
  const auto& model = *app->document()->model;
  ASSERT_EQ(model.devices(), (std::vector<std::uint32_t>{0, 1}));
  for (std::uint32_t device : {0u, 1u}) {
    app->selection().device = device;
    app->SetCursor(model.event_count() / 2);
    Render(*app);
    const auto state = model.StateAt(device, app->selection().cursor);
    std::size_t live = state.outside_regions.size();
    for (const auto& region : state.regions) live += region.chunks.size();
    EXPECT_EQ(app->table().row_count(), live) << "device " << device;
    EXPECT_EQ(app->map().layout().total_bytes, state.reserved) << "device " << device;
  }
}

TEST(Inspector, LayoutAndRecentFilesPersistInTheConfigFolder) {
  const auto dir = std::filesystem::temp_directory_path() / "fragscope_gui_config";
  std::filesystem::remove_all(dir);
  setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
  {
    ViewOptions options;
    options.trace = kSamples + "synth-small.fst";
    options.persist = true;
    options.width = 900;
    options.height = 700;
    App app(options);
    std::string error;
    if (!app.Init(&error)) GTEST_SKIP() << "no display (" << error << "); run under xvfb-run";
    ASSERT_TRUE(app.WaitLoaded(false));
    Render(app);
  }  // closing saves the layout
  unsetenv("XDG_CONFIG_HOME");
  EXPECT_TRUE(std::filesystem::exists(dir / "fragscope" / "imgui.ini"));
  std::ifstream recent(dir / "fragscope" / "recent.txt");
  std::string first;
  std::getline(recent, first);
  EXPECT_EQ(std::filesystem::path(first).filename(), "synth-small.fst");
  std::ifstream ini(dir / "fragscope" / "imgui.ini");
  const std::string text((std::istreambuf_iterator<char>(ini)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("[Window][Memory map]"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fragscope::gui

namespace fragscope::gui {
namespace {

// The hover of an allocation shows its call stack where the trace has one (a PyTorch snapshot):
// the document keeps each alloc event's stack. No window needed.
TEST(InspectorDocument, KeepsTheCallStackOfEveryAllocationOfAPytorchSnapshot) {
  const std::filesystem::path snapshot =
      std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "torch" / "pt_linear_grad_tiny.pickle";
  if (!std::filesystem::exists(snapshot)) GTEST_SKIP() << snapshot << " is absent: no PyTorch snapshot";
  const auto document = LoadDocument(snapshot.string(), {});
  ASSERT_FALSE(document->stacks.empty());
  ASSERT_EQ(document->event_stacks.size(), document->model->event_count());
  std::size_t with_stack = 0;
  for (std::uint64_t i = 0; i < document->event_stacks.size(); ++i) {
    if (const std::string* stack = document->StackOf(i)) {
      ++with_stack;
      EXPECT_NE(stack->find(".py:"), std::string::npos) << *stack;  // file:line:function frames
    }
  }
  EXPECT_GT(with_stack, 0u);
  EXPECT_EQ(document->StackOf(document->event_stacks.size()), nullptr);
  // Our own traces carry no stacks: nothing to show, nothing stored.
  const auto own = LoadDocument((std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "traces" / "samples" / "synth-small.fst").string(), {});
  EXPECT_TRUE(own->event_stacks.empty());
  EXPECT_EQ(own->StackOf(0), nullptr);
}

}  // namespace
}  // namespace fragscope::gui
