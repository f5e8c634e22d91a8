// The timeline's markers and annotations (a line each, named at the top where the name fits) and
// the placing of every label written on the plot, so that none is written over another. (panels.hpp)
#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"
#include "panels.hpp"
#include "timeline_axis.hpp"

namespace fragscope::gui {

using namespace timeline_axis;

namespace {

bool IsStepMarker(const std::string& name) {
  return name.size() >= 4 && std::equal(name.begin(), name.begin() + 4, "step",
                                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

// What a PyTorch snapshot records of its allocator's own work beside the frees and allocations the
// curves show: kept as markers (the evidence, for the report), but not annotations to draw.
bool IsAllocatorAction(const std::string& name) { return name == "free_requested"; }

bool Overlap(const PixelRect& a, const PixelRect& b) {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

}  // namespace

std::optional<ImVec2> TimelinePanel::PlaceLabel(std::initializer_list<ImVec2> candidates, ImVec2 size,
                                                const char* text) {
  for (const ImVec2& at : candidates) {
    const PixelRect rect{static_cast<int>(std::floor(at.x)), static_cast<int>(std::floor(at.y)),
                         static_cast<int>(std::ceil(at.x + size.x)), static_cast<int>(std::ceil(at.y + size.y))};
    if (rect.x0 < plot_rect_.x0 || rect.x1 > plot_rect_.x1 || rect.y0 < plot_rect_.y0 || rect.y1 > plot_rect_.y1) {
      continue;
    }
    if (std::any_of(plot_labels_.begin(), plot_labels_.end(), [&](const auto& l) { return Overlap(l.second, rect); })) {
      continue;
    }
    plot_labels_.emplace_back(text != nullptr ? std::string(text) : std::string(), rect);
    return at;
  }
  return std::nullopt;
}

void TimelinePanel::DrawMarkers(const Document& document, const Selection& selection, float x0, float y0,
                                float y1, int width) {
  marker_columns_.clear();
  marker_labels_.clear();
  marker_label_rects_.clear();
  marker_hits_.clear();
  markers_dense_ = false;
  const auto& model = *document.model;
  const auto& markers = model.markers();
  if (markers.empty() || model.event_count() == 0) return;
  if (annotations_document_ != &document) {
    // Steps are ticks along the bottom (thousands of them) and the allocator's own bookkeeping is
    // not an annotation: the rest, found once per document instead of skipped every frame.
    annotations_.clear();
    for (std::size_t i = 0; i < markers.size(); ++i) {
      if (!IsStepMarker(markers[i].name) && !IsAllocatorAction(markers[i].name)) annotations_.push_back(i);
    }
    annotations_document_ = &document;
  }
  // The markers in view, found by event index (markers are in event order).
  const std::uint64_t first = EventAt(document, selection.time_axis, selection.view.begin);
  const std::uint64_t last = EventAt(document, selection.time_axis, selection.view.end);
  const auto before_event = [&markers](std::size_t m, std::uint64_t e) { return markers[m].event_index < e; };
  auto at = std::lower_bound(annotations_.begin(), annotations_.end(), first, before_event);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line_h = ImGui::GetTextLineHeight();
  // Right edge of the last name written. The top grid line's value label sits in the same row at
  // the left: names start after it.
  float label_end = x0 + 4 + ImGui::CalcTextSize(FormatBytes(y_max_ / 4 * 4).c_str()).x;
  int last_column = -1;
  constexpr int kNamesPerColumn = 4;  // names kept per column for the tooltip
  int names_in_column = 0;
  std::vector<const analysis::Marker*> firsts;  // the first marker of each column drawn
  for (; at != annotations_.end() && markers[*at].event_index <= last; ++at) {
    const analysis::Marker* it = &markers[*at];
    if (it->device != selection.device) continue;  // that device's timeline shows it
    const double p = PositionOf(document, selection.time_axis, it->event_index);
    if (p < selection.view.begin || p >= selection.view.end) continue;
    const float x = x0 + static_cast<float>(std::floor(selection.view.Fraction(p) * width));
    if (static_cast<int>(x) == last_column) {  // level of detail: one line per pixel column
      if (++names_in_column <= kNamesPerColumn) {
        marker_hits_.emplace_back(x, it->name);
        continue;
      }
      // The column is full: on to the first annotation at or after the next column's first event
      // (zoomed out on millions of events, visiting every marker in view cost a millisecond a frame).
      const double next_column = selection.view.begin + (x - x0 + 1) / static_cast<double>(width) * selection.view.span();
      at = std::lower_bound(at + 1, annotations_.end(), EventAt(document, selection.time_axis, next_column), before_event) - 1;
      continue;
    }
    marker_hits_.emplace_back(x, it->name);
    names_in_column = 1;
    last_column = static_cast<int>(x);
    marker_columns_.push_back(last_column);
    firsts.push_back(it);
  }
  // Dense markers (more than one per kDenseSpacing px on average) would wall the plot in: they are
  // ticks along the top then, named by the tooltip, until a zoom spreads them out.
  constexpr int kDenseSpacing = 12;
  markers_dense_ = static_cast<int>(marker_columns_.size()) * kDenseSpacing > width;
  for (std::size_t i = 0; i < firsts.size(); ++i) {
    const float x = static_cast<float>(marker_columns_[i]);
    if (markers_dense_) {
      plot_canvas_.Fill(x, y0, x + 1, y0 + 6, colours::kMarker);
      continue;
    }
    plot_canvas_.Fill(x, y0 + line_h + 2, x + 1, y1, colours::kMarker);
    const analysis::Marker* marker = firsts[i];
    const float w = ImGui::CalcTextSize(marker->name.c_str()).x;
    const float lx = std::min(x + 2, x0 + static_cast<float>(width) - w - 2);
    // Beside the last name, and clear of the labels placed before (the limit's, the fragmentation
    // scale's: at 1300 px they ran into "forward" at the top right).
    if (lx > label_end + 6 && lx >= x0 && PlaceLabel({ImVec2(lx, y0 + 1)}, ImVec2(w, line_h), marker->name.c_str())) {
      draw->AddText(ImVec2(lx, y0 + 1), colours::kMarker, marker->name.c_str());
      label_end = lx + w;
      marker_labels_.push_back(marker->name);
      marker_label_rects_.push_back({static_cast<int>(lx), static_cast<int>(y0 + 1), static_cast<int>(lx + w),
                                     static_cast<int>(y0 + 1 + line_h)});
    }
  }
}

std::vector<std::string> TimelinePanel::MarkersNear(float x) const {
  std::vector<std::string> names;
  for (const auto& [at, name] : marker_hits_) {
    if (std::abs(at - x) <= 3 && names.size() < 8) names.push_back(name);
  }
  return names;
}

void TimelinePanel::DrawPlotLabels(float x0, float y0, float y1, float plot_h, int width) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line_h = ImGui::GetTextLineHeight();
  const float right = x0 + static_cast<float>(width);
  // A dark box behind a label: the curves cross it otherwise.
  const auto write = [&](ImVec2 at, ImVec2 size, ImU32 colour, const std::string& text, bool boxed) {
    if (boxed) {
      draw->AddRectFilled(ImVec2(at.x - 2, at.y), ImVec2(at.x + size.x + 2, at.y + size.y), IM_COL32(20, 20, 24, 210));
    }
    draw->AddText(at, colour, text.c_str());
  };
  // The y values where they fit: a short plot (a small window, a large --scale) labels every other line.
  const int step = plot_h / 4 >= line_h + 2 ? 1 : plot_h / 2 >= line_h + 2 ? 2 : 4;
  for (int q = step; q <= 4; q += step) {
    const std::uint64_t v = y_max_ / 4 * static_cast<std::uint64_t>(q);
    const std::string text = FormatBytes(v);
    const ImVec2 size = ImGui::CalcTextSize(text.c_str());
    if (const auto at = PlaceLabel({ImVec2(x0 + 4, RowOf(v, y1, plot_h) + 1)}, size, text.c_str())) {
      write(*at, size, IM_COL32(170, 170, 180, 255), text, true);
    }
  }
  if (plot_h >= 2 * line_h + 4) {
    if (const auto at = PlaceLabel({ImVec2(x0 + 4, y1 - line_h - 1)}, ImGui::CalcTextSize("0"), "0")) {
      write(*at, ImGui::CalcTextSize("0"), IM_COL32(170, 170, 180, 255), "0", false);
    }
  }
  // Right-aligned candidates from the right edge leftwards (a label's width and a gap at a time),
  // each at the given rows: the first free one.
  const auto place_right = [&](const std::string& text, std::initializer_list<float> rows) -> std::optional<ImVec2> {
    const ImVec2 size = ImGui::CalcTextSize(text.c_str());
    for (int shift = 0; shift < 4; ++shift) {
      const float x = right - 4 - size.x - static_cast<float>(shift) * (size.x + 12);
      for (float y : rows) {
        if (const auto at = PlaceLabel({ImVec2(x, y)}, size, text.c_str())) return at;
      }
    }
    return std::nullopt;
  };
  if (fragmentation_drawn_) {  // its scale, at the right: 1 at the top
    const std::string top = "fragmentation 1";
    if (const auto at = place_right(top, {y0 + line_h + 3, y0 + 2 * line_h + 5})) {
      write(*at, ImGui::CalcTextSize(top.c_str()), colours::kFragmentation, top, true);
    }
  }
  if (limit_row_ >= 0) {  // above its line, else below it
    const std::string label = "limit " + FormatBytes(limit_);
    const float y = static_cast<float>(limit_row_);
    if (const auto at = place_right(label, {y - line_h - 1, y + 2})) {
      write(*at, ImGui::CalcTextSize(label.c_str()), colours::kLimit, label, false);
    }
  }
}

}  // namespace fragscope::gui
