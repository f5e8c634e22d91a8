// Tags and stacks of the PyTorch importer. The tag of an event is its innermost "useful" frame:
//   1. the innermost Python frame (file ends in ".py") that is not PyTorch's own code (path with
//      "/torch/" or starting "torch/"), not frozen ("<frozen ...>") and not the Python standard
//      library (a path with "/lib/python" but without "site-packages" or "dist-packages");
//   2. else the innermost Python frame;
//   3. else the innermost frame with a file name ("??" and "" do not count);
//   4. else the innermost frame.
// formatted "file:line:function" with the file's base name. The stack keeps every frame, with the
// full file name, one per line, innermost first.
#include <string_view>

#include <fmt/format.h>

#include "pytorch_model.hpp"

namespace fragscope::traces::pytorch_import {
namespace {

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }

bool IsPython(std::string_view file) { return file.size() > 3 && file.ends_with(".py"); }

bool IsUseful(std::string_view file) {
  if (!IsPython(file)) return false;
  if (Contains(file, "/torch/") || file.starts_with("torch/")) return false;
  if (Contains(file, "<frozen")) return false;
  if (Contains(file, "/lib/python") && !Contains(file, "site-packages") &&
      !Contains(file, "dist-packages")) {
    return false;
  }
  return true;
}

std::string_view BaseName(std::string_view file) {
  const auto slash = file.find_last_of("/\\");
  return slash == file.npos ? file : file.substr(slash + 1);
}

}  // namespace

std::vector<FrameTable::Frame> FrameTable::Frames(const pickle::Value& frames) const {
  std::vector<Frame> out;
  for (pickle::ValueId id : doc_.Items(frames)) {
    const pickle::Value& f = doc_.at(id);
    if (f.kind != pickle::Kind::kDict) continue;
    Frame frame;
    if (const auto* v = doc_.Get(f, "filename"); v && v->kind == pickle::Kind::kString) frame.file = v->text;
    if (const auto* v = doc_.Get(f, "name"); v && v->kind == pickle::Kind::kString) frame.function = v->text;
    if (const auto* v = doc_.Get(f, "line"); v) frame.line = pickle::AsI64(*v).value_or(0);
    out.push_back(std::move(frame));
  }
  return out;
}

std::uint32_t FrameTable::Stack(const pickle::Value* frames) {
  if (frames == nullptr) return 0;
  const pickle::ValueId id = doc_.IdOf(*frames);
  if (auto it = stack_cache_.find(id); it != stack_cache_.end()) return it->second;
  std::string text;
  for (const Frame& f : Frames(*frames)) {
    if (!text.empty()) text += '\n';
    text += fmt::format("{}:{}:{}", f.file, f.line, f.function);
  }
  std::uint32_t index = 0;
  if (!text.empty()) {
    auto [it, inserted] = stack_index_.try_emplace(text, static_cast<std::uint32_t>(stacks_.size() + 1));
    if (inserted) stacks_.push_back(text);
    index = it->second;
  }
  stack_cache_.emplace(id, index);
  return index;
}

std::string FrameTable::Tag(const pickle::Value* frames) {
  if (frames == nullptr) return {};
  const pickle::ValueId id = doc_.IdOf(*frames);
  if (auto it = tag_cache_.find(id); it != tag_cache_.end()) return it->second;
  const std::vector<Frame> all = Frames(*frames);
  const Frame* pick = nullptr;
  for (const Frame& f : all) {
    if (IsUseful(f.file)) { pick = &f; break; }
  }
  for (const Frame& f : all) {
    if (pick == nullptr && IsPython(f.file)) { pick = &f; break; }
  }
  for (const Frame& f : all) {
    if (pick == nullptr && !f.file.empty() && f.file != "??") { pick = &f; break; }
  }
  if (pick == nullptr && !all.empty()) pick = &all.front();
  std::string tag;
  if (pick != nullptr) {
    tag = fmt::format("{}:{}:{}", BaseName(pick->file), pick->line, pick->function);
    if (tag.size() > 512) tag.resize(512);
  }
  tag_cache_.emplace(id, tag);
  return tag;
}

}  // namespace fragscope::traces::pytorch_import
