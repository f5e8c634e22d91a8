// HistogramPanel: free holes by size class (the allocator's bins) at the cursor. (panels.hpp)
#include "panels.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"

namespace fragscope::gui {

void HistogramPanel::Draw(const analysis::MemoryState& state, std::uint64_t state_version,
                          Document::FreeMemory free_memory) {
  using FreeMemory = Document::FreeMemory;
  if (version_ != state_version) {
    // Holes are bins only where they are free memory.
    buckets_ = free_memory == FreeMemory::kKnown ? analysis::FreeSizeHistogram(state) : std::vector<analysis::SizeBucket>{};
    version_ = state_version;
  }
  switch (free_memory) {
    case FreeMemory::kKnown:
      canvas_note_ = "no free holes at the cursor";
      summary_ = fmt::format("free in regions {}, largest hole {}, external fragmentation {:.2f}",
                             FormatBytes(state.free_in_regions), FormatBytes(state.largest_hole),
                             ExternalFragmentation(state.largest_hole, state.free_in_regions));
      break;
    case FreeMemory::kNoRegions:
      // Allocations and no region (a profiler trace, an RMM log): not "0 B free" but unknown.
      canvas_note_ = "the evidence records no regions: no holes to show";
      summary_ = "no regions recorded: free memory unknown";
      break;
    case FreeMemory::kUnlisted: {
      // The state's holes (free_in_regions bytes of them) are the ranges the dump left out.
      canvas_note_ = fmt::format("the dump's chunk list is cut: {} of its regions is not listed, in use or free (not "
                                 "known), so no range is known to be a free hole",
                                 FormatBytes(state.free_in_regions));
      summary_ = "free in regions unknown, largest hole unknown, external fragmentation unknown";
      break;
    }
    case FreeMemory::kMessage:
      canvas_note_ = "an error message has numbers, no layout: no holes to sort into bins";
      summary_ = "its free bytes and largest free block, where it gives them, are in the out-of-memory panel";
      break;
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
  label_rects_.clear();
  label_texts_.clear();
  if (buckets_.empty()) {
    draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(x0 + 8, y0 + 8), IM_COL32(200, 200, 200, 255),
                  canvas_note_.c_str(), nullptr, width - 16);
  } else {
    std::uint64_t top = 1;
    for (const auto& b : buckets_) top = std::max(top, by_bytes_ ? b.bytes : b.count);
    // Sized by the font, so that --scale keeps the labels off the bars.
    const float label_h = ImGui::GetTextLineHeight() + 2;
    const float label_gap = ImGui::GetFontSize() / 2;
    const float bar_w = width / static_cast<float>(buckets_.size());
    float label_free_from = x0;  // labels are written left to right where the previous one ended
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      const std::uint64_t v = by_bytes_ ? buckets_[k].bytes : buckets_[k].count;
      const float h = static_cast<float>(static_cast<double>(v) / static_cast<double>(top)) * (height - label_h - 16);
      const float bx = x0 + bar_w * static_cast<float>(k);
      const float base = y0 + height - label_h;
      if (v > 0) {
        draw->AddRectFilled(ImVec2(std::floor(bx + 1), std::floor(base - std::max(h, 1.0f))),
                            ImVec2(std::floor(bx + bar_w - 1), base), colours::kFree);
      }
      // Each label at its bar where the previous one has ended (labels differ in width: a fixed
      // stride ran "256.00 KiB1.00 MiB" together), and inside the canvas.
      // A bar is labelled by its lower bound; the first holds everything below the second's, so it
      // says so ("256 B" read as if nothing smaller were in it).
      const std::string label = buckets_[k].lower == 0 ? "< " + FormatBytes(buckets_[k].upper)
                                                      : FormatBytes(buckets_[k].lower);
      const float text_w = ImGui::CalcTextSize(label.c_str()).x;
      // The last bar's label ends at the canvas's edge when it cannot start at its bar: the largest
      // class is the one most often asked about.
      float lx = bx + 1;
      if (lx + text_w > x0 + width && k + 1 == buckets_.size()) lx = x0 + width - text_w;
      if (lx >= label_free_from && lx + text_w <= x0 + width) {
        draw->AddText(ImVec2(lx, base + 1), IM_COL32(180, 180, 180, 255), label.c_str());
        label_rects_.push_back({static_cast<int>(lx), static_cast<int>(base + 1),
                                static_cast<int>(std::ceil(lx + text_w)), static_cast<int>(base + label_h)});
        label_texts_.push_back(label);
        label_free_from = lx + text_w + label_gap;
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
  if (free_memory == FreeMemory::kKnown) {
    ImGui::TextUnformatted(summary_.c_str());
  } else {
    ImGui::TextDisabled("%s", summary_.c_str());
  }
}

}  // namespace fragscope::gui
