// The timeline's active-memory stack (TimelinePanel, panels.hpp): computed on its own thread for the
// view drawn, drawn as bands, the band under the mouse named.
#include <algorithm>
#include <cmath>
#include <memory>

#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/stack_view.hpp"
#include "panels.hpp"
#include "timeline_axis.hpp"

namespace fragscope::gui {

using namespace timeline_axis;

namespace colours {
ImU32 Band(std::size_t index) {
  static constexpr ImU32 kPalette[] = {
      IM_COL32(78, 121, 167, 255),  IM_COL32(242, 142, 43, 255), IM_COL32(89, 161, 79, 255),
      IM_COL32(225, 87, 89, 255),   IM_COL32(118, 183, 178, 255), IM_COL32(237, 201, 72, 255),
      IM_COL32(176, 122, 161, 255), IM_COL32(255, 157, 167, 255), IM_COL32(156, 117, 95, 255),
      IM_COL32(186, 176, 172, 255), IM_COL32(31, 119, 180, 255),  IM_COL32(174, 199, 232, 255),
      IM_COL32(44, 160, 44, 255),   IM_COL32(152, 223, 138, 255), IM_COL32(148, 103, 189, 255),
      IM_COL32(197, 176, 213, 255)};
  return kPalette[index % (sizeof(kPalette) / sizeof(kPalette[0]))];
}
}  // namespace colours

void TimelinePanel::RefreshStack(const Document& document, const Selection& selection, int width) {
  const StackKey want{&document, selection.device, selection.view.begin, selection.view.end, width, selection.time_axis};
  if (stack_job_.running()) return;  // the next frame looks again
  if (stack_job_.finished() && stack_job_result_ != nullptr && stack_job_key_ == want) {
    stack_ = std::move(*stack_job_result_);
    stack_job_result_.reset();
    stack_valid_ = true;
    return;
  }
  // Compute the stack of this view on the job's thread; the model is read-only and shared.
  stack_job_key_ = want;
  auto result = std::make_shared<analysis::ActiveMemoryStack>();
  stack_job_result_ = result;
  std::shared_ptr<const analysis::TimelineModel> model = document.model;
  std::vector<std::uint64_t> bounds = selection.time_axis ? bounds_ : std::vector<std::uint64_t>{};
  const auto begin = static_cast<std::uint64_t>(std::floor(selection.view.begin));
  const auto end = static_cast<std::uint64_t>(std::ceil(selection.view.end));
  const std::uint32_t device = selection.device;
  const auto columns = static_cast<std::uint32_t>(std::max(1, width));
  stack_job_.Start("active memory", [=, bounds = std::move(bounds)](Job&) {
    *result = bounds.empty() ? analysis::StackActiveMemory(*model, device, begin, end, columns, kBands)
                             : analysis::StackActiveMemory(*model, device, bounds, kBands);
  });
}

void TimelinePanel::DrawStack(float x0, float y1, float plot_h, int width) {
  const auto y_of = [&](std::uint64_t v) {
    return static_cast<float>(std::round(static_cast<double>(y1) - static_cast<double>(v) / static_cast<double>(y_max_) * plot_h));
  };
  // One open run per band (slot 0: the rest): the columns so far with the same rows, drawn as one
  // rectangle when the rows change, so a band that sits still costs one rectangle, not one per pixel.
  struct Run {
    int start = -1;
    float top = 0, bottom = 0;
  };
  std::vector<Run> runs(stack_.bands.size() + 1);
  const auto colour_of = [](std::size_t slot) { return slot == 0 ? colours::kRestBand : colours::Band(slot - 1); };
  const auto flush = [&](std::size_t slot, int end_column) {
    Run& run = runs[slot];
    if (run.start >= 0 && run.bottom > run.top) {
      plot_canvas_.Fill(x0 + static_cast<float>(run.start), run.top, x0 + static_cast<float>(end_column), run.bottom,
                        colour_of(slot));
    }
    run.start = -1;
  };
  const int columns = std::min(width, static_cast<int>(stack_.column_event.size()));
  for (int c = 0; c < columns; ++c) {
    const auto column = static_cast<std::size_t>(c);
    const std::uint64_t event = stack_.column_event[column];
    std::uint64_t below = 0;
    for (std::size_t slot = 0; slot < runs.size(); ++slot) {
      std::uint64_t bytes = 0;
      if (slot == 0) {
        bytes = stack_.Rest(column);
      } else if (stack_.bands[slot - 1].LiveAfter(event)) {
        bytes = stack_.bands[slot - 1].chunk.size;
      }
      const float bottom = y_of(below), top = y_of(below + bytes);
      below += bytes;
      Run& run = runs[slot];
      if (run.start >= 0 && (run.top != top || run.bottom != bottom)) flush(slot, c);
      if (bytes == 0 || bottom <= top) continue;  // absent, or under a pixel: drawn by its neighbours
      if (run.start < 0) run = {c, top, bottom};
    }
  }
  for (std::size_t slot = 0; slot < runs.size(); ++slot) flush(slot, columns);
}

void TimelinePanel::BandTooltip(const Document& document, const Selection& selection, std::size_t column,
                                std::uint64_t bytes) {
  hovered_band_ = stack_.BandAt(column, bytes);
  if (hovered_band_ == -2) return;
  ImGui::Separator();
  if (hovered_band_ == -1) {
    ImGui::Text("%s in other allocations (none of the %zu largest live at this view's peak)",
                FormatBytes(stack_.Rest(column)).c_str(), stack_.bands.size());
    return;
  }
  const analysis::ActiveBand& band = stack_.bands[static_cast<std::size_t>(hovered_band_)];
  const auto& model = *document.model;
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(colours::Band(static_cast<std::size_t>(hovered_band_))),
                     "%s (requested %s)%s%s", FormatBytes(band.chunk.size).c_str(),
                     FormatBytes(band.chunk.requested).c_str(), band.chunk.tag == traces::kNoTag ? "" : ", ",
                     band.chunk.tag == traces::kNoTag ? "" : model.TagName(band.chunk.tag).c_str());
  const bool freed = band.free_event < model.event_count() && band.free_event < static_cast<std::uint64_t>(-1) &&
                     PositionOf(document, selection.time_axis, band.free_event) < selection.view.end;
  if (freed) {
    ImGui::Text("allocated at event %llu, freed at event %llu", static_cast<unsigned long long>(band.chunk.alloc_event),
                static_cast<unsigned long long>(band.free_event));
  } else {
    ImGui::Text("allocated at event %llu, still live at the view's end",
                static_cast<unsigned long long>(band.chunk.alloc_event));
  }
  if (const std::string* stack = document.StackOf(band.chunk.alloc_event)) {
    const analysis::StackView view = analysis::ViewStack(*stack, false, 3);
    for (const std::string& frame : view.frames) ImGui::TextDisabled("  %s", frame.c_str());
  }
  ImGui::TextDisabled("(click: cursor there, the allocation selected)");
}

}  // namespace fragscope::gui
