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
  requested_known_ = !document.RequestedUnknown(selection.device, selection.cursor);
  ImGui::SetNextItemWidth(Px(150));
  int grouping = static_cast<int>(grouping_);
  if (ImGui::Combo("##group", &grouping, "each allocation\0by tag\0by call site\0")) {
    SetGrouping(static_cast<Grouping>(grouping));
  }
  ImGui::SameLine();
  if (grouping_ != Grouping::kNone) {
    if (dirty_ || rows_version_ != state_version) {
      const analysis::StackOf stack_of = [&document](std::uint64_t event) -> std::string_view {
        const std::string* stack = document.StackOf(event);
        return stack == nullptr ? std::string_view() : std::string_view(*stack);
      };
      groups_ = analysis::GroupLive(*document.model, state,
                                    grouping_ == Grouping::kTag ? analysis::LiveGroupKey::kTag
                                                                : analysis::LiveGroupKey::kFrame,
                                    stack_of);
      groups_in_use_ = state.in_use;
      rows_version_ = state_version;
      dirty_ = false;
    }
    DrawGroups();
    return;
  }
  ImGui::SetNextItemWidth(Px(220));
  if (ImGui::InputTextWithHint("##filter", "filter by tag", &filter_)) dirty_ = true;
  ImGui::SameLine();
  ImGui::Text("%zu live allocations", rows_.size());
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersOuter;
  // A state's events only lay its moment out: an age in events and an allocating event would be
  // numbers of that invented order, so its table has neither column. A dump that gives no requested
  // sizes shows "-" for them, not the chunk sizes it was laid out with.
  const bool is_state = document.kind == traces::EvidenceKind::kState;
  columns_ = is_state ? std::vector<std::string>{"address", "size", "requested", "tag"}
                   : std::vector<std::string>{"address", "size", "requested", "age (events)", "tag", "alloc event"};
  if (!ImGui::BeginTable(is_state ? "live state" : "live", static_cast<int>(columns_.size()), kFlags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  // Numbers get the width they need; the tag (often a long module path) gets the rest (issue 17,
  // item 4: tags were cut to a sixth of the table).
  const auto fixed = [](const char* widest) { return ImGui::CalcTextSize(widest).x + Px(8); };
  ImGui::TableSetupColumn("address", ImGuiTableColumnFlags_WidthFixed, fixed("0x7f0000000000"), 0);
  ImGui::TableSetupColumn("size", ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_DefaultSort |
                                      ImGuiTableColumnFlags_PreferSortDescending, fixed("1023.99 MiB"), 1);
  ImGui::TableSetupColumn("requested", ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_PreferSortDescending,
                          fixed("1023.99 MiB"), 2);
  if (!is_state) {
    ImGui::TableSetupColumn("age (events)", ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_PreferSortDescending,
                            fixed("age (events)"), 3);
  }
  ImGui::TableSetupColumn("tag", ImGuiTableColumnFlags_WidthStretch, 0, 4);
  if (!is_state) {
    ImGui::TableSetupColumn("alloc event", ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_NoSort,
                            fixed("alloc event"), 5);
  }
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
      ImGui::TextUnformatted(requested_known_ ? FormatBytes(row.chunk.requested).c_str() : "-");
      if (!is_state) {
        ImGui::TableNextColumn();
        ImGui::Text("%llu", static_cast<unsigned long long>(row.age));
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row.tag.empty() ? "-" : row.tag.c_str());
      if (!row.tag.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", row.tag.c_str());
      if (!is_state) {
        ImGui::TableNextColumn();
        ImGui::Text("%llu", static_cast<unsigned long long>(row.chunk.alloc_event));
      }
    }
  }
  ImGui::EndTable();
}

// One row per group, largest first: what holds the memory at the cursor. Clicking a tag's row
// lists its allocations (the table, filtered by that tag).
void LiveTablePanel::DrawGroups() {
  ImGui::Text("%zu groups", groups_.size());
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable |
                                     ImGuiTableFlags_BordersOuter;
  if (!ImGui::BeginTable("groups", 5, kFlags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(grouping_ == Grouping::kTag ? "tag" : "call site (the user's innermost frame)",
                          ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("allocations");
  ImGui::TableSetupColumn("size");
  ImGui::TableSetupColumn("requested");
  ImGui::TableSetupColumn("share of in use");
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(groups_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const analysis::LiveGroup& group = groups_[static_cast<std::size_t>(i)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(i);
      if (ImGui::Selectable(group.name.c_str(), false, ImGuiSelectableFlags_SpanAllColumns) &&
          grouping_ == Grouping::kTag && group.name != analysis::kUntagged) {
        filter_ = group.name;
        SetGrouping(Grouping::kNone);
      }
      if (ImGui::IsItemHovered() && grouping_ == Grouping::kFrame) ImGui::SetTooltip("%s", group.name.c_str());
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(group.allocations));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatBytes(group.bytes).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(requested_known_ ? FormatBytes(group.requested).c_str() : "-");
      ImGui::TableNextColumn();
      ImGui::Text("%.1f %%", groups_in_use_ == 0 ? 0.0 : 100.0 * static_cast<double>(group.bytes) /
                                                            static_cast<double>(groups_in_use_));
    }
  }
  ImGui::EndTable();
}

}  // namespace fragscope::gui
