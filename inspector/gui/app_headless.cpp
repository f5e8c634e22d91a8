// The inspector without a person at it: a frame read back as pixels or a PNG (screenshots, tests),
// and --bench, which times load and frames while it sweeps zoom, pan and cursor and says what a
// frame asks OpenGL to draw. (app.hpp)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include "app.hpp"
#include "fragscope/traces/atomic_file.hpp"

namespace fragscope::gui {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::uint64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return 0;
}

}  // namespace

std::vector<std::uint8_t> App::ReadPixels(int* width, int* height) const {
  int fw = 0, fh = 0;
  glfwGetFramebufferSize(window_, &fw, &fh);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(fw) * static_cast<std::size_t>(fh) * 4);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, fw, fh, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's first row is the bottom one.
  const std::size_t stride = static_cast<std::size_t>(fw) * 4;
  for (int y = 0; y < fh / 2; ++y) {
    std::swap_ranges(pixels.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y) * stride),
                     pixels.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y + 1) * stride),
                     pixels.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(fh - 1 - y) * stride));
  }
  *width = fw;
  *height = fh;
  return pixels;
}

bool App::WritePng(const std::string& path, std::string* error) const {
  int w = 0, h = 0;
  const std::vector<std::uint8_t> pixels = ReadPixels(&w, &h);
  std::vector<std::uint8_t> png;
  const auto append = [](void* context, void* data, int size) {
    auto* bytes = static_cast<std::vector<std::uint8_t>*>(context);
    const auto* begin = static_cast<const std::uint8_t*>(data);
    bytes->insert(bytes->end(), begin, begin + size);
  };
  if (stbi_write_png_to_func(append, &png, w, h, 4, pixels.data(), w * 4) == 0) {
    *error = path + ": cannot encode the PNG";
    return false;
  }
  try {
    traces::AtomicFile file(path, {options_.trace});
    file.Write(png.data(), png.size());
    file.Commit();
  } catch (const traces::OutputError& failure) {
    *error = failure.what();
    return false;
  }
  return true;
}

