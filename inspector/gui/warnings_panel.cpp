// WarningsPanel (panels.hpp): the count in the top bar, the list on click.
#include <fmt/format.h>
#include <imgui.h>

#include "panels.hpp"

namespace fragscope::gui {

namespace {
constexpr ImU32 kAmber = IM_COL32(230, 160, 20, 255);
constexpr ImU32 kAmberHovered = IM_COL32(250, 185, 50, 255);
}  // namespace

void WarningsPanel::DrawBadge(const Document& document) {
  badge_min_ = badge_max_ = ImVec2(0, 0);
  const std::size_t count = document.warnings.size();
  if (count == 0) return;
  ImGui::PushStyleColor(ImGuiCol_Button, kAmber);
  ImGui::PushStyleColor(ImGuiCol_ButtonHovered, kAmberHovered);
  ImGui::PushStyleColor(ImGuiCol_ButtonActive, kAmberHovered);
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(20, 20, 20, 255));
  const std::string label = fmt::format("{} warning{}", count, count == 1 ? "" : "s");
  if (ImGui::SmallButton(label.c_str())) open_ = !open_;
  ImGui::PopStyleColor(4);
  badge_min_ = ImGui::GetItemRectMin();
  badge_max_ = ImGui::GetItemRectMax();
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("the input is not whole or not all of it could be read: click for the list");
  }
}

void WarningsPanel::Draw(const Document& document) {
  rows_drawn_ = 0;
  if (!open_ || document.warnings.empty()) return;
  const ImVec2 size = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowSize(ImVec2(size.x * 0.6f, size.y * 0.4f), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(size.x * 0.2f, size.y * 0.3f), ImGuiCond_FirstUseEver);
  const std::string title = fmt::format("Warnings ({})###warnings", document.warnings.size());
  if (ImGui::Begin(title.c_str(), &open_)) {
    ImGui::TextWrapped("What the reader and the model could not take from %s. Numbers elsewhere "
                       "are computed from what could be read.",
                       document.path.c_str());
    ImGui::Separator();
    if (ImGui::BeginChild("##list")) {
      ImGuiListClipper clipper;
      clipper.Begin(static_cast<int>(document.warnings.size()));
      while (clipper.Step()) {
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
          ImGui::TextWrapped("%s", document.warnings[static_cast<std::size_t>(i)].c_str());
          ++rows_drawn_;
        }
      }
    }
    ImGui::EndChild();
  }
  ImGui::End();
}

}  // namespace fragscope::gui
