// Memory over time, drawn from the model's min/max level of detail: one column per pixel at any
// zoom, so a frame costs the same on a thousand events and on ten million.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"
#include "panels.hpp"
#include "timeline_axis.hpp"

namespace fragscope::gui {

using namespace timeline_axis;

namespace {

constexpr float kMinimapHeight = 26;  // at the 13 px font: Px() scales them
constexpr float kAxisHeight = 18;

// Column c (a pixel wide at x0 + c) filled from rows[c] down to `bottom`, neighbouring columns
// with the same row as one fill.
void FillColumnsUp(PixelCanvas& canvas, float x0, float bottom, const std::vector<float>& rows, ImU32 colour) {
  std::size_t start = 0;
  for (std::size_t c = 1; c <= rows.size(); ++c) {
    if (c < rows.size() && rows[c] == rows[start]) continue;
    if (rows[start] < bottom) canvas.Fill(x0 + static_cast<float>(start), rows[start], x0 + static_cast<float>(c), bottom, colour);
    start = c;
  }
}

}  // namespace

void TimelinePanel::Refresh(const Document& document, const Selection& selection, int width) {
  if (cached_document_ == &document && cached_device_ == selection.device && cached_width_ == width &&
      cached_begin_ == selection.view.begin && cached_end_ == selection.view.end &&
      cached_time_axis_ == selection.time_axis) {
    if (stacked && !stack_valid_) RefreshStack(document, selection, width);
    if (!stacked && stack_valid_) {
      stack_ = {};
      stack_valid_ = false;
    }
    if (show_fragmentation && !frag_valid_) RefreshFragmentation(document, selection);
    return;
  }
  stack_valid_ = false;
  frag_valid_ = false;
  cached_document_ = &document;
  cached_device_ = selection.device;
  cached_width_ = width;
  cached_begin_ = selection.view.begin;
  cached_end_ = selection.view.end;
  cached_time_axis_ = selection.time_axis;
  const auto& model = *document.model;
  const auto columns = static_cast<std::uint32_t>(std::max(1, width));
  constexpr analysis::Series kSeries[3] = {analysis::Series::kReserved, analysis::Series::kInUse,
                                           analysis::Series::kLoad};
  // All three series in one walk of the model (by Series value), then in the panel's order.
  std::vector<std::uint64_t> by_series_min[3], by_series_max[3];
  if (selection.time_axis) {
    const double origin = TimeOrigin(document);
    bounds_ = analysis::ColumnsByTime(model, origin + selection.view.begin, origin + selection.view.end, columns);
    analysis::DownsampleRangesAll(model, selection.device, bounds_, by_series_min, by_series_max);
  } else {
    const auto begin = static_cast<std::uint64_t>(std::floor(selection.view.begin));
    const auto end = static_cast<std::uint64_t>(std::ceil(selection.view.end));
    model.DownsampleAll(selection.device, begin, end, columns, by_series_min, by_series_max);
  }
  for (int s = 0; s < 3; ++s) {
    min_[s] = std::move(by_series_min[static_cast<int>(kSeries[s])]);
    max_[s] = std::move(by_series_max[static_cast<int>(kSeries[s])]);
  }
  const analysis::DeviceMetrics metrics = model.Metrics(selection.device);
  const std::uint64_t top = std::max({metrics.peak_reserved, metrics.peak_in_use, metrics.peak_load, std::uint64_t{1}});
  // The limit is part of the picture when it is near the data (a run that ran out of memory under
  // it); a limit far above it (an 80 GiB device) would flatten the curves, so it is left out.
  limit_ = 0;
  if (const auto* device = model.header().Device(selection.device); device != nullptr && device->limit > 0 &&
                                                                      device->limit / 2 <= top) {
    limit_ = device->limit;
  }
  const std::uint64_t scale = std::max(top, limit_);
  y_max_ = scale + scale / 10;
  if (overview_width_ != width || overview_.size() != columns || overview_time_axis_ != selection.time_axis ||
      overview_device_ != selection.device || overview_document_ != &document) {
    // The minimap spans the whole axis (events, or time) like the view it outlines. It draws
    // reserved memory; where the evidence records none (a profiler trace, an RMM log) it was an
    // empty strip with no word why: it draws in use then, and says so.
    const analysis::Series overview_series =
        document.ReservedUnknown(selection.device) ? analysis::Series::kInUse : analysis::Series::kReserved;
    minimap_note_ = overview_series == analysis::Series::kInUse ? "in use (reserved unknown: no regions recorded)" : "";
    std::vector<std::uint64_t> lo;
    if (selection.time_axis) {
      const double origin = TimeOrigin(document);
      const auto whole = analysis::ColumnsByTime(model, origin, origin + AxisTotal(document, true), columns);
      analysis::DownsampleRanges(model, selection.device, overview_series, whole, &lo, &overview_);
    } else {
      model.Downsample(selection.device, overview_series, 0, model.event_count(), columns, &lo, &overview_);
    }
    overview_width_ = width;
    overview_time_axis_ = selection.time_axis;
    overview_device_ = selection.device;
    overview_document_ = &document;
  }
  if (stacked) {
    RefreshStack(document, selection, width);
  } else {
    stack_ = {};
  }
  if (show_fragmentation) RefreshFragmentation(document, selection);
}

void TimelinePanel::RefreshFragmentation(const Document& document, const Selection& selection) {
  const auto& model = *document.model;
  if (!model.FragmentationReady()) {
    // Its pass reads every event (about a second on 10 M): a job, and the next frames look again.
    if (!fragmentation_job_.running()) {
      std::shared_ptr<const analysis::TimelineModel> shared = document.model;
      fragmentation_job_.Start("fragmentation", [shared](Job&) { shared->PrepareFragmentation(); });
    }
    return;
  }
  const std::size_t columns = min_[0].size();
  if (selection.time_axis) {
    // The columns of the byte series' time slices: an empty slice shows the event before it.
    frag_min_.assign(columns, 0.0f);
    frag_max_.assign(columns, 0.0f);
    std::vector<float> lo, hi;
    for (std::size_t c = 0; c < columns && c + 1 < bounds_.size(); ++c) {
      if (bounds_[c + 1] > bounds_[c]) {
        model.DownsampleFragmentation(selection.device, bounds_[c], bounds_[c + 1], 1, &lo, &hi);
        frag_min_[c] = lo[0];
        frag_max_[c] = hi[0];
      } else if (model.event_count() > 0) {
        const auto at = std::min(bounds_[c] == 0 ? 0 : bounds_[c] - 1, model.event_count() - 1);
        frag_min_[c] = frag_max_[c] = static_cast<float>(model.FragmentationAt(selection.device, at));
      }
    }
  } else {
    const auto begin = static_cast<std::uint64_t>(std::floor(selection.view.begin));
    const auto end = static_cast<std::uint64_t>(std::ceil(selection.view.end));
    model.DownsampleFragmentation(selection.device, begin, end, static_cast<std::uint32_t>(columns), &frag_min_, &frag_max_);
  }
  frag_valid_ = true;
}

void TimelinePanel::Draw(const Document& document, Selection& selection, float height) {
  drew_moment_ = document.kind != traces::EvidenceKind::kHistory;
  if (drew_moment_) {
    plot_rect_ = {};
    plot_labels_.clear();
    oom_columns_.clear();
    DrawMoment(document, selection);
    return;
  }
  const auto& model = *document.model;
  // A legend: each series' colour beside its switch.
  const auto swatch = Swatch;
  swatch(colours::kReserved);
  ImGui::Checkbox("reserved", &show_reserved);
  ImGui::SameLine();
  swatch(colours::kInUse);
  ImGui::Checkbox("in use", &show_in_use);
  ImGui::SameLine();
  swatch(colours::kLoad);
  ImGui::Checkbox("LOAD", &show_load);
  ImGui::SameLine();
  swatch(colours::kFragmentation);
  ImGui::Checkbox("fragmentation", &show_fragmentation);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("External fragmentation after each event: 1 - largest hole / free bytes in regions, on its "
                      "own scale (0 at the bottom of the plot, 1 at the top). Near 1, the free memory is "
                      "scattered in pieces much smaller than the whole.");
  }
  ImGui::SameLine();
  if (show_fragmentation && document.ReservedUnknown(selection.device)) {
    ImGui::TextDisabled("(unknown: no regions recorded)");
    ImGui::SameLine();
  } else if (show_fragmentation && !model.FragmentationReady()) {
    ImGui::TextDisabled("(computing)");
    ImGui::SameLine();
  }
  ImGui::Checkbox("stack live allocations", &stacked);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("The active-memory timeline: the %zu largest allocations live at the view's peak as bands "
                      "(oldest lowest), the rest as one grey band; zoom in and the bands follow that stretch's peak.",
                      kBands);
  }
  ImGui::SameLine();
  if (limit_ > 0) {
    swatch(colours::kLimit);
    ImGui::TextUnformatted("limit");
    ImGui::SameLine();
  }
  const analysis::DeviceMetrics metrics = model.Metrics(selection.device);
  const bool reserved_unknown = document.ReservedUnknown(selection.device);
  const std::string peaks =
      reserved_unknown
          ? fmt::format("peak in use {}, peak LOAD {}, reserved unknown", FormatBytes(metrics.peak_in_use),
                        FormatBytes(metrics.peak_load))
          : fmt::format("peak reserved {}, peak in use {}, peak LOAD {}, overhead {:.2f}",
                        FormatBytes(metrics.peak_reserved), FormatBytes(metrics.peak_in_use),
                        FormatBytes(metrics.peak_load), metrics.overhead());
  constexpr const char* kHint = "   (wheel: zoom, drag: pan, click: cursor)";
  // The hint only where it fits on the line (a narrow window clipped it): else in the plot's tooltip.
  hint_hidden_ = ImGui::CalcTextSize((peaks + kHint).c_str()).x > ImGui::GetContentRegionAvail().x;
  ImGui::TextDisabled("%s%s", peaks.c_str(), hint_hidden_ ? "" : kHint);
  if (const auto* before = model.header().source.BeforeRecording(selection.device); before && before->blocks > 0) {
    ImGui::TextDisabled("%s in %llu blocks were live before recording started (the shaded start reconstructs them)",
                        FormatBytes(before->bytes).c_str(), static_cast<unsigned long long>(before->blocks));
  }

  const double total = AxisTotal(document, selection.time_axis);
  if (!(selection.view.end <= total) || selection.view.span() <= 0 || cached_time_axis_ != selection.time_axis) {
    if (cached_time_axis_ != selection.time_axis || selection.view.span() <= 0 || selection.view.end > total) {
      selection.view = {0, total};
    }
  }
  const double min_span = selection.time_axis ? 1000.0 : 10.0;
  if (selection.follow_cursor && model.event_count() > 0) {
    const double p = PositionOf(document, selection.time_axis, selection.cursor);
    if (p < selection.view.begin || p >= selection.view.end) {
      selection.view.Pan(p - (selection.view.begin + selection.view.end) / 2, total);
    }
    selection.follow_cursor = false;
  }

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float full = height > 0 ? height : avail.y;
  const int width = std::max(16, static_cast<int>(avail.x));
  const float plot_h = std::floor(std::max(20.0f, full - Px(kMinimapHeight) - Px(kAxisHeight) - 6));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = std::floor(origin.x), y0 = std::floor(origin.y);
  plot_rect_ = {static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x0) + width,
                static_cast<int>(y0 + plot_h)};
  Refresh(document, selection, width);
  plot_labels_.clear();

  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float y1 = y0 + plot_h;
  auto y_of = [&](std::uint64_t v) { return RowOf(v, y1, plot_h); };
  const bool stack_shown = stacked && stack_valid_;
  // Everything under the text is filled into one image (pixel_canvas.hpp: thousands of one-pixel
  // rectangles were llvmpipe's biggest cost); text, the OOM triangles and outlines go on top.
  plot_canvas_.Begin(draw, x0, y0, width, static_cast<int>(plot_h), colours::kBackground);
  // A y axis: grid lines at quarters of the scale (under the data), labelled (over it, below), and
  // zero at the bottom.
  for (int q = 1; q <= 4; ++q) {
    const float y = y_of(y_max_ / 4 * static_cast<std::uint64_t>(q));
    plot_canvas_.Fill(x0, y, x0 + static_cast<float>(width), y + 1, colours::kGrid);
  }
  if (stack_shown) {
    DrawStack(x0, y1, plot_h, width);
  } else if (show_in_use) {  // the area under in use, dim, so that LOAD drawn over it stays readable
    std::vector<float> tops(std::min(static_cast<std::size_t>(width), min_[1].size()));
    for (std::size_t c = 0; c < tops.size(); ++c) tops[c] = y_of(min_[1][c]);
    FillColumnsUp(plot_canvas_, x0, y1, tops, IM_COL32(40, 62, 110, 255));
  }
  // Stacked, the bands' top is the in-use curve (each column's maximum): no line over it.
  const bool shown[3] = {show_reserved, show_in_use && !stack_shown, show_load};
  const ImU32 series_colour[3] = {colours::kReserved, colours::kInUse, colours::kLoad};
  // Each column spans the series' min to max over its events. A narrow span is drawn solid and
  // joined to its neighbours, a line; a wide one (a zoomed-out column holding whole steps) is an
  // envelope: the span dim, its max and min as lines, so ten million events are not a wall of colour.
  constexpr float kSolidSpan = 4;
  const auto fill = [&](float x, float top, float bottom, ImU32 colour) {
    top = std::max(top, y0);
    bottom = std::min(bottom, y1);
    if (bottom > top) plot_canvas_.Fill(x, top, x + 1, bottom, colour);
  };
  // One series' columns: hi_of(c) and lo_of(c) are the rows [hi, lo) of column c's span.
  const auto draw_spans = [&](int n, auto&& hi_of, auto&& lo_of, ImU32 colour) {
    const ImU32 dim = (colour & 0x00ffffffu) | (ImU32{64} << IM_COL32_A_SHIFT);
    for (int c = 0; c < n; ++c) {
      const float hi = hi_of(c), lo = lo_of(c);
      const float x = x0 + static_cast<float>(c);
      if (lo - hi <= kSolidSpan) {
        float top = hi, bottom = lo;
        if (c > 0) {  // join to the previous column
          if (top > lo_of(c - 1) - 1) top = lo_of(c - 1) - 1;
          if (bottom < hi_of(c - 1) + 1) bottom = hi_of(c - 1) + 1;
        }
        fill(x, top, bottom, colour);
        continue;
      }
      fill(x, hi + 1, lo - 1, dim);
      // The max line steps up to a higher neighbour in this column, above the span; the min line
      // steps down to a lower neighbour below it: never across the dim inside.
      float line_top = hi, line_bottom = lo;
      for (const int d : {c - 1, c + 1}) {
        if (d < 0 || d >= n) continue;
        line_top = std::min(line_top, hi_of(d));
        line_bottom = std::max(line_bottom, lo_of(d));
      }
      fill(x, line_top, hi + 1, colour);
      fill(x, lo - 1, line_bottom, colour);
    }
  };
  for (int s = 0; s < 3; ++s) {
    if (!shown[s]) continue;
    const int n = std::min(width, static_cast<int>(max_[s].size()));
    draw_spans(
        n, [&](int c) { return y_of(max_[s][static_cast<std::size_t>(c)]); },
        [&](int c) { return y_of(min_[s][static_cast<std::size_t>(c)]) + 1; }, series_colour[s]);
  }
  // Fragmentation on its own scale, over the byte series: 0 at the bottom row, 1 at the top.
  // Without recorded regions, or with reserved memory given as a total only, the holes are unknown:
  // the series would be a flat, false 0.
  fragmentation_drawn_ = show_fragmentation && frag_valid_ && !document.ReservedUnknown(selection.device) &&
                         !model.header().source.ReservedWithoutLayout(selection.device);
  if (fragmentation_drawn_) {
    const auto row = [&](float f) { return static_cast<float>(std::round(y1 - static_cast<double>(f) * plot_h)); };
    const int n = std::min(width, static_cast<int>(frag_max_.size()));
    draw_spans(
        n, [&](int c) { return row(frag_max_[static_cast<std::size_t>(c)]); },
        [&](int c) { return row(frag_min_[static_cast<std::size_t>(c)]) + 1; }, colours::kFragmentation);
  }
  limit_row_ = -1;
  if (limit_ > 0 && limit_ <= y_max_) {
    limit_row_ = static_cast<int>(y_of(limit_));
    plot_canvas_.Fill(x0, static_cast<float>(limit_row_), x0 + static_cast<float>(width),
                      static_cast<float>(limit_row_ + 1), colours::kLimit);
  }
  DrawPlotLabels(x0, y0, y1, plot_h, width);
  auto x_of = [&](std::uint64_t event) {
    const double f = selection.view.Fraction(PositionOf(document, selection.time_axis, event));
    return x0 + static_cast<float>(std::floor(f * width));
  };
  auto visible = [&](std::uint64_t event) {
    const double p = PositionOf(document, selection.time_axis, event);
    return p >= selection.view.begin && p < selection.view.end;
  };
  // The events that only lay out what was live before recording started: shaded and named, so the
  // ramp they draw is not read as something the program did (issue 17, item 2).
  reconstructed_rect_ = {};
  if (const std::uint64_t n = model.header().source.reconstructed_events; n > 0 && model.event_count() > 0) {
    const std::uint64_t last = std::min(n, model.event_count()) - 1;
    const double begin = PositionOf(document, selection.time_axis, 0);
    const double end = PositionOf(document, selection.time_axis, last) + (selection.time_axis ? 0 : 1);
    const float xa = std::max(x0, x0 + static_cast<float>(std::floor(selection.view.Fraction(begin) * width)));
    const float xb = std::min(x0 + static_cast<float>(width),
                              x0 + static_cast<float>(std::ceil(selection.view.Fraction(end) * width)));
    if (xb > xa) {
      plot_canvas_.Fill(xa, y0, xb, y1, IM_COL32(255, 255, 255, 36));
      reconstructed_rect_ = {static_cast<int>(xa), static_cast<int>(y0), static_cast<int>(xb), static_cast<int>(y1)};
    }
    if (xb > xa + 60) {
      draw->AddText(ImVec2(xa + 4, y0 + 18), IM_COL32(230, 230, 230, 255), "live before recording");
      draw->AddText(ImVec2(xa + 4, y0 + 18 + ImGui::GetTextLineHeight()), IM_COL32(230, 230, 230, 255),
                    "(reconstructed)");
    }
  }
  // Step ticks along the bottom (at most one per pixel), OOM lines with a triangle at the top.
  {
    const auto& steps = document.cursor_index.steps();
    float last_x = -1;
    const std::uint64_t first = EventAt(document, selection.time_axis, selection.view.begin);
    const std::uint64_t last = EventAt(document, selection.time_axis, selection.view.end);
    for (auto it = std::lower_bound(steps.begin(), steps.end(), first); it != steps.end() && *it <= last; ++it) {
      const std::uint64_t event = *it;
      if (!visible(event)) continue;
      const float x = x_of(event);
      if (x == last_x) continue;
      last_x = x;
      plot_canvas_.Fill(x, y1 - 6, x + 1, y1, colours::kStep);
    }
    oom_columns_.clear();
    for (std::uint64_t event : document.cursor_index.ooms()) {
      // The list holds every device's OOMs: the selected device's plot draws its own only.
      if (!visible(event) || model.event(event).device != selection.device) continue;
      const float x = x_of(event);
      oom_columns_.push_back(static_cast<int>(x));
      plot_canvas_.Fill(x, y0, x + 1, y1, colours::kOom);
      draw->AddTriangleFilled(ImVec2(x - 4, y0), ImVec2(x + 5, y0), ImVec2(x + 0.5f, y0 + 7), colours::kOom);
    }
  }
  DrawMarkers(document, selection, x0, y0, y1, width);
  plot_canvas_.Finish();
  // The cursor over the image rather than in it: when only the cursor moves, the image's fills are
  // the same as the last frame's and nothing is painted or uploaded (pixel_canvas.hpp).
  if (model.event_count() > 0 && visible(selection.cursor)) {
    const float x = x_of(selection.cursor);
    draw->AddRectFilled(ImVec2(x, y0), ImVec2(x + 1, y1), colours::kCursor);
  }

  // Interaction on the plot.
  ImGui::SetCursorScreenPos(ImVec2(x0, y0));
  ImGui::InvisibleButton("##plot", ImVec2(static_cast<float>(width), plot_h));
  const ImGuiIO& io = ImGui::GetIO();
  const auto mouse_fraction = [&] {
    return std::clamp(static_cast<double>(io.MousePos.x - x0) / width, 0.0, 1.0);
  };
  if (ImGui::IsItemHovered()) {
    const double anchor = selection.view.At(mouse_fraction());
    if (io.MouseWheel != 0) {
      selection.view.Zoom(anchor, std::pow(0.8, static_cast<double>(io.MouseWheel)), min_span, total);
    }
    const std::uint64_t event = EventAt(document, selection.time_axis, anchor);
    if (model.event_count() > 0 && !dragging_) {
      ImGui::BeginTooltip();
      ImGui::Text("%s (event %llu)", AxisLabel(selection.time_axis, anchor).c_str(),
                  static_cast<unsigned long long>(event));
      ImGui::Text("reserved %s  in use %s  LOAD %s",
                  document.ReservedUnknown(selection.device)
                      ? "unknown"
                      : FormatBytes(model.ValueAt(selection.device, analysis::Series::kReserved, event)).c_str(),
                  FormatBytes(model.ValueAt(selection.device, analysis::Series::kInUse, event)).c_str(),
                  FormatBytes(model.ValueAt(selection.device, analysis::Series::kLoad, event)).c_str());
      if (fragmentation_drawn_) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(colours::kFragmentation), "external fragmentation %.3f",
                           model.FragmentationAt(selection.device, event));
      }
      if (hint_hidden_) ImGui::TextDisabled("wheel: zoom, drag: pan, click: cursor");
      for (const std::string& name : MarkersNear(io.MousePos.x)) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(colours::kMarker), "%s", name.c_str());
      }
      hovered_band_ = -2;
      if (stack_shown && !stack_.column_event.empty()) {
        const auto column = static_cast<std::size_t>(std::clamp<float>(io.MousePos.x - x0, 0, static_cast<float>(stack_.column_event.size() - 1)));
        const double fraction = std::max(0.0, static_cast<double>(y1 - io.MousePos.y) / plot_h);
        BandTooltip(document, selection, column, static_cast<std::uint64_t>(fraction * static_cast<double>(y_max_)));
      }
      ImGui::EndTooltip();
    }
  }
  if (ImGui::IsItemActivated()) {
    dragging_ = false;
    drag_start_x_ = io.MousePos.x;
    drag_view_begin_ = selection.view.begin;
  }
  if (ImGui::IsItemActive() && std::abs(io.MousePos.x - drag_start_x_) > 3) {
    dragging_ = true;
    const double delta = -static_cast<double>(io.MousePos.x - drag_start_x_) / width * selection.view.span();
    selection.view.Pan(drag_view_begin_ + delta - selection.view.begin, total);
  }
  if (ImGui::IsItemDeactivated()) {
    if (!dragging_ && model.event_count() > 0) {
      selection.cursor = EventAt(document, selection.time_axis, selection.view.At(mouse_fraction()));
      if (stack_shown && hovered_band_ >= 0 && !stack_.column_event.empty()) {
        // On a band: the moment that column draws (where the band is live), the allocation selected.
        const auto column = static_cast<std::size_t>(std::clamp<float>(io.MousePos.x - x0, 0, static_cast<float>(stack_.column_event.size() - 1)));
        selection.cursor = stack_.column_event[column];
        selection.selected_address = stack_.bands[static_cast<std::size_t>(hovered_band_)].chunk.address;
      }
    }
    dragging_ = false;
  }

  // Axis labels.
  const float axis_y = y1 + 2;
  draw->AddText(ImVec2(x0, axis_y), IM_COL32(180, 180, 180, 255),
                AxisLabel(selection.time_axis, selection.view.begin).c_str());
  const std::string right = AxisLabel(selection.time_axis, selection.view.end);
  const float right_w = ImGui::CalcTextSize(right.c_str()).x;
  draw->AddText(ImVec2(x0 + static_cast<float>(width) - right_w, axis_y), IM_COL32(180, 180, 180, 255), right.c_str());

  // Minimap: the whole trace (reserved, else in use), the visible range outlined; click or drag to move there.
  const float m0 = y1 + Px(kAxisHeight) + 4;
  const float m1 = m0 + Px(kMinimapHeight);
  {
    std::vector<float> tops(static_cast<std::size_t>(width), m1);
    for (std::size_t c = 0; c < tops.size() && c < overview_.size(); ++c) {
      const double f = static_cast<double>(overview_[c]) / static_cast<double>(y_max_);
      tops[c] = std::round(m1 - static_cast<float>(f) * (Px(kMinimapHeight) - 2));
    }
    minimap_canvas_.Begin(draw, x0, m0, width, static_cast<int>(m1 - m0), IM_COL32(36, 36, 42, 255));
    FillColumnsUp(minimap_canvas_, x0, m1, tops,
                  minimap_note_.empty() ? IM_COL32(150, 100, 40, 255) : IM_COL32(40, 62, 110, 255));
    minimap_canvas_.Finish();
    if (!minimap_note_.empty()) draw->AddText(ImVec2(x0 + 4, m0 + 1), IM_COL32(200, 200, 210, 255), minimap_note_.c_str());
  }
  {
    const float vx0 = x0 + static_cast<float>(selection.view.begin / total * width);
    const float vx1 = x0 + static_cast<float>(selection.view.end / total * width);
    draw->AddRect(ImVec2(vx0, m0), ImVec2(std::max(vx0 + 2, vx1), m1), IM_COL32(255, 255, 255, 200));
  }
  ImGui::SetCursorScreenPos(ImVec2(x0, m0));
  ImGui::InvisibleButton("##minimap", ImVec2(static_cast<float>(width), Px(kMinimapHeight)));
  if (ImGui::IsItemActive()) {
    // The minimap is drawn over events (or time) of the whole trace, proportionally.
    const double centre = mouse_fraction() * total;
    selection.view.Pan(centre - (selection.view.begin + selection.view.end) / 2, total);
  }
  ImGui::SetCursorScreenPos(ImVec2(x0, m1 + 4));
  ImGui::Dummy(ImVec2(1, 1));
}

}  // namespace fragscope::gui
