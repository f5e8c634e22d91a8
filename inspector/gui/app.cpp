// The inspector window: GLFW and ImGui set up, scale, loading and its jobs, keys, the panels laid out,
// one frame. Headless modes are in app_headless.cpp, settings in app_settings.cpp. (app.hpp)
#include "app.hpp"

#include <algorithm>
#include <chrono>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <fmt/format.h>
#include <imgui.h>
#include <spdlog/spdlog.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/evidence/evidence_input.hpp"
#include "fragscope/evidence/readers.hpp"

namespace fragscope::gui {
namespace {

using Clock = std::chrono::steady_clock;

std::string glfw_error;  // the last message of GLFW's error callback
bool glfw_ready = false;  // glfwInit succeeded (once per process)

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

}  // namespace

const std::vector<std::string> kPanelNames = {"timeline", "map", "table", "events", "bins", "oom", "compare"};

const std::vector<std::string>& PanelNames() { return kPanelNames; }

App::App(ViewOptions options) : options_(std::move(options)) {
  if (options_.confs.size() >= 2) compare_.SetConfs(options_.confs[0], options_.confs[1]);
  show_compare_ = options_.panel == "compare";
  timeline_.stacked = options_.stacked;
  timeline_.show_fragmentation = options_.fragmentation;
}

App::~App() {
  loader_.Wait();
  min_limit_job_.Wait();
  compare_.Wait();
  if (imgui_ready_) {
    SaveLayout();
    timeline_.ReleaseGl();
    map_.ReleaseGl();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
  }
  // GLFW stays initialized until the process exits (see Init), so the display connection does too.
  if (window_ != nullptr) glfwDestroyWindow(window_);
}

bool App::Init(std::string* error) {
  glfwSetErrorCallback([](int, const char* description) { glfw_error = description; });
  // Once per process: closing the last connection makes an X server reset, and a display opened
  // during the reset fails (several windows in one process, as the tests open, met that).
  if (!glfw_ready) {
    if (!glfwInit()) {
      *error = "cannot open a display (is DISPLAY set? try xvfb-run for headless use): " + glfw_error;
      return false;
    }
    glfw_ready = true;
    std::atexit(glfwTerminate);
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  glfwWindowHint(GLFW_VISIBLE, options_.visible ? GLFW_TRUE : GLFW_FALSE);
  glfwWindowHint(GLFW_RESIZABLE, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_FALSE);
  window_ = glfwCreateWindow(options_.width, options_.height, "fragscope", nullptr, nullptr);
  if (window_ == nullptr) {
    *error = "cannot create an OpenGL 3.0 window";
    return false;
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(options_.persist ? 1 : 0);  // interactive: vsync; headless: as fast as it goes
  glfwSetWindowUserPointer(window_, this);
  glfwSetDropCallback(window_, &App::OnDrop);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  LoadSettings();
  // The layout is read and written here, not by ImGui, so that it goes through AtomicFile.
  io.IniFilename = nullptr;
  if (options_.persist && !ini_path_.empty() && std::filesystem::exists(ini_path_)) {
    ImGui::LoadIniSettingsFromDisk(ini_path_.c_str());
  }
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  ImGui_ImplOpenGL3_Init("#version 130");
  imgui_ready_ = true;
  float scale = options_.scale;
  if (scale <= 0) {  // the monitor's: 2 on a HiDPI screen whose desktop says so, 1 under Xvfb
    float sx = 1, sy = 1;
    glfwGetWindowContentScale(window_, &sx, &sy);
    scale = sx;
    glfwSetWindowContentScaleCallback(window_, &App::OnContentScale);
  }
  ApplyScale(scale);
  if (!options_.trace.empty()) Open(options_.trace);
  return true;
}

void App::ApplyScale(float scale) {
  scale = std::clamp(std::isfinite(scale) ? scale : 1.0f, kMinScale, kMaxScale);
  scale_ = scale;
  pending_scale_ = 0;
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const float size = std::round(13 * scale);
  // ProggyClean (ImGui's font) is a 13 px bitmap font: at 1 it is exact, scaled it blurs. Scaled, a
  // TrueType monospace font is used where the system has one (fonts-dejavu-core on Debian).
  const char* kTrueType = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  ImFont* font = nullptr;
  if (scale != 1.0f && std::filesystem::exists(kTrueType)) font = io.Fonts->AddFontFromFileTTF(kTrueType, size);
  if (font == nullptr) {
    ImFontConfig config;
    config.SizePixels = size;
    io.Fonts->AddFontDefault(&config);
  }
  ImGuiStyle style;
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 0;
  style.Colors[ImGuiCol_WindowBg].w = 1;  // opaque: the clear colour stands in for it (DrawUi)
  style.ScaleAllSizes(scale);
  ImGui::GetStyle() = style;
  // The backend made the font texture on its first frame; a later change remakes it.
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
}

void App::OnContentScale(GLFWwindow* window, float x_scale, float /*y_scale*/) {
  auto* app = static_cast<App*>(glfwGetWindowUserPointer(window));
  if (app != nullptr && x_scale > 0) app->pending_scale_ = x_scale;  // applied between frames
}

void App::OnDrop(GLFWwindow* window, int count, const char** paths) {
  auto* app = static_cast<App*>(glfwGetWindowUserPointer(window));
  if (app != nullptr && count > 0) app->pending_drop_ = paths[0];
}

void App::Open(const std::string& path) {
  if (loader_.running()) return;
  loading_path_ = path;
  load_error_.clear();
  loaded_.reset();
  loader_.Start("loading", [this, path](Job& job) {
    loaded_ = LoadDocument(path, [&job](std::uint64_t done, std::uint64_t total) { job.SetProgress(done, total); });
  });
}

void App::SetCursor(std::uint64_t event) {
  if (document_ == nullptr || document_->model->event_count() == 0) return;
  selection_.cursor = std::min(event, document_->model->event_count() - 1);
  selection_.follow_cursor = true;
}

void App::Poll() {
  if (!pending_drop_.empty()) {
    Open(pending_drop_);
    pending_drop_.clear();
  }
  if (loader_.finished() && (loaded_ != nullptr || !loader_.error().empty()) && !loading_path_.empty()) {
    if (loaded_ != nullptr) {
      min_limit_job_.Wait();
      document_ = std::move(loaded_);
      selection_ = Selection{};
      selection_.colour = ColourMode::kState;
      const auto& devices = document_->model->devices();
      selection_.device = devices.empty() ? 0 : devices.front();
      // Start where there is something to see: the first OOM, else the last event of the first
      // device (the last event of the whole trace may be another device's).
      const std::uint64_t n = document_->model->event_count();
      std::uint64_t at = n == 0 ? 0 : n - 1;
      while (at > 0 && document_->model->event(at).device != selection_.device) --at;
      if (!document_->cursor_index.ooms().empty()) at = document_->cursor_index.ooms().front();
      if (options_.at) {
        at = *options_.at;
        if (n > 0 && at >= n) {
          // Not silently: the cursor lands elsewhere than asked.
          const std::string warning = fmt::format("--at {}: past the last event ({}): the cursor is at event {}", at,
                                                  n - 1, n - 1);
          document_->warnings.push_back(warning);
        }
      }
      options_.at.reset();
      SetCursor(at);
      // On the device of the event the cursor starts on: the one that ran out of memory there
      // (issue 17, item 1), or the one --at names.
      if (n > 0) selection_.device = document_->model->event(selection_.cursor).device;
      AddRecent(document_->path);
      spdlog::info("{}: {} events ({}) loaded in {:.3f} s", document_->path, n, document_->format,
                   document_->load_seconds);
      // The same warnings the badge counts, for headless runs and logs.
      for (const std::string& warning : document_->warnings) spdlog::warn("{}", warning);
      diagnosis_.reset();
      diagnosis_applied_ = false;
      min_limit_error_.clear();
      bool any_oom = false;
      for (const auto& list : document_->ooms) any_oom = any_oom || !list.empty();
      if (any_oom) {
        // The advice checked by replay and the smallest limit the recorded policy needs, in the
        // background. The load kept no allocation sequence (the first frame does not wait for it):
        // read it here, as compare does.
        std::shared_ptr<const analysis::AnalysisContext> context = document_->context;
        min_limit_job_.Start("minimal limit", [this, context, kind = document_->kind,
                                               path = document_->path](Job& job) {
          if (kind == traces::EvidenceKind::kState) {
            // The real reason, before "no fragscope configuration" (which no dump records anyway).
            min_limit_error_ = "a state is one moment, not a history: the smallest limit needs the order in which "
                               "memory was allocated and freed";
            return;
          }
          if (!context->recorded_conf()) {
            min_limit_error_ = context->recorded_conf_error().empty()
                                   ? "the trace recorded no fragscope configuration"
                                   : "the recorded configuration '" + context->model().header().alloc_conf +
                                         "' is not fragscope's";
            return;
          }
          if (!context->recorded_conf()->virtual_devices.empty()) {
            min_limit_error_ = "virtual devices";
            return;
          }
          std::shared_ptr<const analysis::AnalysisContext> with_sequence = context;
          if (context->sequence() == nullptr) {
            auto input = evidence::EvidenceInput::Open(path);
            with_sequence = analysis::AnalysisContext::WithSequence(
                *context, analysis::BuildAllocationSequence(input->header(), input->Blocks(), &input->tags()));
          }
          analysis::DiagnosisOptions options;
          options.min_limit_progress = [&job](std::uint64_t done, std::uint64_t total) { job.SetProgress(done, total); };
          analysis::Diagnosis diagnosis = analysis::Diagnose(*with_sequence, options);
          if (diagnosis.min_limit && !diagnosis.min_limit->fits_at_all) {
            min_limit_error_ = "it does not fit even at the full capacity";
          }
          diagnosis_ = std::move(diagnosis);
        });
      }
    } else {
      load_error_ = loader_.error();
    }
    loading_path_.clear();
  }
  if (document_ != nullptr && min_limit_job_.finished() && !diagnosis_applied_) {
    diagnosis_applied_ = true;
    if (diagnosis_ && diagnosis_->devices.size() == document_->ooms.size()) {
      for (std::size_t i = 0; i < diagnosis_->devices.size(); ++i) {
        document_->ooms[i] = std::move(diagnosis_->devices[i].ooms);
      }
      if (diagnosis_->min_limit && diagnosis_->min_limit->fits_at_all) {
        document_->min_limit = diagnosis_->min_limit->min_limit;
      }
    }
    if (!document_->min_limit && document_->min_limit_error.empty()) {
      if (!min_limit_error_.empty()) document_->min_limit_error = min_limit_error_;
      else if (!min_limit_job_.error().empty()) document_->min_limit_error = min_limit_job_.error();
    }
  }
}

bool App::WaitLoaded(bool with_jobs) {
  loader_.Wait();
  Poll();
  if (document_ == nullptr) return false;
  if (with_jobs) {
    min_limit_job_.Wait();
    Poll();
  }
  return true;
}

void App::Apply(CursorAction action) {
  if (document_ == nullptr) return;
  const std::uint64_t n = document_->model->event_count();
  if (n == 0) return;
  const auto page = static_cast<std::int64_t>(std::max(1.0, selection_.time_axis ? static_cast<double>(n) / 100
                                                                                 : selection_.view.span() / 10));
  const analysis::CursorIndex& index = document_->cursor_index;
  std::uint64_t cursor = selection_.cursor;
  switch (action) {
    case CursorAction::kPrevEvent: cursor = analysis::MoveCursor(cursor, -1, n); break;
    case CursorAction::kNextEvent: cursor = analysis::MoveCursor(cursor, 1, n); break;
    case CursorAction::kPageBack: cursor = analysis::MoveCursor(cursor, -page, n); break;
    case CursorAction::kPageForward: cursor = analysis::MoveCursor(cursor, page, n); break;
    case CursorAction::kFirst: cursor = 0; break;
    case CursorAction::kLast: cursor = n - 1; break;
    case CursorAction::kPrevStep: cursor = index.PrevStep(cursor); break;
    case CursorAction::kNextStep: cursor = index.NextStep(cursor); break;
    case CursorAction::kNextOom: cursor = index.NextOom(cursor); break;
    case CursorAction::kPrevOom: cursor = index.PrevOom(cursor); break;
  }
  if (cursor == selection_.cursor) return;
  SetCursor(cursor);
  // An OOM is one device's: show that device (the list holds every device's OOMs).
  if (action == CursorAction::kNextOom || action == CursorAction::kPrevOom) {
    selection_.device = document_->model->event(selection_.cursor).device;
  }
}

void App::HandleKeys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  const std::pair<int, CursorAction> keys[] = {
      {ImGui::GetKeyIndex(ImGuiKey_LeftArrow), CursorAction::kPrevEvent},
      {ImGui::GetKeyIndex(ImGuiKey_RightArrow), CursorAction::kNextEvent},
      {ImGui::GetKeyIndex(ImGuiKey_PageUp), CursorAction::kPageBack},
      {ImGui::GetKeyIndex(ImGuiKey_PageDown), CursorAction::kPageForward},
      {ImGui::GetKeyIndex(ImGuiKey_Home), CursorAction::kFirst},
      {ImGui::GetKeyIndex(ImGuiKey_End), CursorAction::kLast},
      {GLFW_KEY_LEFT_BRACKET, CursorAction::kPrevStep},
      {GLFW_KEY_RIGHT_BRACKET, CursorAction::kNextStep},
  };
  for (const auto& [key, action] : keys) {
    if (ImGui::IsKeyPressed(key, true)) Apply(action);
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_O, true)) Apply(io.KeyShift ? CursorAction::kPrevOom : CursorAction::kNextOom);
}

void App::DrawUi() {
  const ImVec2 size = ImGui::GetIO().DisplaySize;
  const ImGuiCond cond = options_.persist ? ImGuiCond_FirstUseEver : ImGuiCond_Always;
  // Tiled, the panels draw no background of their own: the frame is cleared to the same colour, and
  // under llvmpipe every pixel a window background blends costs (it cut a 1280x800 frame from 38 to
  // 22 ms). Moved onto one another, they draw it again (panels_tiled_, checked each frame).
  const ImGuiWindowFlags kFlags = ImGuiWindowFlags_NoCollapse | (panels_tiled_ ? ImGuiWindowFlags_NoBackground : 0);
  std::vector<ImVec4> panel_rects;  // x0, y0, x1, y1 of each panel window drawn this frame
  const auto note_rect = [&panel_rects] {
    const ImVec2 p = ImGui::GetWindowPos(), e = ImGui::GetWindowSize();
    panel_rects.emplace_back(p.x, p.y, p.x + e.x, p.y + e.y);
  };
  const float bar_h = Px(66);
  ImGui::SetNextWindowPos(ImVec2(0, 0), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(size.x, bar_h), ImGuiCond_Always);
  ImGui::Begin("fragscope", nullptr,
               ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoSavedSettings);
  const std::string open = toolbar_.Draw(document_.get(), selection_, recent_, loader_);
  if (!open.empty()) Open(open);
  if (document_ != nullptr) {
    // The buttons first: the text after them may run past the window, they may not (issue 17, item 4).
    if (ImGui::SmallButton(show_compare_ ? "hide compare" : "compare...")) show_compare_ = !show_compare_;
    compare_button_ = {static_cast<int>(ImGui::GetItemRectMin().x), static_cast<int>(ImGui::GetItemRectMin().y),
                       static_cast<int>(ImGui::GetItemRectMax().x), static_cast<int>(ImGui::GetItemRectMax().y)};
    ImGui::SameLine();
    warnings_.DrawBadge(*document_);
    ImGui::SameLine();
    toolbar_.DrawStatus(*document_, selection_);
  }
  toolbar_.DrawError(load_error_);
  ImGui::End();
  if (document_ == nullptr) {
    ImGui::SetNextWindowPos(ImVec2(size.x * 0.25f, size.y * 0.35f), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(size.x * 0.5f, Px(120)), ImGuiCond_Always);
    ImGui::Begin("welcome", nullptr, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoSavedSettings);
    // The formats from the registry of readers (fragscope/evidence/readers.hpp).
    if (loader_.running()) {
      ImGui::TextWrapped("Loading %s ...", loading_path_.c_str());
    } else {
      const std::string welcome = "Open a trace: type its path above, pick a recent one, or drop the file on "
                                  "this window. Any format fragscope reads: " +
                                  evidence::ListReaders(evidence::ReaderList::kNames) + ".";
      ImGui::TextWrapped("%s", welcome.c_str());
    }
    if (loader_.running()) ImGui::ProgressBar(loader_.progress());
    ImGui::End();
    return;
  }
  const Document& document = *document_;
  const analysis::MemoryState& state = cursor_state_.Get(document, selection_.device, selection_.cursor);
  const std::uint64_t version = cursor_state_.version();

  const float top = bar_h, h = size.y - bar_h, w = size.x;
  struct Slot {
    const char* name;
    ImVec2 pos, size;
  };
  const bool only = !options_.panel.empty();
  // The timeline pane: a third of the height, but at a large --scale in a small window its legend,
  // minimap and axis grow while the third does not, and the plot shrank to a few rows: it gets up
  // to half the height then (200 px at scale 1, scaled).
  const float th = std::floor(std::max(h * 0.32f, std::min(h * 0.5f, 200 * scale_)));
  const float mh = std::floor(h * 0.30f), lw = std::floor(w * 0.62f);
  auto place = [&](const char* name, ImVec2 pos, ImVec2 extent) {
    if (only) {
      ImGui::SetNextWindowPos(ImVec2(0, top), ImGuiCond_Always);
      ImGui::SetNextWindowSize(ImVec2(w, h), ImGuiCond_Always);
    } else {
      ImGui::SetNextWindowPos(pos, cond);
      ImGui::SetNextWindowSize(extent, cond);
    }
    (void)name;
  };
  auto wanted = [&](const char* name) { return !only || options_.panel == name; };

  if (wanted("timeline")) {
    place("timeline", ImVec2(0, top), ImVec2(w, th));
    if (ImGui::Begin("Timeline", nullptr, kFlags)) timeline_.Draw(document, selection_);
    note_rect();
    ImGui::End();
  }
  if (wanted("map")) {
    place("map", ImVec2(0, top + th), ImVec2(lw, mh));
    if (ImGui::Begin("Memory map", nullptr, kFlags)) map_.Draw(document, selection_, state, version);
    note_rect();
    ImGui::End();
  }
  if (wanted("bins")) {
    place("bins", ImVec2(lw, top + th), ImVec2(w - lw, mh));
    if (ImGui::Begin("Free holes by size (bins)", nullptr, kFlags)) histogram_.Draw(state, version, document.FreeMemoryAt(selection_.device, selection_.cursor));
    note_rect();
    ImGui::End();
  }
  if (wanted("table") || wanted("events")) {
    place("table", ImVec2(0, top + th + mh), ImVec2(lw, h - th - mh));
    if (ImGui::Begin("Live allocations and events", nullptr, kFlags)) {
      if (only) {
        if (options_.panel == "table") table_.Draw(document, selection_, state, version);
        if (options_.panel == "events") events_.Draw(document, selection_);
      } else if (ImGui::BeginTabBar("##allocations and events")) {
        if (ImGui::BeginTabItem("Live allocations")) {
          table_.Draw(document, selection_, state, version);
          ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("Events around the cursor")) {
          events_.Draw(document, selection_);
          ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
      }
    }
    note_rect();
    ImGui::End();
  }
  if (wanted("oom")) {
    place("oom", ImVec2(lw, top + th + mh), ImVec2(w - lw, h - th - mh));
    if (ImGui::Begin("Out of memory", nullptr, kFlags)) oom_panel_.Draw(document, selection_);
    note_rect();
    ImGui::End();
  }
  if (show_compare_ && wanted("compare")) {
    place("compare", ImVec2(w * 0.05f, top + 20), ImVec2(w * 0.9f, h * 0.9f));
    bool open_flag = true;
    // Floats over the panels: always its own background.
    if (ImGui::Begin("Compare", only ? nullptr : &open_flag, ImGuiWindowFlags_NoCollapse)) compare_.Draw(document, selection_);
    ImGui::End();
    if (!open_flag) show_compare_ = false;
  }
  warnings_.Draw(document);
  panels_tiled_ = true;
  for (std::size_t i = 0; i < panel_rects.size(); ++i) {
    for (std::size_t j = i + 1; j < panel_rects.size(); ++j) {
      const ImVec4& a = panel_rects[i];
      const ImVec4& b = panel_rects[j];
      if (std::min(a.z, b.z) > std::max(a.x, b.x) + 0.5f && std::min(a.w, b.w) > std::max(a.y, b.y) + 0.5f) {
        panels_tiled_ = false;
      }
    }
  }
}

void App::Frame(bool swap) {
  const auto frame_start = Clock::now();
  glfwPollEvents();
  if (pending_scale_ > 0 && pending_scale_ != scale_) ApplyScale(pending_scale_);
  Poll();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (!options_.persist) {
    // Headless (screenshots, benchmarks, tests): wherever the X server put the pointer, no hover.
    ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  }
  ImGui::NewFrame();
  HandleKeys();
  DrawUi();
  ImGui::Render();
  last_ui_ms_ = Seconds(frame_start) * 1e3;
  const auto render_start = Clock::now();
  int fw = 0, fh = 0;
  glfwGetFramebufferSize(window_, &fw, &fh);
  glViewport(0, 0, fw, fh);
  const ImVec4 clear = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];  // what a panel's background would be
  glClearColor(clear.x, clear.y, clear.z, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (swap) {
    glfwSwapBuffers(window_);
  } else {
    glFinish();
  }
  last_render_ms_ = Seconds(render_start) * 1e3;
}

int App::RunInteractive() {
  while (!glfwWindowShouldClose(window_)) {
    // Sleep until input comes. Idle: 0.1 s at most. While a background job runs, a frame every
    // 1/15 s is enough for its progress bar, and leaves the cores to the job (a load reads and
    // indexes on two threads; with software OpenGL each frame costs tens of milliseconds of CPU).
    const bool busy = loader_.running() || min_limit_job_.running() || compare_.running();
    glfwWaitEventsTimeout(busy ? 1.0 / 15 : 0.1);
    Frame(true);
  }
  SaveLayout();
  if (loader_.running() || min_limit_job_.running() || compare_.running()) {
    // A load or a replay (the minimal limit's bisection can take minutes) has no way to stop
    // early; closing the window should not wait for it. Settings and recent files are saved.
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}

}  // namespace fragscope::gui
