// EventListPanel: the selected device's events around the cursor. (panels.hpp)
#include <algorithm>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"
#include "panels.hpp"

namespace fragscope::gui {

void EventListPanel::Draw(const Document& document, Selection& selection) {
  const auto& model = *document.model;
  state_note_.clear();
  if (document.kind == traces::EvidenceKind::kState) {
    // A state's events only lay the moment out (DESIGN.md: never drawn as an invented history):
    // what the evidence is, instead of ~600 rows of "alloc at 0x... ms 0.000".
    rows_.clear();
    cursor_row_ = -1;
    document_ = nullptr;
    const analysis::StateFindings* moment = document.MomentAt(selection.device, selection.cursor);
    state_note_ = moment != nullptr
                      ? fmt::format("A state: {} live block{} on device {} at one moment ({}), not a history of "
                                    "events. The live table and the memory map show them.",
                                    moment->chunks, moment->chunks == 1 ? "" : "s", selection.device, moment->moment)
                      : fmt::format("A state: one moment, not a history of events; device {} has no moment in it.",
                                    selection.device);
    ImGui::TextWrapped("%s", state_note_.c_str());
    return;
  }
  if (model.event_count() == 0) {
    ImGui::TextDisabled("no events");
    return;
  }
  if (document_ != &document || device_ != selection.device || cursor_ != selection.cursor) {
    rows_ = analysis::EventsAround(model, selection.device, selection.cursor, kAround, kAround);
    cursor_row_ = -1;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      if (rows_[i].index == selection.cursor) cursor_row_ = static_cast<int>(i);
    }
    document_ = &document;
    device_ = selection.device;
    cursor_ = selection.cursor;
    scroll_to_cursor_ = true;
  }
  if (cursor_row_ < 0) {
    ImGui::TextDisabled("device %u's events on either side of the cursor (event %llu is another device's); click "
                        "one to move the cursor there",
                        selection.device, static_cast<unsigned long long>(selection.cursor));
  } else {
    ImGui::TextDisabled("device %u's events around the cursor (highlighted); click one to move the cursor there",
                        selection.device);
  }
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable |
                                     ImGuiTableFlags_BordersOuter;
  if (!ImGui::BeginTable("events", 5, kFlags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("event", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("10000000000").x);
  ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("in use after", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("1000.00 MiB ").x);
  ImGui::TableSetupColumn("reserved after", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("1000.00 MiB ").x);
  ImGui::TableSetupColumn("ms", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("100000.000").x);
  ImGui::TableHeadersRow();
  if (scroll_to_cursor_) {
    // Centre the cursor's row (or where it would be) in the list.
    const float row_h = ImGui::GetTextLineHeightWithSpacing();
    int row = cursor_row_;
    if (row < 0) {
      row = static_cast<int>(std::lower_bound(rows_.begin(), rows_.end(), selection.cursor,
                                              [](const analysis::EventRow& r, std::uint64_t e) { return r.index < e; }) -
                             rows_.begin());
    }
    ImGui::SetScrollY(std::max(0.0f, static_cast<float>(row) * row_h - ImGui::GetWindowHeight() / 2));
    scroll_to_cursor_ = false;
  }
  const double t0 = static_cast<double>(model.event(0).time_ns);
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const analysis::EventRow& row = rows_[static_cast<std::size_t>(i)];
      ImGui::TableNextRow();
      if (i == cursor_row_) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(80, 72, 16, 255));
      ImGui::TableNextColumn();
      ImGui::PushID(i);
      if (ImGui::Selectable(std::to_string(row.index).c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
        selection.cursor = row.index;
        selection.follow_cursor = true;
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImU32 colour = ImGui::GetColorU32(ImGuiCol_Text);
      if (row.event.type == traces::EventType::kOom) colour = IM_COL32(255, 120, 120, 255);  // readable on the cursor's row
      if (row.event.type == traces::EventType::kMarker) colour = colours::kMarker;
      ImGui::PushStyleColor(ImGuiCol_Text, colour);
      ImGui::TextUnformatted(row.what.c_str());
      ImGui::PopStyleColor();
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", row.what.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatBytes(row.in_use).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatBytes(row.reserved).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", (static_cast<double>(row.event.time_ns) - t0) / 1e6);
    }
  }
  ImGui::EndTable();
}

}  // namespace fragscope::gui
