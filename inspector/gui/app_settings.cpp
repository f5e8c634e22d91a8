// The inspector's settings: the window layout (ImGui's ini) and the recent files, in the user's
// config folder, written through AtomicFile so that a crash never leaves half a file. (app.hpp)
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <imgui.h>
#include <spdlog/spdlog.h>

#include "app.hpp"
#include "fragscope/traces/atomic_file.hpp"

namespace fragscope::gui {
namespace {

std::string ConfigDir() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/fragscope";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.config/fragscope";
  }
  return {};
}

}  // namespace

void App::LoadSettings() {
  if (!options_.persist) return;
  config_dir_ = ConfigDir();
  if (config_dir_.empty()) return;
  std::error_code ignored;
  std::filesystem::create_directories(config_dir_, ignored);
  ini_path_ = config_dir_ + "/imgui.ini";
  recent_path_ = config_dir_ + "/recent.txt";
  std::ifstream in(recent_path_);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) recent_.push_back(line);
  }
}

void App::AddRecent(const std::string& path) {
  std::error_code ignored;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ignored);
  const std::string entry = absolute.empty() ? path : absolute.string();
  recent_.erase(std::remove(recent_.begin(), recent_.end(), entry), recent_.end());
  recent_.insert(recent_.begin(), entry);
  if (recent_.size() > 10) recent_.resize(10);
  if (!options_.persist || recent_path_.empty()) return;
  std::string text;
  for (const auto& file : recent_) text += file + '\n';
  SaveSetting(recent_path_, text);
}

void App::SaveLayout() const {
  if (!options_.persist || ini_path_.empty()) return;
  std::size_t size = 0;
  const char* ini = ImGui::SaveIniSettingsToMemory(&size);
  SaveSetting(ini_path_, std::string_view(ini, size));
}

// Settings are a convenience: a failure to save them is logged, never fatal.
void App::SaveSetting(const std::string& path, std::string_view text) const {
  try {
    traces::AtomicFile file(path);
    file.Write(text.data(), text.size());
    file.Commit();
  } catch (const traces::OutputError& error) {
    spdlog::warn("settings not saved: {}", error.what());
  }
}

}  // namespace fragscope::gui
