// LiveTablePanel: the live allocations at the cursor, sortable and filtered by tag. (panels.hpp)
#include "panels.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <imgui_stdlib.h>

#include "fragscope/allocator/size.hpp"

namespace fragscope::gui {

namespace {

std::string Hex(std::uint64_t value) { return fmt::format("0x{:x}", value); }

}  // namespace

void LiveTablePanel::Draw(const Document& document, Selection& selection, const analysis::MemoryState& state,
                          std::uint64_t state_version) {
  ImGui::SetNextItemWidth(220);
  if (ImGui::InputTextWithHint("##filter", "filter by tag", &filter_)) dirty_ = true;
  ImGui::SameLine();
  ImGui::Text("%zu live allocations", rows_.size());
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersOuter;
  if (!ImGui::BeginTable("live", 6, kFlags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("address", ImGuiTableColumnFlags_None, 0, 0);
  ImGui::TableSetupColumn("size", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending, 0, 1);
  ImGui::TableSetupColumn("requested", ImGuiTableColumnFlags_PreferSortDescending, 0, 2);
  ImGui::TableSetupColumn("age (events)", ImGuiTableColumnFlags_PreferSortDescending, 0, 3);
  ImGui::TableSetupColumn("tag", ImGuiTableColumnFlags_None, 0, 4);
  ImGui::TableSetupColumn("alloc event", ImGuiTableColumnFlags_NoSort, 0, 5);
  ImGui::TableHeadersRow();
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs != nullptr && specs->SpecsDirty) {
    if (specs->SpecsCount > 0) {
      const ImGuiTableColumnSortSpecs& spec = specs->Specs[0];
      constexpr analysis::LiveSortKey kKeys[] = {analysis::LiveSortKey::kAddress, analysis::LiveSortKey::kSize,
                                                 analysis::LiveSortKey::kRequested, analysis::LiveSortKey::kAge,
                                                 analysis::LiveSortKey::kTag, analysis::LiveSortKey::kAddress};
      key_ = kKeys[std::min<ImGuiID>(spec.ColumnUserID, 5)];
      descending_ = spec.SortDirection == ImGuiSortDirection_Descending;
    }
    specs->SpecsDirty = false;
    dirty_ = true;
  }
  if (dirty_ || rows_version_ != state_version) {
    rows_ = analysis::LiveRows(*document.model, state, filter_, key_, descending_);
    rows_version_ = state_version;
    dirty_ = false;
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const analysis::LiveRow& row = rows_[static_cast<std::size_t>(i)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const bool selected = selection.selected_address == row.chunk.address;
      ImGui::PushID(i);
      if (ImGui::Selectable(Hex(row.chunk.address).c_str(), selected, ImGuiSelectableFlags_SpanAllColumns)) {
        selection.selected_address = row.chunk.address;
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatBytes(row.chunk.size).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatBytes(row.chunk.requested).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(row.age));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row.tag.empty() ? "-" : row.tag.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(row.chunk.alloc_event));
    }
  }
  ImGui::EndTable();
}

}  // namespace fragscope::gui
