#include "fragscope/traces/tag_table.hpp"

namespace fragscope::traces {

TagId TagTable::Intern(std::string_view text) {
  if (text.empty()) return kNoTag;
  std::lock_guard lock(mutex_);
  // The map's key type is fixed as std::string (no heterogeneous lookup), so look up with a
  // temporary; short names stay in its small-string buffer.
  std::string key(text);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  names_.push_back(key);
  const auto id = static_cast<TagId>(names_.size());
  ids_.emplace(std::move(key), id);
  return id;
}

std::string TagTable::Name(TagId id) const {
  std::lock_guard lock(mutex_);
  return id == kNoTag || id > names_.size() ? std::string() : names_[id - 1];
}

std::size_t TagTable::size() const {
  std::lock_guard lock(mutex_);
  return names_.size();
}

std::vector<std::string> TagTable::Names() const {
  std::lock_guard lock(mutex_);
  return names_;
}

}  // namespace fragscope::traces
