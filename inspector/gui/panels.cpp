// Live table, histogram, OOM, compare and toolbar panels.
#include "panels.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <imgui_stdlib.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/evidence/evidence_input.hpp"

namespace fragscope::gui {
namespace {

std::string Hex(std::uint64_t value) { return fmt::format("0x{:x}", value); }

}  // namespace

// ------------------------------------------------------------------------------ live table

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

// ------------------------------------------------------------------------------ histogram

void HistogramPanel::Draw(const analysis::MemoryState& state, std::uint64_t state_version) {
  if (version_ != state_version) {
    buckets_ = analysis::FreeSizeHistogram(state);
    version_ = state_version;
  }
  ImGui::Checkbox("by bytes (else by count)", &by_bytes_);
  ImGui::SameLine();
  ImGui::TextDisabled("free holes by size class (the allocator's bins)");
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float width = std::max(50.0f, avail.x), height = std::max(40.0f, avail.y - 20);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = std::floor(origin.x), y0 = std::floor(origin.y);
  canvas_rect_ = {static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x0 + width), static_cast<int>(y0 + height)};
  ImDrawList* draw = ImGui::GetWindowDrawList();
  if (buckets_.empty()) {
    draw->AddText(ImVec2(x0 + 8, y0 + 8), IM_COL32(200, 200, 200, 255), "no free holes at the cursor");
  } else {
    std::uint64_t top = 1;
    for (const auto& b : buckets_) top = std::max(top, by_bytes_ ? b.bytes : b.count);
    const float label_h = 16;
    const float bar_w = width / static_cast<float>(buckets_.size());
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      const std::uint64_t v = by_bytes_ ? buckets_[k].bytes : buckets_[k].count;
      const float h = static_cast<float>(static_cast<double>(v) / static_cast<double>(top)) * (height - label_h - 16);
      const float bx = x0 + bar_w * static_cast<float>(k);
      const float base = y0 + height - label_h;
      if (v > 0) {
        draw->AddRectFilled(ImVec2(std::floor(bx + 1), std::floor(base - std::max(h, 1.0f))),
                            ImVec2(std::floor(bx + bar_w - 1), base), colours::kFree);
      }
      const float label_w = ImGui::CalcTextSize("256.00 KiB").x + 4;
      const auto every = static_cast<std::size_t>(std::max(1.0f, std::ceil(label_w / bar_w)));
      if (k % every == 0) {
        draw->AddText(ImVec2(bx + 1, base + 1), IM_COL32(180, 180, 180, 255),
                      FormatBytes(buckets_[k].lower == 0 ? 256 : buckets_[k].lower).c_str());
      }
      if (ImGui::IsMouseHoveringRect(ImVec2(bx, y0), ImVec2(bx + bar_w, y0 + height))) {
        ImGui::BeginTooltip();
        ImGui::Text("holes of %s to %s: %llu, %s in all", FormatBytes(buckets_[k].lower).c_str(),
                    FormatBytes(buckets_[k].upper).c_str(), static_cast<unsigned long long>(buckets_[k].count),
                    FormatBytes(buckets_[k].bytes).c_str());
        ImGui::EndTooltip();
      }
    }
  }
  ImGui::Dummy(ImVec2(width, height));
  ImGui::Text("free in regions %s, largest hole %s, external fragmentation %.2f",
              FormatBytes(state.free_in_regions).c_str(), FormatBytes(state.largest_hole).c_str(),
              ExternalFragmentation(state.largest_hole, state.free_in_regions));
}

// ------------------------------------------------------------------------------ OOM

void OomPanel::Draw(const Document& document, Selection& selection) {
  const auto& ooms = document.OomsOf(selection.device);
  bars_rect_ = {};
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
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 120, 120, 255));
  ImGui::TextWrapped("Cause: %s", std::string(traces::ToString(n.cause)).c_str());
  ImGui::PopStyleColor();
  ImGui::TextWrapped("%s", oom.report.explanation.c_str());
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
  ImGui::TextWrapped("request %s (rounded %s), limit %s, reserved %s, in use %s",
              FormatBytes(n.request).c_str(), FormatBytes(n.rounded).c_str(), FormatBytes(n.limit).c_str(),
              FormatBytes(n.reserved).c_str(), FormatBytes(n.in_use).c_str());
  ImGui::TextWrapped("free in regions %s, largest free %s, headroom %s",
              FormatBytes(n.free_in_regions).c_str(), FormatBytes(n.largest_free).c_str(), FormatBytes(n.headroom).c_str());

  // The request against the holes nearest in size: does any come close?
  ImGui::Separator();
  ImGui::TextUnformatted("The request (red) against the holes nearest in size (green):");
  const std::uint64_t want = n.rounded != 0 ? n.rounded : n.request;
  std::uint64_t top = std::max<std::uint64_t>(want, 1);
  for (const auto& hole : oom.nearest_holes) top = std::max(top, hole.size);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = std::floor(origin.x), y0 = std::floor(origin.y);
  const float width = std::max(60.0f, ImGui::GetContentRegionAvail().x - 150);
  const float bar_h = 14, pitch = 18;
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
  if (oom.nearest_holes.empty()) ImGui::TextDisabled("(no free hole at that moment)");
}

// ------------------------------------------------------------------------------ compare

ComparePanel::ComparePanel() { SetConfs("growth=on", "expandable=on"); }

void ComparePanel::SetConfs(const std::string& a, const std::string& b) {
  conf_text_[0] = a;
  conf_text_[1] = b;
}

