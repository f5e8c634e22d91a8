// For tests that run the real executables through the shell: reading back what they wrote, and
// quoting arguments so that any path or value reaches the program unchanged.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fragscope::testing {

// The whole file, as bytes ("" when it cannot be read).
inline std::string Slurp(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// `text` as one POSIX shell word: single quotes, with each ' written as '\''.
inline std::string Quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace fragscope::testing
