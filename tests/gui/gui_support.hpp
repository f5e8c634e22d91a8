// What the inspector's windowed tests share: an App opened on a trace (or a skip when there is no
// display), frames rendered and read back pixel by pixel.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::gui::testing {

inline constexpr std::uint64_t kMiB = 1 << 20;
inline const std::string kSamples = std::string(FRAGSCOPE_SOURCE_DIR) + "/traces/samples/";

struct Rgb {
  std::uint8_t r, g, b;
  bool operator==(const Rgb&) const = default;
};
inline Rgb ToRgb(ImU32 c) {
  return {static_cast<std::uint8_t>(c & 0xff), static_cast<std::uint8_t>((c >> 8) & 0xff),
          static_cast<std::uint8_t>((c >> 16) & 0xff)};
}

class Frame {
 public:
  explicit Frame(const App& app) { pixels_ = app.ReadPixels(&width_, &height_); }
  Rgb At(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 4;
    return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
  }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  std::vector<std::uint8_t> pixels_;
  int width_ = 0, height_ = 0;
};

// An App showing one panel, or the test skips when there is no display.
inline std::unique_ptr<App> OpenApp(const std::string& trace, const std::string& panel, std::optional<std::uint64_t> at,
                             std::string* skip) {
  ViewOptions options;
  options.trace = trace;
  options.panel = panel;
  options.at = at;
  options.persist = false;
  options.width = 1200;
  options.height = 800;
  auto app = std::make_unique<App>(options);
  std::string error;
  if (!app->Init(&error)) {
    *skip = "no display (" + error + "); run under xvfb-run";
    return nullptr;
  }
  return app;
}

// Appends an event to a hand-made trace (allocations and frees in the region at 0x10000000).
inline traces::Event& AddEvent(traces::Trace& trace, traces::EventType type, std::uint64_t address, std::uint64_t size,
                               traces::TagId tag) {
  traces::Event& e = trace.events.emplace_back();
  e.type = type;
  e.seq = trace.events.size() - 1;
  e.address = address;
  e.size = size;
  e.tag = tag;
  if (type == traces::EventType::kAlloc || type == traces::EventType::kFree) {
    e.rounded = size;
    e.region = 0x10000000;
    e.alloc_id = e.seq + 1;
  }
  return e;
}

// The pixel row of `bytes` on a timeline plot whose top stands for `y_max` bytes (as it draws it).
inline int RowOf(const PixelRect& plot, std::uint64_t y_max, std::uint64_t bytes) {
  const double h = plot.y1 - plot.y0;
  return static_cast<int>(std::round(plot.y1 - static_cast<double>(bytes) / static_cast<double>(y_max) * h));
}

inline void Render(App& app) {
  for (int i = 0; i < 3; ++i) app.Frame(true);
  app.Frame(false);  // left in the back buffer for ReadPixels
}

}  // namespace fragscope::gui::testing
