// ComparePanel: the trace replayed under two configurations, side by side, in the background. (panels.hpp)
#include "panels.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <imgui_stdlib.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/evidence/evidence_input.hpp"

namespace fragscope::gui {

// TensorFlow's allocator (allow_growth) against fragscope's default policy: the question a user of
// compare asks first. The preset menus offer the rest (analysis::ComparisonPresets).
ComparePanel::ComparePanel() { SetConfs(analysis::ComparisonPresets()[1].conf, analysis::ComparisonPresets()[0].conf); }

void ComparePanel::SetConfs(const std::string& a, const std::string& b) {
  conf_text_[0] = a;
  conf_text_[1] = b;
}

std::uint64_t ComparePanel::side_ooms(int side) const {
  const auto& model = sides_[side].document.model;
  std::uint64_t ooms = 0;
  if (model != nullptr) {
    for (std::uint32_t d : model->devices()) ooms += model->Metrics(d).ooms;
  }
  return ooms;
}

std::vector<std::uint32_t> ComparePanel::side_devices(int side) const {
  const auto& model = sides_[side].document.model;
  return model != nullptr ? model->devices() : std::vector<std::uint32_t>{};
}

void ComparePanel::Start(const Document& document) {
  if (job_.running()) return;
  if (document.kind != traces::EvidenceKind::kHistory) {
    // As `fragscope compare` refuses a state: there is no order of allocations to replay.
    error_ = document.kind == traces::EvidenceKind::kState
                 ? "a state is one moment, not a history: there is no order of allocations to replay"
                 : "an error message holds numbers, not allocations: there is nothing to replay";
    return;
  }
  error_.clear();
  const std::string path = document.path;
  const std::string confs[2] = {conf_text_[0], conf_text_[1]};
  // The recorded run's limits, for a side that sets none: compared without them, a trace that ran
  // out of memory under a 2 GiB limit showed no OOM on either side (issue 17, item 3), nor one
  // that ran out on a 200 MiB virtual device (analysis::WithRecordedLimits).
  std::optional<AllocConf> recorded;
  if (document.context != nullptr) recorded = document.context->recorded_conf();
  pending_ready_ = false;
  result_ready_ = false;
  results_of_ = &document;
  job_.Start("replaying", [this, path, recorded, a = confs[0], b = confs[1]](Job& job) {
    auto input = evidence::EvidenceInput::Open(path);
    // Another framework's host memory (a profiler trace's CPU device) is not for a GPU policy to
    // replay: left out, as `fragscope compare` leaves it out, and said so under the table.
    pending_left_out_.clear();
    for (const std::uint32_t device : input->header().ForeignHostDevices()) {
      if (const traces::DeviceDescription* d = input->header().Device(device)) pending_left_out_[device] = d->backing;
    }
    analysis::AllocationSequence sequence =
        analysis::BuildAllocationSequence(input->header(), input->Blocks(), &input->tags());
    const std::uint64_t allocations = sequence.allocations;
    sequence = analysis::WithoutDevices(std::move(sequence), input->header().ForeignHostDevices());
    if (allocations > 0 && sequence.allocations == 0) {
      throw std::runtime_error("every allocation is of host memory (a CPU allocator's), none of GPU memory: "
                               "nothing for a GPU allocator to replay");
    }
    const std::vector<std::uint64_t> loads = analysis::PeakLoadByDevice(sequence);
    pending_load_.clear();
    for (std::size_t k = 0; k < sequence.devices.size() && k < loads.size(); ++k) {
      pending_load_[sequence.devices[k]] = loads[k];
    }
    const std::string texts[2] = {a, b};
    for (int i = 0; i < 2; ++i) {
      analysis::ReplayOptions options;
      pending_limits_[i] = analysis::WithRecordedLimits(ParseAllocConf(texts[i]), recorded ? &*recorded : nullptr);
      options.conf = pending_limits_[i].conf;
      // A blank configuration is the default policy: say so, as `fragscope compare` does.
      pending_base_[i] = texts[i].find_first_not_of(" \t") == std::string::npos ? "default policy" : texts[i];
      options.progress = [&job, i](std::uint64_t done, std::uint64_t total) {
        job.SetProgress(done + static_cast<std::uint64_t>(i) * total, 2 * total);
      };
      pending_[i] = analysis::ReplayToTimeline(sequence, options);
    }
    pending_ready_ = true;
  });
}

void ComparePanel::Draw(const Document& document, Selection& selection) {
  if (!job_.running() && result_ready_ && results_of_ != &document) {
    result_ready_ = false;  // another trace was opened: its replays are still to run
  }
  for (int i = 0; i < 2; ++i) {
    ImGui::PushID(i);
    // The presets by name; the text stays editable for any configuration.
    ImGui::SetNextItemWidth(Px(24));
    if (ImGui::BeginCombo("##preset", nullptr, ImGuiComboFlags_NoPreview)) {
      for (const analysis::ComparisonPreset& preset : analysis::ComparisonPresets()) {
        if (ImGui::Selectable(preset.label, conf_text_[i] == preset.conf)) conf_text_[i] = preset.conf;
      }
      ImGui::EndCombo();
    }
    ImGui::SameLine(0, 2);
    ImGui::SetNextItemWidth(Px(260));
    ImGui::InputTextWithHint(i == 0 ? "A" : "B", "default policy", &conf_text_[i]);
    ImGui::PopID();
    ImGui::SameLine();
  }
  if (job_.running()) {
    ImGui::ProgressBar(job_.progress(), ImVec2(Px(200), 0));
  } else if (ImGui::Button("replay both")) {
    Start(document);
  }
  if (job_.finished() && pending_ready_) {
    for (int i = 0; i < 2; ++i) {
      sides_[i].conf = pending_base_[i];
      sides_[i].limits = pending_limits_[i];
      sides_[i].run = std::move(pending_[i]);
      sides_[i].document.path = document.path;
      sides_[i].document.model = std::move(sides_[i].run.model);
      std::vector<std::uint64_t> ooms;
      for (std::uint32_t d : sides_[i].document.model->devices()) {
        for (const auto& oom : sides_[i].document.model->Ooms(d)) ooms.push_back(oom.event_index);
      }
      sides_[i].document.cursor_index = analysis::CursorIndex::FromModel(*sides_[i].document.model, ooms);
      sides_[i].selection = Selection{};
      sides_[i].selection.device = selection.device;
    }
    sequence_load_ = pending_load_;
    left_out_ = pending_left_out_;
    pending_ready_ = false;
    result_ready_ = true;
    error_.clear();
  } else if (job_.finished() && !job_.error().empty()) {
    error_ = job_.error();
  }
  if (!error_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 100, 100, 255));
    ImGui::TextWrapped("%s", error_.c_str());
    ImGui::PopStyleColor();
  }
  if (!result_ready_) {
    ImGui::TextDisabled("Replays the trace under two allocator configurations (as `fragscope compare`).");
    return;
  }
  // The table of `fragscope compare`.
  if (ImGui::BeginTable("compare", 7, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersOuter)) {
    // The configuration (with "(limit ... as recorded)") gets what the numbers leave; they get what
    // they need.
    ImGui::TableSetupColumn("configuration", ImGuiTableColumnFlags_WidthStretch);
    for (const char* name : {"peak reserved", "overhead", "util@peak", "frag@peak", "OOMs", "replay"}) {
      ImGui::TableSetupColumn(name, ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("1023.99 MiB").x + Px(12));
    }
    ImGui::TableHeadersRow();
    // Every row against one peak LOAD, the trace's own (a replay that failed requests has a smaller
    // one of its own, which made a failing row look perfect); a row that ran out of memory is
    // marked, its figures leave out what failed.
    const auto load_it = sequence_load_.find(selection.device);
    const std::uint64_t load = load_it != sequence_load_.end() ? load_it->second
                                                               : document.model->Metrics(selection.device).peak_load;
    bool marked = false;
    overhead_texts_.clear();
    auto row = [this, load, &marked](const std::string& name, const analysis::DeviceMetrics& m, const std::string& seconds) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name.c_str());
      // Evidence that records no reserved memory (an RMM log, a profiler trace): "-", as
      // `fragscope compare` prints, not 0 B and ratios to it.
      const bool reserved_known = m.peak_reserved > 0 || m.peak_load == 0;
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(reserved_known ? FormatBytes(m.peak_reserved).c_str() : "-");
      ImGui::TableNextColumn();
      overhead_texts_.push_back(
          reserved_known ? fmt::format("{:.2f}{}", analysis::DeviceMetrics::Overhead(m.peak_reserved, load),
                                       m.ooms > 0 ? "*" : "")
                         : std::string("-"));
      ImGui::TextUnformatted(overhead_texts_.back().c_str());
      marked = marked || m.ooms > 0;
      ImGui::TableNextColumn();
      if (reserved_known) ImGui::Text("%.2f", m.utilization_at_peak);
      else ImGui::TextUnformatted("-");
      ImGui::TableNextColumn();
      if (reserved_known && !std::isnan(m.fragmentation_at_peak)) ImGui::Text("%.2f", m.fragmentation_at_peak);
      else ImGui::TextUnformatted("-");
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(m.ooms));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(seconds.c_str());
    };
    row("as recorded", document.model->Metrics(selection.device), "-");
    const auto left_out = left_out_.find(selection.device);
    for (const Side& side : sides_) {
      if (left_out != left_out_.end()) break;
      const analysis::DeviceReplay* d = side.run.result.Device(selection.device);
      if (d != nullptr) row(side.Label(selection.device), d->metrics, fmt::format("{:.2f} s", side.run.result.seconds));
    }
    ImGui::EndTable();
    ImGui::TextDisabled("overhead = peak reserved / the trace's peak LOAD (%s)%s", FormatBytes(load).c_str(),
                        marked ? "; * ran out of memory: its figures leave out what failed" : "");
    if (left_out != left_out_.end()) {
      ImGui::TextWrapped("device %u holds host memory (%s), not GPU memory: the replays leave it out. "
                         "Select a GPU device to compare.",
                         selection.device, left_out->second.c_str());
    }
  }
  // Side by side: each replay's timeline and its map as of the main cursor's event (by sequence
  // number; by time only if the replay could not say which op made each event).
  if (left_out_.contains(selection.device)) return;  // no replay of it to draw
  const bool main_has_events = document.model->event_count() > 0;
  const traces::Event main_event = main_has_events ? document.model->event(selection.cursor) : traces::Event{};
  const double t = static_cast<double>(main_event.time_ns);
  const float column_w = ImGui::GetContentRegionAvail().x / 2 - 4;
  const float column_h = ImGui::GetContentRegionAvail().y;
  for (int i = 0; i < 2; ++i) {
    Side& side = sides_[i];
    if (i == 1) ImGui::SameLine();
    ImGui::BeginChild(i == 0 ? "side A" : "side B", ImVec2(column_w, column_h), true);
    ImGui::TextUnformatted(side.Label(selection.device).c_str());
    const auto& model = *side.document.model;
    if (model.event_count() > 0) {
      if (!side.run.source_seq.empty()) {
        side.selection.cursor = side.run.SideCursor(main_event.seq);
      } else {
        const std::uint64_t after = analysis::EventAtTime(model, t + 1);
        side.selection.cursor = after == 0 ? 0 : std::min(after - 1, model.event_count() - 1);
      }
      side.selection.colour = selection.colour;
      side.timeline.Draw(side.document, side.selection, std::max(80.0f, column_h * 0.4f));
      const analysis::MemoryState& state = side.state.Get(side.document, side.selection.device, side.selection.cursor);
      side.map.Draw(side.document, side.selection, state, side.state.version());
    }
    ImGui::EndChild();
  }
}

}  // namespace fragscope::gui
