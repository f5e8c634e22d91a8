// The address space at the cursor, laid out by analysis::LayoutMemoryMap: one cell per pixel, row
// after row; every hole keeps at least one free pixel whatever the zoom.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/stack_view.hpp"
#include "panels.hpp"

namespace fragscope::gui {
namespace {

constexpr std::size_t kStackFrames = 12;  // frames of an allocating stack shown on hover

ImU32 Hue(std::uint32_t key) {
  std::uint32_t h = key * 2654435761u;
  h ^= h >> 15;
  float r = 0, g = 0, b = 0;
  ImGui::ColorConvertHSVtoRGB(static_cast<float>(h % 360) / 360.0f, 0.55f, 0.85f, r, g, b);
  // Keep clear of the free colour (green): shift greens to cyan.
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g * 0.8f, b, 1));
}

}  // namespace

ImU32 MemoryMapPanel::ColourOf(const Document& document, const Selection& selection,
                               const analysis::MemoryState& state, const analysis::MapItem& item) const {
  (void)document;
  if (item.kind == analysis::MapItemKind::kHole) return colours::kFree;
  if (item.kind == analysis::MapItemKind::kUnlisted) return colours::kUnlisted;
  const analysis::LiveChunk& chunk = item.region < state.regions.size()
                                         ? state.regions[item.region].chunks[item.index]
                                         : state.outside_regions[item.index];
  switch (selection.colour) {
    case ColourMode::kTag:
      return Hue(chunk.tag);
    case ColourMode::kAge: {
      const double age = static_cast<double>(state.event_index - std::min(state.event_index, chunk.alloc_event));
      const double span = static_cast<double>(state.event_index) + 2;
      const double f = std::log1p(age) / std::log1p(span);  // 0 young .. 1 old
      const auto v = static_cast<int>(255 - 170 * f);
      return IM_COL32(v, static_cast<int>(v * 0.55), 60, 255);
    }
    case ColourMode::kState:
      break;
  }
  return colours::kUsed;
}

