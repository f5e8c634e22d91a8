// The inspector window: GLFW + OpenGL 3 + ImGui 1.86. Owns the document, the selection and the
// panels; lays the panels out (no docking in 1.86); loads traces off the UI thread; keys move the
// cursor; window layout and recent files persist in the user's config folder. Headless modes
// render a screenshot to PNG or benchmark frame times.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "document.hpp"
#include "fragscope/analysis/diagnosis.hpp"
#include "fragscope/analysis/policy_advice.hpp"
#include "panels.hpp"

struct GLFWwindow;

namespace fragscope::gui {

struct ViewOptions {
  std::string trace;                 // open at start (empty: none)
  std::optional<std::uint64_t> at;   // cursor at start (default: the first OOM, else the last event)
  std::string panel;                 // only this panel: timeline, map, table, events, bins, oom, compare
  int width = 1600, height = 1000;
  bool persist = true;               // ini file and recent files in the config folder
  bool visible = true;               // show the window (screenshots under Xvfb keep it visible too)
  std::vector<std::string> confs;    // compare: two --alloc-conf strings
  bool stacked = false;              // the timeline starts as the active-memory stack
  bool fragmentation = false;        // the timeline starts with fragmentation over time shown
  float scale = 0;                   // text and layout scale (--scale); 0: the monitor's content scale
};

inline constexpr float kMinScale = 0.5f, kMaxScale = 4.0f;

// Panel names --panel accepts.
const std::vector<std::string>& PanelNames();

// What the cursor keys do (App::Apply), so that tests can press them without a keyboard.
enum class CursorAction {
  kPrevEvent, kNextEvent, kPageBack, kPageForward, kFirst, kLast, kPrevStep, kNextStep, kNextOom, kPrevOom
};

class App {
 public:
  explicit App(ViewOptions options);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Opens the window. False (with a message) when no display can be opened.
  bool Init(std::string* error);
  // Starts loading a trace in the background (the current one stays until the new one is ready).
  void Open(const std::string& path);
  // Blocks until loading (and the jobs that follow: minimal limit, compare) finished; applies the
  // result. False when the load failed (load_error() says why).
  bool WaitLoaded(bool with_jobs);
  // One frame: events, UI, render. `swap`: present it (interactive), else leave it in the back
  // buffer for ReadPixels.
  void Frame(bool swap = true);
  // The back buffer as RGBA rows, top row first.
  std::vector<std::uint8_t> ReadPixels(int* width, int* height) const;
  bool WritePng(const std::string& path, std::string* error) const;

  int RunInteractive();
  int RunScreenshot(const std::string& png);
  int RunBench();

  const Document* document() const { return document_.get(); }
  Selection& selection() { return selection_; }
  const std::string& load_error() const { return load_error_; }
  const TimelinePanel& timeline() const { return timeline_; }
  TimelinePanel& timeline() { return timeline_; }
  const MemoryMapPanel& map() const { return map_; }
  const HistogramPanel& histogram() const { return histogram_; }
  const OomPanel& oom() const { return oom_panel_; }
  const LiveTablePanel& table() const { return table_; }
  LiveTablePanel& table() { return table_; }
  const EventListPanel& events() const { return events_; }
  ComparePanel& compare() { return compare_; }
  WarningsPanel& warnings() { return warnings_; }
  const ToolbarPanel& toolbar() const { return toolbar_; }
  // Where the last frame drew the compare button (to check it is inside the window).
  PixelRect compare_button() const { return compare_button_; }
  float scale() const { return scale_; }
  void SetCursor(std::uint64_t event);
  // Moves the cursor as the keys do: ←/→, PgUp/PgDn, Home/End, [ ], o, O.
  void Apply(CursorAction action);

 private:
  void Poll();            // applies finished jobs
  void HandleKeys();
  void DrawUi();
  void AddRecent(const std::string& path);
  void LoadSettings();
  void SaveLayout() const;  // the window layout (imgui.ini), through AtomicFile
  void SaveSetting(const std::string& path, std::string_view text) const;
  static void OnDrop(GLFWwindow* window, int count, const char** paths);
  static void OnContentScale(GLFWwindow* window, float x_scale, float y_scale);
  // Fonts and style sizes for `scale` (clamped to [kMinScale, kMaxScale]); the panels' own sizes
  // follow the font (Px).
  void ApplyScale(float scale);

  ViewOptions options_;
  GLFWwindow* window_ = nullptr;
  bool imgui_ready_ = false;
  std::string config_dir_, ini_path_, recent_path_;
  std::vector<std::string> recent_;

  std::unique_ptr<Document> document_;
  Selection selection_;
  CursorState cursor_state_;
  std::string load_error_;
  Job loader_;
  std::unique_ptr<Document> loaded_;  // written by the loader thread, taken on the UI thread
  std::string loading_path_;
  Job min_limit_job_;
  std::string min_limit_error_;
  std::optional<analysis::Diagnosis> diagnosis_;  // from the same job: checked advice, min limit
  bool diagnosis_applied_ = true;                 // applied once, on the UI thread
  std::string pending_drop_;

  ToolbarPanel toolbar_;
  TimelinePanel timeline_;
  PixelRect compare_button_;
  MemoryMapPanel map_;
  LiveTablePanel table_;
  EventListPanel events_;
  HistogramPanel histogram_;
  OomPanel oom_panel_;
  ComparePanel compare_;
  WarningsPanel warnings_;
  bool show_compare_ = false;
  float scale_ = 1;
  bool panels_tiled_ = false;  // last frame's panels did not overlap: they draw no background
  float pending_scale_ = 0;  // a new content scale from GLFW, applied before the next frame
  double last_ui_ms_ = 0, last_render_ms_ = 0;  // of the last frame, for --bench
};

}  // namespace fragscope::gui
