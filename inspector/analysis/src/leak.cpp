#include "fragscope/analysis/leak.hpp"

#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"

namespace fragscope::analysis {
namespace {

// N of a marker named "step N end"; empty for every other name.
std::optional<std::uint64_t> StepEndNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "step ", kSuffix = " end";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix)
    return std::nullopt;
  const std::string_view digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  std::uint64_t n = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

}  // namespace

void LeakDetector::Add(const traces::Event& e, const std::vector<std::string>& tags) {
  using traces::EventType;
  switch (e.type) {
    case EventType::kAlloc: {
      Live& slot = live_[Key{e.device, e.address}];
      if (slot.size != 0) {  // an alloc over a live one (imported traces): the old one ends
        live_total_ -= slot.size;
        *slot.tag_bytes -= slot.size;
      }
      if (last_tag_bytes_ == nullptr || e.tag != last_tag_) {
        last_tag_ = e.tag;
        last_tag_bytes_ = &live_by_tag_[e.tag];
      }
      slot = Live{e.size, last_tag_bytes_};
      live_total_ += e.size;
      *last_tag_bytes_ += e.size;
      break;
    }
    case EventType::kFree: {
      const auto it = live_.find(Key{e.device, e.address});
      if (it == live_.end()) break;
      live_total_ -= it->second.size;
      *it->second.tag_bytes -= it->second.size;
      live_.erase(it);
      break;
    }
    case EventType::kMarker: {
      if (e.tag == traces::kNoTag || e.tag > tags.size()) break;
      if (const auto step = StepEndNumber(tags[e.tag - 1]); step && step != last_step_) {
        last_step_ = step;
        StepEnd(*step, tags);
      }
      break;
    }
    default:
      break;
  }
}

void LeakDetector::StepEnd(std::uint64_t step, const std::vector<std::string>& tags) {
  // The first step end is skipped: the first step allocates what every later step keeps (optimizer
  // state, workspaces), which is growth but no leak.
  if (!skipped_first_) {
    skipped_first_ = true;
    return;
  }
  std::unordered_map<std::string, std::uint64_t> by_tag;
  for (const auto& [tag, bytes] : live_by_tag_) {
    if (bytes == 0) continue;
    by_tag[tag == traces::kNoTag || tag > tags.size() ? std::string("(untagged)") : tags[tag - 1]] += bytes;
  }
  if (ends_.empty()) first_by_tag_ = by_tag;
  last_by_tag_ = std::move(by_tag);
  ends_.emplace_back(step, live_total_);
}

std::optional<LeakFinding> LeakDetector::Finish() const {
  if (ends_.size() < 3) return std::nullopt;
  for (std::size_t i = 1; i < ends_.size(); ++i) {
    if (ends_[i].second <= ends_[i - 1].second) return std::nullopt;
  }
  LeakFinding f;
  f.first_step = ends_.front().first;
  f.last_step = ends_.back().first;
  f.steps = ends_.size() - 1;
  f.live_first = ends_.front().second;
  f.live_last = ends_.back().second;
  for (const auto& [tag, bytes] : last_by_tag_) {
    const auto it = first_by_tag_.find(tag);
    const std::uint64_t before = it == first_by_tag_.end() ? 0 : it->second;
    // Ties go to the smaller name, so the finding does not depend on hash order.
    if (bytes > before && (bytes - before > f.tag_growth || (bytes - before == f.tag_growth && tag < f.tag))) {
      f.tag_growth = bytes - before;
      f.tag = tag;
    }
  }
  const std::uint64_t growth = f.live_last - f.live_first;
  f.explanation = fmt::format(
      "leak: memory live between steps grew at every step end from step {} to step {} ({} to {}, "
      "about {} per step); most of the growth is '{}' (+{}): something keeps a tensor from every "
      "step alive",
      f.first_step, f.last_step, FormatBytes(f.live_first), FormatBytes(f.live_last),
      FormatBytes(growth / f.steps), f.tag.empty() ? "?" : f.tag, FormatBytes(f.tag_growth));
  return f;
}

}  // namespace fragscope::analysis
