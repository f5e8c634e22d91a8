// ToolbarPanel: open a trace, device, colouring, axis; the status line (file, cursor); load errors. (panels.hpp)
#include "panels.hpp"

#include <fmt/format.h>
#include <imgui_stdlib.h>

namespace fragscope::gui {

std::string ToolbarPanel::Draw(const Document* document, Selection& selection, const std::vector<std::string>& recent,
                               const Job& loader) {
  std::string open;
  ImGui::SetNextItemWidth(Px(360));
  const bool entered = ImGui::InputTextWithHint("##path", "trace path (or drop a file on the window)", &path_,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Open") || entered) && !path_.empty()) open = path_;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(Px(160));
  if (ImGui::BeginCombo("##recent", "recent files")) {
    for (const std::string& file : recent) {
      if (ImGui::Selectable(file.c_str())) {
        open = file;
        path_ = file;
      }
    }
    ImGui::EndCombo();
  }
  if (document != nullptr) {
    const auto& devices = document->model->devices();
    if (devices.size() > 1) {
      ImGui::SameLine();
      ImGui::SetNextItemWidth(Px(90));
      const std::string label = fmt::format("device {}", selection.device);
      if (ImGui::BeginCombo("##device", label.c_str())) {
        for (std::uint32_t d : devices) {
          if (ImGui::Selectable(fmt::format("device {}", d).c_str(), d == selection.device)) selection.device = d;
        }
        ImGui::EndCombo();
      }
    }
    ImGui::SameLine();
    int colour = static_cast<int>(selection.colour);
    ImGui::TextUnformatted("colour:");
    ImGui::SameLine();
    ImGui::RadioButton("state", &colour, 0);
    ImGui::SameLine();
    ImGui::RadioButton("tag", &colour, 1);
    ImGui::SameLine();
    ImGui::RadioButton("age", &colour, 2);
    selection.colour = static_cast<ColourMode>(colour);
    ImGui::SameLine();
    ImGui::Checkbox("x by time", &selection.time_axis);
  }
  if (loader.running()) {
    ImGui::SameLine();
    ImGui::ProgressBar(loader.progress(), ImVec2(Px(240), 0), "loading...");
  }
  return open;
}

void ToolbarPanel::DrawStatus(const Document& document, const Selection& selection) {
  const auto& model = *document.model;
  // Events and a cursor are a history's: a state's events only lay its moment out, a message has
  // none (the top bar said "637 events, cursor: event 636" of a snapshot state).
  const bool history = document.kind == traces::EvidenceKind::kHistory;
  const std::string what = history ? fmt::format("{} events", model.event_count())
                           : document.kind == traces::EvidenceKind::kState ? std::string("a state: one moment")
                                                                           : std::string("an error message");
  std::string where = fmt::format("{} ({}, {}, loaded in {:.2f} s)", document.path, document.format, what,
                                  document.load_seconds);
  ImGui::TextUnformatted(where.c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", document.path.c_str());
  status_ = where;
  if (history && model.event_count() > 0) {
    ImGui::SameLine();
    const traces::Event event = model.event(selection.cursor);
    const std::optional<std::uint64_t> step = document.cursor_index.StepAt(selection.cursor);
    const std::string where_step = step ? fmt::format(", step {}", *step) : std::string();
    const std::string cursor = fmt::format("cursor: event {}{}, {}", selection.cursor, where_step,
                                           traces::ToString(event.type));
    ImGui::TextColored(ImVec4(1, 0.9f, 0, 1), "%s", cursor.c_str());
    status_ += " " + cursor;
    // The keys where they fit on the line; a narrow window (or a long path) gets "keys (?)" and the
    // list in its tooltip instead of a clipped line.
    constexpr const char* kKeys = "keys: <- -> event, PgUp/PgDn page, Home/End, [ ] step, o / O next/prev OOM";
    ImGui::SameLine();
    if (ImGui::CalcTextSize(kKeys).x <= ImGui::GetContentRegionAvail().x) {
      ImGui::TextDisabled("%s", kKeys);
    } else {
      ImGui::TextDisabled("keys (?)");
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kKeys);
    }
  }
}

void ToolbarPanel::DrawError(const std::string& load_error) {
  if (load_error.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 100, 100, 255));
  ImGui::TextWrapped("could not open: %s", load_error.c_str());
  ImGui::PopStyleColor();
}

}  // namespace fragscope::gui