void MemoryMapPanel::DrawSelected(const Document& document, Selection& selection,
                                  const analysis::MemoryState& state, std::uint64_t state_version) {
  if (!selection.selected_address) {
    ImGui::TextDisabled("click an allocation to select it");
    return;
  }
  const analysis::LiveChunk* chunk = nullptr;
  for (const auto& region : state.regions) {
    for (const auto& c : region.chunks) {
      if (c.address == *selection.selected_address) chunk = &c;
    }
  }
  for (const auto& c : state.outside_regions) {
    if (c.address == *selection.selected_address) chunk = &c;
  }
  if (chunk == nullptr) {
    ImGui::TextDisabled("selected 0x%llx: not live at this event", static_cast<unsigned long long>(*selection.selected_address));
    return;
  }
  if (free_version_ != state_version || free_address_ != chunk->address) {
    // Its free: a bounded look ahead, once per selection and cursor.
    free_event_ = analysis::FindFreeEvent(*document.model, selection.device, chunk->address, state.event_index,
                                          kFreeLookahead, &free_searched_to_);
    free_version_ = state_version;
    free_address_ = chunk->address;
  }
  const std::string requested = document.RequestedUnknown(selection.device, selection.cursor)
                                    ? std::string("-")
                                    : FormatBytes(chunk->requested);
  const std::string tag = chunk->tag == traces::kNoTag ? "no tag" : document.model->TagName(chunk->tag);
  free_button_ = {};
  if (document.kind == traces::EvidenceKind::kState) {
    // A state's events only lay the moment out: no allocation or free to go to.
    const std::string line = fmt::format("selected {:#x}, {} (requested {}); {}", chunk->address,
                                         FormatBytes(chunk->size), requested, tag);
    ImGui::TextUnformatted(line.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", line.c_str());
    return;
  }
  // The buttons first: the line after them may run past the panel, they may not (issue 17, item 4).
  if (ImGui::SmallButton("go to alloc")) {
    selection.cursor = chunk->alloc_event;
    selection.follow_cursor = true;
  }
  if (free_event_) {
    ImGui::SameLine();
    if (ImGui::SmallButton("go to free")) {
      selection.cursor = *free_event_;
      selection.follow_cursor = true;
    }
    free_button_ = {static_cast<int>(ImGui::GetItemRectMin().x), static_cast<int>(ImGui::GetItemRectMin().y),
                    static_cast<int>(ImGui::GetItemRectMax().x), static_cast<int>(ImGui::GetItemRectMax().y)};
  }
  ImGui::SameLine();
  std::string freed;
  if (free_event_) {
    freed = fmt::format("freed at event {}", *free_event_);
  } else if (free_searched_to_ >= document.model->event_count()) {
    freed = "never freed (live at the end of the trace)";
  } else {
    freed = fmt::format("not freed in the next {} events", kFreeLookahead);
  }
  const std::string line = fmt::format("selected {:#x}, {} (requested {}), allocated at event {}, {}; {}", chunk->address,
                                       FormatBytes(chunk->size), requested, chunk->alloc_event, freed, tag);
  ImGui::TextUnformatted(line.c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", line.c_str());
}

void MemoryMapPanel::DrawHeader(const Document& document, const analysis::MemoryState& state,
                                Document::FreeMemory free_memory) {
  std::uint64_t holes = 0;
  for (const auto& region : state.regions) holes += region.holes.size();
  const std::string load = document.model != nullptr && document.RequestedUnknown(state.device, state.event_index)
                               ? std::string("unknown (the dump gives no requested sizes)")
                               : FormatBytes(state.live_requested);
  // A state is one moment, named as its evidence names it; a history's moment is an event.
  const analysis::StateFindings* moment =
      document.model != nullptr ? document.MomentAt(state.device, state.event_index) : nullptr;
  const std::string when = moment != nullptr ? fmt::format("device {}, {}", state.device, moment->moment)
                                             : fmt::format("event {}", state.event_index);
  if (free_memory == Document::FreeMemory::kNoRegions && state.regions.empty()) {
    // No regions recorded (a profiler trace, an RMM log): "0 regions, reserved 0 B" would read as
    // an empty device, and allocations stretched over the whole map as a full one.
    header_ = fmt::format("{}: in use {}, LOAD {}; the evidence records no regions, so reserved memory and its holes "
                          "are unknown. Below: the live allocations by address, end to end, on a scale of the most "
                          "ever in use ({}, at least {} a cell); what lies between them is unknown",
                          when, FormatBytes(state.in_use), load,
                          FormatBytes(document.model->Metrics(state.device).peak_in_use),
                          FormatBytes(analysis::kMinCellBytes));
  } else if (free_memory == Document::FreeMemory::kUnlisted) {
    // A cut dump: the ranges no listed chunk covers (the state's holes, free_in_regions bytes of
    // them) were left out of the log, in use or free.
    header_ = fmt::format("{}: {} region(s) listed ({}), in use at least {}, LOAD {}; {} in {} range(s) not listed in "
                          "the dump (its chunk list is cut: not known to be free)",
                          when, state.regions.size(), FormatBytes(state.reserved), FormatBytes(state.in_use), load,
                          FormatBytes(state.free_in_regions), holes);
  } else {
    header_ = fmt::format("{}: {} regions, reserved {}, in use {}, LOAD {}, {} holes ({} free, largest {})", when,
                          state.regions.size(), FormatBytes(state.reserved), FormatBytes(state.in_use), load, holes,
                          FormatBytes(state.free_in_regions), FormatBytes(state.largest_hole));
  }
  // Wrapped: in a compare side (half the width) the line did not fit and lost its end (issue 17, item 3).
  ImGui::TextWrapped("%s", header_.c_str());
  if (free_memory == Document::FreeMemory::kUnlisted) {
    Swatch(colours::kUsed);
    ImGui::TextUnformatted("in use");
    ImGui::SameLine();
    Swatch(colours::kUnlisted);
    ImGui::TextUnformatted("not listed in the dump (in use or free: not known)");
  }
}

void MemoryMapPanel::Draw(const Document& document, Selection& selection, const analysis::MemoryState& state,
                          std::uint64_t state_version, float height) {
  if (!document.messages.empty()) {
    // An error message has numbers, no layout: an empty map would read like an empty device.
    ImGui::TextWrapped("An error message has no memory layout to draw: its numbers and their arithmetic are "
                       "in the out-of-memory panel.");
    return;
  }
  const Document::FreeMemory free_memory =
      document.model != nullptr ? document.FreeMemoryAt(state.device, state.event_index) : Document::FreeMemory::kKnown;
  DrawHeader(document, state, free_memory);
  row_height_ = static_cast<int>(Px(kRowHeight));
  row_gap_ = static_cast<int>(Px(kRowGap));
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float full = height > 0 ? height : avail.y;
  const int width = std::max(16, static_cast<int>(avail.x));
  const float info_h = ImGui::GetFrameHeightWithSpacing();  // the selected chunk's line below
  const int rows = std::max(1, static_cast<int>(full - info_h) / row_pitch());
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = std::floor(origin.x), y0 = std::floor(origin.y);
  canvas_rect_ = {static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x0) + width,
                  static_cast<int>(y0) + rows * row_pitch()};
  const auto cells = static_cast<std::uint32_t>(width * rows);
  if (layout_version_ != state_version || layout_cells_ != cells) {
    analysis::MapOptions options;
    options.holes_unlisted = free_memory == Document::FreeMemory::kUnlisted;
    if (free_memory == Document::FreeMemory::kNoRegions) {
      options.min_bytes = analysis::AxisWithoutRegions(document.model->Metrics(state.device).peak_in_use, cells);
    }
    layout_ = analysis::LayoutMemoryMap(state, cells, options);
    layout_version_ = state_version;
    layout_cells_ = cells;
  }
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // What the image shows; the same as last frame (the cursor and the selection did not move): the
  // image is shown again, nothing filled or uploaded.
  const CanvasKey key{&document, state_version, cells, width, rows, row_height_, row_gap_, selection.colour,
                      selection.selected_address};
  if (!(key == canvas_key_ && canvas_.Reuse(draw, x0, y0, width, rows * row_pitch()))) {
    canvas_key_ = key;
    // The cells go into one image (pixel_canvas.hpp): a fragmented state is thousands of runs, each a
    // rectangle that a software renderer (Mesa llvmpipe under Xvfb) sets up at a microsecond apiece.
    // Between the rows, the window's own colour.
    const ImVec4 gap = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    canvas_.Begin(draw, x0, y0, width, rows * row_pitch(), ImGui::ColorConvertFloat4ToU32(ImVec4(gap.x, gap.y, gap.z, 1)));
    std::vector<ImU32> item_colour(layout_.items.size());
    for (std::size_t i = 0; i < layout_.items.size(); ++i) {
      item_colour[i] = ColourOf(document, selection, state, layout_.items[i]);
    }
    for (int r = 0; r < rows; ++r) {
      const float ry = y0 + static_cast<float>(r * row_pitch() + row_gap_);
      int run_start = 0;
      ImU32 run_colour = 0;
      bool run_open = false;
      for (int x = 0; x <= width; ++x) {
        ImU32 colour = 0;
        bool has = false;
        if (x < width) {
          const analysis::MapCell& cell = layout_.cells[static_cast<std::size_t>(r * width + x)];
          if (cell.kind != analysis::CellKind::kEmpty) {
            colour = cell.kind == analysis::CellKind::kUsed   ? item_colour[cell.item]
                     : cell.kind == analysis::CellKind::kFree ? colours::kFree
                                                              : colours::kUnlisted;
            has = true;
          }
        }
        if (run_open && (!has || colour != run_colour)) {
          canvas_.Fill(x0 + static_cast<float>(run_start), ry, x0 + static_cast<float>(x), ry + static_cast<float>(row_height_),
                       run_colour);
          run_open = false;
        }
        if (has && !run_open) {
          run_open = true;
          run_start = x;
          run_colour = colour;
        }
      }
    }
    // Region starts: a tick in the gap above the row.
    for (std::uint64_t offset : layout_.region_offsets) {
      if (layout_.total_bytes == 0) break;
      const std::uint32_t cell = layout_.CellOf(offset);
      const int r = static_cast<int>(cell) / width, x = static_cast<int>(cell) % width;
      const float ry = y0 + static_cast<float>(r * row_pitch());
      canvas_.Fill(x0 + static_cast<float>(x), ry, x0 + static_cast<float>(x) + 1, ry + static_cast<float>(row_gap_),
                   IM_COL32(255, 255, 255, 255));
    }
    // The selected chunk, outlined on its cells.
    if (selection.selected_address && layout_.total_bytes > 0) {
      for (const auto& item : layout_.items) {
        if (item.kind != analysis::MapItemKind::kChunk || item.address != *selection.selected_address) continue;
        const std::uint32_t c0 = layout_.CellOf(item.offset), c1 = layout_.CellOf(item.offset + item.size - 1);
        for (std::uint32_t c = c0; c <= c1; ++c) {
          const int r = static_cast<int>(c) / width, x = static_cast<int>(c) % width;
          const float ry = y0 + static_cast<float>(r * row_pitch());
          canvas_.Fill(x0 + static_cast<float>(x), ry + 1, x0 + static_cast<float>(x) + 1, ry + static_cast<float>(row_gap_) - 1,
                       colours::kSelected);
        }
        break;
      }
    }
    canvas_.Finish();
  }
  ImGui::SetCursorScreenPos(ImVec2(x0, y0));
  ImGui::InvisibleButton("##map", ImVec2(static_cast<float>(width), static_cast<float>(rows * row_pitch())));
  const bool map_hovered = ImGui::IsItemHovered();
  DrawSelected(document, selection, state, state_version);
  if (map_hovered && layout_.total_bytes > 0) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int x = static_cast<int>(mouse.x - x0), r = static_cast<int>(mouse.y - y0) / row_pitch();
    const std::size_t c = static_cast<std::size_t>(r * width + x);
    if (x >= 0 && x < width && r >= 0 && r < rows && c < layout_.cells.size() &&
        layout_.cells[c].item != analysis::MapCell::kNoItem) {
      const analysis::MapItem& item = layout_.items[layout_.cells[c].item];
      ImGui::BeginTooltip();
      if (item.kind != analysis::MapItemKind::kChunk) {
        ImGui::Text(item.kind == analysis::MapItemKind::kHole ? "free hole at 0x%llx"
                                                              : "not listed in the dump, at 0x%llx",
                    static_cast<unsigned long long>(item.address));
        ImGui::Text("size %s (%llu B)", FormatBytes(item.size).c_str(), static_cast<unsigned long long>(item.size));
        if (item.kind == analysis::MapItemKind::kUnlisted) {
          ImGui::TextDisabled("the dump's chunk list is cut: in use or free, not known");
        }
      } else {
        const analysis::LiveChunk& chunk = item.region < state.regions.size()
                                               ? state.regions[item.region].chunks[item.index]
                                               : state.outside_regions[item.index];
        ImGui::Text("allocation at 0x%llx", static_cast<unsigned long long>(chunk.address));
        ImGui::Text("size %s, requested %s", FormatBytes(chunk.size).c_str(),
                    document.RequestedUnknown(state.device, state.event_index) ? "unknown"
                                                                               : FormatBytes(chunk.requested).c_str());
        ImGui::Text("tag %s", chunk.tag == traces::kNoTag ? "(none)" : document.model->TagName(chunk.tag).c_str());
        if (document.kind != traces::EvidenceKind::kState) {  // a state's events only lay it out
          ImGui::Text("allocated at event %llu (%llu events ago), stream %llu",
                      static_cast<unsigned long long>(chunk.alloc_event),
                      static_cast<unsigned long long>(state.event_index - std::min(state.event_index, chunk.alloc_event)),
                      static_cast<unsigned long long>(chunk.stream));
        }
        if (const std::string* stack = document.StackOf(chunk.alloc_event)) {
          // The allocating call stack: the user's frames, innermost first; Shift shows every frame.
          ImGui::Separator();
          const analysis::StackView view = analysis::ViewStack(*stack, ImGui::GetIO().KeyShift, kStackFrames);
          for (const std::string& frame : view.frames) ImGui::TextUnformatted(frame.c_str());
          if (view.hidden > 0) {
            ImGui::TextDisabled("%zu more frame%s (%s); hold Shift for all", view.hidden, view.hidden == 1 ? "" : "s",
                                view.user_frames ? "framework internals" : "deeper");
          }
        }
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) selection.selected_address = chunk.address;
      }
      if (item.region < state.regions.size()) {
        const auto& region = state.regions[item.region];
        ImGui::TextDisabled("region %u at 0x%llx, %s", item.region, static_cast<unsigned long long>(region.address),
                            FormatBytes(region.size).c_str());
      } else {
        ImGui::TextDisabled("outside any recorded region");
      }
      ImGui::EndTooltip();
    }
  }
}

}  // namespace fragscope::gui