int App::RunScreenshot(const std::string& png) {
  if (!options_.trace.empty() && !WaitLoaded(true)) {
    std::fprintf(stderr, "error: %s\n", load_error_.c_str());
    return 2;
  }
  if (options_.panel == "compare" && document_ != nullptr) {
    compare_.Start(*document_);
    compare_.Wait();
  }
  // A few frames: ImGui sizes windows and tables over the first frames; the first one also starts
  // the timeline's stack (--stacked) and fragmentation (--fragmentation) on their threads, waited
  // for before the rest.
  Frame(true);
  timeline_.WaitStack();
  timeline_.WaitFragmentation();
  for (int i = 1; i < 4; ++i) Frame(i < 3);
  std::string error;
  if (!WritePng(png, &error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 2;
  }
  std::fprintf(stderr, "wrote %s\n", png.c_str());
  // Headless, an error the frame draws is the run's error too (exit 2), not only pixels.
  if (const std::string failed = min_limit_job_.error(); !failed.empty()) {
    std::fprintf(stderr, "error: minimal limit: %s\n", failed.c_str());
    return 2;
  }
  // A state or an error message has nothing to replay: compare says so and that is no failure.
  const bool replayable = document_ != nullptr && document_->model->header().kind == traces::EvidenceKind::kHistory;
  if (options_.panel == "compare" && replayable && !compare_.has_result()) {
    std::fprintf(stderr, "error: the compare view's replays failed (the reason is drawn in %s)\n", png.c_str());
    return 2;
  }
  return 0;
}

int App::RunBench() {
  const auto start = Clock::now();
  Frame(true);
  const double first_frame = Seconds(start);  // the window is up while the trace loads
  if (!WaitLoaded(false)) {
    std::fprintf(stderr, "error: %s\n", load_error_.c_str());
    return 2;
  }
  const double loaded = Seconds(start);
  const auto first_full = Clock::now();
  Frame(true);
  const double first_full_frame = Seconds(first_full);
  const double first_model_frame = Seconds(start);
  const std::uint64_t n = document_->model->event_count();
  std::vector<double> zoom, pan, cursor;
  const double total = static_cast<double>(n);
  std::vector<double> ui, render;
  std::vector<double> ui_of[3];  // the inspector's own work, by phase: zoom, pan, cursor
  auto timed = [&](std::vector<double>* out) {
    const auto t0 = Clock::now();
    Frame(false);
    out->push_back(Seconds(t0) * 1e3);
    ui.push_back(last_ui_ms_);
    render.push_back(last_render_ms_);
    ui_of[out == &zoom ? 0 : out == &pan ? 1 : 2].push_back(last_ui_ms_);
  };
  // Zoom in to 100 events around several anchors and back out.
  for (int round = 0; round < 4; ++round) {
    const double anchor = total * (0.1 + 0.25 * round);
    selection_.view = {0, total};
    for (int i = 0; i < 40; ++i) {
      selection_.view.Zoom(anchor, 0.75, 10, total);
      timed(&zoom);
    }
    for (int i = 0; i < 40; ++i) {
      selection_.view.Zoom(anchor, 1 / 0.75, 10, total);
      timed(&zoom);
    }
  }
  // Pan across the trace at a 1 % zoom.
  selection_.view = {0, total / 100};
  for (int i = 0; i < 200; ++i) {
    selection_.view.Pan(total / 200, total);
    timed(&pan);
  }
  // Move the cursor: by single events, by pages, by jumps across the trace.
  selection_.view = {0, total};
  std::uint64_t c = n / 3;
  for (int i = 0; i < 200; ++i) {
    c = i % 4 == 0 ? (c + n / 7) % std::max<std::uint64_t>(n, 1) : analysis::MoveCursor(c, i % 2 == 0 ? 1 : 4096, n);
    SetCursor(c);
    timed(&cursor);
  }
  auto report = [](const char* name, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto pct = [&](double p) { return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))]; };
    std::printf("%-7s frames %4zu  p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n", name, v.size(),
                pct(0.5), pct(0.9), pct(0.99), v.empty() ? 0 : v.back());
  };
  const analysis::TimelineFootprint footprint = document_->model->footprint();
  std::printf("trace %s: %llu events (%s)\n", document_->path.c_str(), static_cast<unsigned long long>(n),
              document_->format.c_str());
  std::printf("window up (first frame)   %.3f s\n", first_frame);
  std::printf("trace loaded              %.3f s (load %.3f s)\n", loaded, document_->load_seconds);
  std::printf("first frame with the model %.3f s after start (that frame %.1f ms)\n", first_model_frame,
              first_full_frame * 1e3);
  report("zoom", zoom);
  report("pan", pan);
  report("cursor", cursor);
  std::vector<double> all = zoom;
  all.insert(all.end(), pan.begin(), pan.end());
  all.insert(all.end(), cursor.begin(), cursor.end());
  report("all", all);
  report("(ui)", ui);        // events, panels, draw lists: the CPU side of a frame
  report(" zoom", ui_of[0]);  // ... by phase, to see which one its tail comes from
  report(" pan", ui_of[1]);
  report(" cursor", ui_of[2]);
  report("(gl)", render);    // OpenGL rendering until glFinish (Mesa llvmpipe under Xvfb: also CPU)
  // What llvmpipe rasterises: triangles, and the pixels they cover (clipped to their clip
  // rectangles), against the window's pixels: the overdraw.
  double covered = 0;
  const ImDrawData* data = ImGui::GetDrawData();
  for (int l = 0; l < data->CmdListsCount; ++l) {
    const ImDrawList* list = data->CmdLists[l];
    for (const ImDrawCmd& cmd : list->CmdBuffer) {
      if (cmd.UserCallback != nullptr) continue;
      for (unsigned i = 0; i + 2 < cmd.ElemCount; i += 3) {
        const ImVec2 a = list->VtxBuffer[static_cast<int>(cmd.VtxOffset + list->IdxBuffer[static_cast<int>(cmd.IdxOffset + i)])].pos;
        const ImVec2 b = list->VtxBuffer[static_cast<int>(cmd.VtxOffset + list->IdxBuffer[static_cast<int>(cmd.IdxOffset + i + 1)])].pos;
        const ImVec2 v = list->VtxBuffer[static_cast<int>(cmd.VtxOffset + list->IdxBuffer[static_cast<int>(cmd.IdxOffset + i + 2)])].pos;
        // Clip the triangle's bounding box (ImGui's triangles here are halves of rectangles and
        // glyph quads, so half the clipped box is the triangle's share).
        const float x0 = std::max(std::min({a.x, b.x, v.x}), cmd.ClipRect.x), x1 = std::min(std::max({a.x, b.x, v.x}), cmd.ClipRect.z);
        const float y0 = std::max(std::min({a.y, b.y, v.y}), cmd.ClipRect.y), y1 = std::min(std::max({a.y, b.y, v.y}), cmd.ClipRect.w);
        if (x1 > x0 && y1 > y0) covered += 0.5 * static_cast<double>(x1 - x0) * static_cast<double>(y1 - y0);
      }
    }
  }
  const double window_pixels = static_cast<double>(data->DisplaySize.x) * static_cast<double>(data->DisplaySize.y);
  std::printf("draw data: %d vertices, %d indices (%d triangles), %.2f Mpixel covered = %.2fx the window, in the last frame\n",
              data->TotalVtxCount, data->TotalIdxCount, data->TotalIdxCount / 3, covered / 1e6,
              window_pixels > 0 ? covered / window_pixels : 0.0);
  std::printf("model footprint %.1f MiB, peak RSS %.1f MiB (%.2fx the model)\n",
              static_cast<double>(footprint.total()) / (1 << 20), static_cast<double>(PeakRssBytes()) / (1 << 20),
              static_cast<double>(PeakRssBytes()) / static_cast<double>(std::max<std::uint64_t>(footprint.total(), 1)));
  return 0;
}

}  // namespace fragscope::gui