void ComparePanel::Start(const Document& document) {
  if (job_.running()) return;
  const std::string path = document.path;
  const std::string confs[2] = {conf_text_[0], conf_text_[1]};
  pending_ready_ = false;
  result_ready_ = false;
  results_of_ = &document;
  job_.Start("replaying", [this, path, a = confs[0], b = confs[1]](Job& job) {
    auto input = evidence::EvidenceInput::Open(path);
    const analysis::AllocationSequence sequence =
        analysis::BuildAllocationSequence(input->header(), input->Blocks(), &input->tags());
    const std::string texts[2] = {a, b};
    for (int i = 0; i < 2; ++i) {
      analysis::ReplayOptions options;
      options.conf = ParseAllocConf(texts[i]);
      options.progress = [&job, i](std::uint64_t done, std::uint64_t total) {
        job.SetProgress(done + static_cast<std::uint64_t>(i) * total, 2 * total);
      };
      pending_[i] = analysis::ReplayToTimeline(sequence, options);
      pending_[i].result.warnings.insert(pending_[i].result.warnings.begin(), texts[i]);
    }
    pending_ready_ = true;
  });
}

void ComparePanel::Draw(const Document& document, Selection& selection) {
  if (!job_.running() && result_ready_ && results_of_ != &document) {
    result_ready_ = false;  // another trace was opened: its replays are still to run
  }
  for (int i = 0; i < 2; ++i) {
    ImGui::SetNextItemWidth(260);
    ImGui::InputText(i == 0 ? "A##conf" : "B##conf", &conf_text_[i]);
    ImGui::SameLine();
  }
  if (job_.running()) {
    ImGui::ProgressBar(job_.progress(), ImVec2(200, 0));
  } else if (ImGui::Button("replay both")) {
    Start(document);
  }
  if (job_.finished() && pending_ready_) {
    for (int i = 0; i < 2; ++i) {
      sides_[i].conf = pending_[i].result.warnings.empty() ? conf_text_[i] : pending_[i].result.warnings.front();
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
    for (const char* name : {"configuration", "peak reserved", "overhead", "util@peak", "frag@peak", "OOMs", "replay"}) {
      ImGui::TableSetupColumn(name);
    }
    ImGui::TableHeadersRow();
    auto row = [](const std::string& name, const analysis::DeviceMetrics& m, const std::string& seconds) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatBytes(m.peak_reserved).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.2f", m.overhead());
      ImGui::TableNextColumn();
      ImGui::Text("%.2f", m.utilization_at_peak);
      ImGui::TableNextColumn();
      ImGui::Text("%.2f", m.fragmentation_at_peak);
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(m.ooms));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(seconds.c_str());
    };
    row("as recorded", document.model->Metrics(selection.device), "-");
    for (const Side& side : sides_) {
      const analysis::DeviceReplay* d = side.run.result.Device(selection.device);
      if (d != nullptr) row(side.conf, d->metrics, fmt::format("{:.2f} s", side.run.result.seconds));
    }
    ImGui::EndTable();
  }
  // Side by side: each replay's timeline and its map at the time of the main cursor.
  const double t = document.model->event_count() == 0
                       ? 0
                       : static_cast<double>(document.model->event(selection.cursor).time_ns);
  const float column_w = ImGui::GetContentRegionAvail().x / 2 - 4;
  const float column_h = ImGui::GetContentRegionAvail().y;
  for (int i = 0; i < 2; ++i) {
    Side& side = sides_[i];
    if (i == 1) ImGui::SameLine();
    ImGui::BeginChild(i == 0 ? "side A" : "side B", ImVec2(column_w, column_h), true);
    ImGui::TextUnformatted(side.conf.c_str());
    const auto& model = *side.document.model;
    if (model.event_count() > 0) {
      const std::uint64_t after = analysis::EventAtTime(model, t + 1);
      side.selection.cursor = after == 0 ? 0 : std::min(after - 1, model.event_count() - 1);
      side.selection.colour = selection.colour;
      side.timeline.Draw(side.document, side.selection, std::max(80.0f, column_h * 0.4f));
      const analysis::MemoryState& state = side.state.Get(side.document, side.selection.device, side.selection.cursor);
      side.map.Draw(side.document, side.selection, state, side.state.version());
    }
    ImGui::EndChild();
  }
}

// ------------------------------------------------------------------------------ toolbar

std::string ToolbarPanel::Draw(const Document* document, Selection& selection, const std::vector<std::string>& recent,
                               const Job& loader, const std::string& load_error) {
  std::string open;
  ImGui::SetNextItemWidth(360);
  const bool entered = ImGui::InputTextWithHint("##path", "trace path (or drop a file on the window)", &path_,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button("Open") || entered) && !path_.empty()) open = path_;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(160);
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
      ImGui::SetNextItemWidth(90);
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
    ImGui::ProgressBar(loader.progress(), ImVec2(240, 0), "loading...");
  }
  if (document != nullptr) {
    const auto& model = *document->model;
    std::string where = fmt::format("{} ({}, {} events, loaded in {:.2f} s)", document->path, document->format,
                                    model.event_count(), document->load_seconds);
    ImGui::TextUnformatted(where.c_str());
    ImGui::SameLine();
    if (model.event_count() > 0) {
      const traces::Event event = model.event(selection.cursor);
      ImGui::TextColored(ImVec4(1, 0.9f, 0, 1), "cursor: event %llu, step %llu, %s",
                         static_cast<unsigned long long>(selection.cursor),
                         static_cast<unsigned long long>(document->cursor_index.StepsBefore(selection.cursor)),
                         std::string(traces::ToString(event.type)).c_str());
      ImGui::SameLine();
      ImGui::TextDisabled("keys: <- -> event, PgUp/PgDn page, Home/End, [ ] step, o / O next/prev OOM");
    }
  }
  if (!load_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 100, 100, 255));
    ImGui::TextWrapped("could not open: %s", load_error.c_str());
    ImGui::PopStyleColor();
  }
  return open;
}

}  // namespace fragscope::gui
