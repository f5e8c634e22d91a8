#include "fragscope/analysis/stack_view.hpp"

namespace fragscope::analysis {
namespace {

// The file of a "file:line:function" frame: everything before the first ":digits:" (a function
// such as "torch::unwind::unwind()" has colons of its own, a file rarely has ":digits:").
std::string_view FileOf(std::string_view frame) {
  for (std::size_t i = frame.find(':'); i != std::string_view::npos; i = frame.find(':', i + 1)) {
    std::size_t j = i + 1;
    while (j < frame.size() && frame[j] >= '0' && frame[j] <= '9') ++j;
    if (j > i + 1 && j < frame.size() && frame[j] == ':') return frame.substr(0, i);
  }
  return frame;
}

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

bool IsUserFrame(std::string_view frame) {
  const std::string_view file = FileOf(frame);
  if (file.size() <= 3 || !file.ends_with(".py")) return false;
  if (Contains(file, "/torch/") || file.starts_with("torch/")) return false;
  if (Contains(file, "<frozen")) return false;
  if (Contains(file, "/lib/python") && !Contains(file, "site-packages") && !Contains(file, "dist-packages")) {
    return false;
  }
  return true;
}

StackView ViewStack(std::string_view stack, bool show_all, std::size_t max_frames) {
  std::vector<std::string_view> all;
  for (std::size_t start = 0; start < stack.size();) {
    std::size_t end = stack.find('\n', start);
    if (end == std::string_view::npos) end = stack.size();
    if (end > start) all.push_back(stack.substr(start, end - start));
    start = end + 1;
  }
  StackView view;
  view.total = all.size();
  if (!show_all) {
    for (std::string_view frame : all) {
      if (IsUserFrame(frame) && view.frames.size() < max_frames) view.frames.emplace_back(frame);
    }
    view.user_frames = !view.frames.empty();
  }
  if (view.frames.empty()) {
    for (std::size_t i = 0; i < all.size() && i < max_frames; ++i) view.frames.emplace_back(all[i]);
  }
  view.hidden = view.total - view.frames.size();
  return view;
}

}  // namespace fragscope::analysis
