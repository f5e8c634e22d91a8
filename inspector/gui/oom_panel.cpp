// OomPanel: the OOM at or before the cursor in plain words, the request against the nearest holes. (panels.hpp)
#include "panels.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/stack_view.hpp"

namespace fragscope::gui {

namespace {

// The inspector's font (ImGui's built-in ProggyClean) has ASCII only: the signs the diagnoses write
// in (−, ≤, ×, …) are drawn as their ASCII spellings rather than as "?".
std::string ForFont(const std::string& text) {
  static constexpr std::pair<std::string_view, std::string_view> kSigns[] = {
      {"\u2212", "-"}, {"\u2264", "<="}, {"\u2265", ">="}, {"\u00d7", "x"}, {"\u2026", "..."},
      {"\u00b1", "+/-"}, {"\u2013", "-"}, {"\u2014", "-"}, {"\u2248", "~"}, {"\u2192", "->"}};
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    for (const auto& [sign, ascii] : kSigns) {
      if (text.compare(i, sign.size(), sign) == 0) {
        out += ascii;
        i += sign.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

// As `fragscope report` quotes a message: its start, enough to recognize it.
constexpr std::size_t kQuotedChars = 300;

void Wrapped(const char* prefix, const std::string& text) {
  ImGui::TextWrapped("%s%s", prefix, ForFont(text).c_str());
}

}  // namespace

void OomPanel::DrawMessages(const Document& document) {
  messages_drawn_ = 0;
  for (std::size_t i = 0; i < document.messages.size(); ++i) {
    const auto& [message, diagnosis] = document.messages[i];
    if (i > 0) ImGui::Separator();
    ImGui::Text("Error message %zu of %zu, line %zu (%s%s%s)", i + 1, document.messages.size(), message.line,
                message.framework.c_str(), message.device.empty() ? "" : ", ", message.device.c_str());
    if (!message.repeat_lines.empty()) {
      ImGui::Text("Printed %zu times (again from line %zu): one failure, reported again",
                  message.repeat_lines.size() + 1, message.repeat_lines.front());
    }
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 120, 120, 255));
    ImGui::TextWrapped("Cause: %s", std::string(traces::ToString(diagnosis.cause)).c_str());
    ImGui::PopStyleColor();
    Wrapped("", diagnosis.explanation);
    // The message as printed and the numbers read from it, so that the arithmetic's letters (R, T,
    // F, A, Rv, ...) are defined here as they are in `fragscope report`.
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    const std::string quoted = message.text.size() > kQuotedChars ? message.text.substr(0, kQuotedChars) + "..."
                                                                  : message.text;
    Wrapped("\"", quoted + "\"");
    ImGui::PopStyleColor();
    if (!diagnosis.numbers.empty() &&
        ImGui::BeginTable("numbers", 4, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) {
      for (const char* header : {"number", "bytes", "printed", "what"}) ImGui::TableSetupColumn(header);
      ImGui::TableHeadersRow();
      for (const analysis::MessageNumber& n : diagnosis.numbers) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(n.symbol.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(traces::FormatBytes(n.bytes).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(n.printed.empty() ? "(derived)" : ForFont(n.printed).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ForFont(n.name).c_str());
      }
      ImGui::EndTable();
    }
    for (const std::string& line : diagnosis.arithmetic) {
      ImGui::Bullet();
      Wrapped("", line);
    }
    for (const std::string& line : diagnosis.notes) Wrapped("Note: ", line);
    for (const std::string& line : diagnosis.advice) Wrapped("Advice: ", line);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    for (const std::string& line : diagnosis.fragscope_advice) Wrapped("", line);
    ImGui::PopStyleColor();
    ++messages_drawn_;
  }
}

void OomPanel::Draw(const Document& document, Selection& selection) {
  bars_rect_ = {};
  messages_drawn_ = 0;
  if (!document.messages.empty()) {
    shown_ = static_cast<std::size_t>(-1);
    DrawMessages(document);
    return;
  }
  const auto& ooms = document.OomsOf(selection.device);
  if (ooms.empty()) {
    shown_ = static_cast<std::size_t>(-1);
    ImGui::TextWrapped("No out-of-memory event on device %u in this trace.", selection.device);
    return;
  }
  // The OOM at or after the cursor; past the last one, the last one.
  std::size_t shown = ooms.size() - 1;
  for (std::size_t i = 0; i < ooms.size(); ++i) {
    if (ooms[i].event_index >= selection.cursor) {
      shown = i;
      break;
    }
  }
  shown_ = shown;
  const analysis::OomDiagnosis& oom = ooms[shown];
  const auto& n = oom.report.numbers;
  if (const analysis::StateFindings* moment = document.MomentAt(selection.device, oom.event_index)) {
    // A state's OOM has no event position (`fragscope report` gives none): it is its moment's.
    ImGui::Text("OOM %zu of %zu, %s", shown + 1, ooms.size(), moment->moment.c_str());
  } else {
    ImGui::Text("OOM %zu of %zu, at event %llu", shown + 1, ooms.size(), static_cast<unsigned long long>(oom.event_index));
    ImGui::SameLine();
    if (ImGui::SmallButton("go to")) {
      selection.cursor = oom.event_index;
      selection.follow_cursor = true;
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("next (o)")) {
      selection.cursor = document.cursor_index.NextOom(selection.cursor);
      selection.follow_cursor = true;
    }
  }
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 120, 120, 255));
  ImGui::TextWrapped("Cause: %s", std::string(traces::ToString(n.cause)).c_str());
  ImGui::PopStyleColor();
  ImGui::TextWrapped("%s", oom.report.explanation.c_str());
  if (!oom.framework_advice.empty()) {
    ImGui::TextWrapped("In %s: %s", oom.framework_advice.framework.c_str(), oom.framework_advice.advice.c_str());
  }
  if (!oom.report.suggestion.empty()) ImGui::TextWrapped("Suggestion: %s", oom.report.suggestion.c_str());
  if (document.min_limit) {
    ImGui::TextWrapped("Smallest limit at which the recorded policy runs the whole trace: %s (peak LOAD %s).",
                       FormatBytes(*document.min_limit).c_str(),
                       FormatBytes(document.model->Metrics(selection.device).peak_load).c_str());
  } else if (!document.min_limit_error.empty()) {
    ImGui::TextDisabled("No minimal limit: %s", document.min_limit_error.c_str());
  } else {
    ImGui::TextDisabled("Minimal limit: computing by replay...");
  }
  // Only the numbers the evidence gave (OomRecord::present): an unknown limit is no "limit 0 B".
  std::string numbers;
  const std::pair<const char*, std::pair<traces::OomField, std::uint64_t>> rows[] = {
      {"request", {traces::kOomRequest, n.request}},
      {"rounded", {traces::kOomRounded, n.rounded}},
      {"limit", {traces::kOomLimit, n.limit}},
      {"reserved", {traces::kOomReserved, n.reserved}},
      {"in use", {traces::kOomInUse, n.in_use}},
      {"free in regions", {traces::kOomFreeInRegions, n.free_in_regions}},
      {"largest free", {traces::kOomLargestFree, n.largest_free}},
      {"headroom", {traces::kOomHeadroom, n.headroom}}};
  for (const auto& [name, number] : rows) {
    if (!n.Has(number.first)) continue;
    if (!numbers.empty()) numbers += ", ";
    numbers += std::string(name) + " " + FormatBytes(number.second);
  }
  ImGui::TextWrapped("%s", numbers.c_str());
  // Where the failed request was made, where the evidence keeps stacks (PyTorch snapshots).
  stack_frames_ = 0;
  if (const std::string* stack = document.StackOf(oom.event_index)) {
    const analysis::StackView view = analysis::ViewStack(*stack, false, 8);
    ImGui::TextUnformatted("Requested at:");
    for (const std::string& frame : view.frames) ImGui::BulletText("%s", frame.c_str());
    if (view.hidden > 0) ImGui::TextDisabled("(%zu more frames not shown)", view.hidden);
    stack_frames_ = view.frames.size();
  }

  // The request against the holes nearest in size: does any come close?
  ImGui::Separator();
  ImGui::TextUnformatted(oom.nearest_holes.empty() ? "The request (red):"
                                                   : "The request (red) against the holes nearest in size (green):");
  const std::uint64_t want = n.rounded != 0 ? n.rounded : n.request;
  std::uint64_t top = std::max<std::uint64_t>(want, 1);
  for (const auto& hole : oom.nearest_holes) top = std::max(top, hole.size);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = std::floor(origin.x), y0 = std::floor(origin.y);
  const float width = std::max(60.0f, ImGui::GetContentRegionAvail().x - 150);
  const float bar_h = Px(14), pitch = Px(18);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  auto bar = [&](int row, std::uint64_t size, ImU32 colour, const std::string& label) {
    const float y = y0 + pitch * static_cast<float>(row);
    const float w = std::max(1.0f, std::floor(static_cast<float>(static_cast<double>(size) / static_cast<double>(top)) * width));
    draw->AddRectFilled(ImVec2(x0, y), ImVec2(x0 + w, y + bar_h), colour);
    draw->AddText(ImVec2(x0 + width + 6, y), IM_COL32(210, 210, 210, 255), label.c_str());
  };
  bar(0, want, colours::kRequest, "request " + FormatBytes(want));
  int row = 1;
  for (const auto& hole : oom.nearest_holes) {
    bar(row++, hole.size, colours::kFree, "hole " + FormatBytes(hole.size));
  }
  bars_rect_ = {static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x0 + width),
                static_cast<int>(y0 + pitch * static_cast<float>(row))};
  ImGui::Dummy(ImVec2(width + 150, pitch * static_cast<float>(row)));
  holes_note_.clear();
  if (oom.nearest_holes.empty()) {
    // "No free hole" only where free memory is known: an RMM log or a profiler trace records no
    // regions, a cut dump leaves ranges out.
    switch (document.FreeMemoryAt(selection.device, oom.event_index)) {
      case Document::FreeMemory::kNoRegions:
        holes_note_ = "(free holes unknown: the evidence records no regions)";
        break;
      case Document::FreeMemory::kUnlisted:
        holes_note_ = "(free holes unknown: the dump's chunk list is cut, so no range is known to be free)";
        break;
      default:
        holes_note_ = "(no free hole at that moment)";
        break;
    }
    ImGui::TextDisabled("%s", holes_note_.c_str());
  }
}

}  // namespace fragscope::gui
