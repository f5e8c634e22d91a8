// Interned tag and marker names. Id 0 is "no tag"; ids 1, 2, 3, ... in order of first use.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fragscope/traces/event.hpp"

namespace fragscope::traces {

class TagTable {
 public:
  // Thread-safe. The empty string is kNoTag.
  TagId Intern(std::string_view text);
  // "" for kNoTag or an id never interned.
  std::string Name(TagId id) const;
  std::size_t size() const;
  // Names by id - 1, for writers and tests.
  std::vector<std::string> Names() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, TagId> ids_;
  std::vector<std::string> names_;
};

}  // namespace fragscope::traces
