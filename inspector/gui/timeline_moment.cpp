// The timeline panel of evidence without time: a state's findings in words, or a pointer to the
// out-of-memory panel for an error message. (panels.hpp)
#include "fragscope/analysis/state_text.hpp"
#include "panels.hpp"

namespace fragscope::gui {

void TimelinePanel::DrawMoment(const Document& document, const Selection& selection) {
  moment_lines_.clear();
  if (document.kind == traces::EvidenceKind::kMessage) {
    ImGui::TextWrapped("An error message: numbers, no events, so there is no timeline to draw. The \"Out of "
                       "memory\" panel explains it with the arithmetic.");
    return;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 200, 80, 255));
  ImGui::TextWrapped("A state: one moment of memory, not a history. There is no timeline (its events only lay "
                     "the moment out), and no overhead or minimal limit: they need time.");
  ImGui::PopStyleColor();
  // The same sentences as `fragscope report` (analysis::DescribeState): a cut dump's uncovered
  // ranges are "not known to be free" here too, never "free in holes".
  for (const analysis::StateFindings& s : document.states) {
    if (s.device != selection.device) continue;
    const analysis::StateText text = analysis::DescribeState(document.model->header(), s);
    ImGui::Separator();
    ImGui::TextUnformatted(text.title.c_str());
    for (const std::string& line : text.lines) ImGui::TextWrapped("%s", line.c_str());
    moment_lines_.push_back(text.title);
    moment_lines_.insert(moment_lines_.end(), text.lines.begin(), text.lines.end());
  }
}

}  // namespace fragscope::gui
