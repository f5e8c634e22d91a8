// The timeline's axis (private to the timeline panel's files): event indices, or nanoseconds since
// the first event when the x axis is time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "document.hpp"

namespace fragscope::gui::timeline_axis {

inline double AxisTotal(const Document& document, bool time_axis) {
  const auto& model = *document.model;
  const std::uint64_t n = model.event_count();
  if (n == 0) return 1;
  if (!time_axis) return static_cast<double>(n);
  const double first = static_cast<double>(model.event(0).time_ns);
  const double last = static_cast<double>(model.event(n - 1).time_ns);
  return std::max(1.0, last - first + 1);
}

inline double TimeOrigin(const Document& document) {
  return document.model->event_count() == 0 ? 0 : static_cast<double>(document.model->event(0).time_ns);
}

// Axis position of an event (index, or ns since the first event).
inline double PositionOf(const Document& document, bool time_axis, std::uint64_t event) {
  if (!time_axis) return static_cast<double>(event);
  return static_cast<double>(document.model->event(event).time_ns) - TimeOrigin(document);
}

// The event at an axis position (the last one at or before it).
inline std::uint64_t EventAt(const Document& document, bool time_axis, double position) {
  const std::uint64_t n = document.model->event_count();
  if (n == 0) return 0;
  if (!time_axis) return std::min<std::uint64_t>(n - 1, static_cast<std::uint64_t>(std::max(0.0, position)));
  const std::uint64_t after = analysis::EventAtTime(*document.model, TimeOrigin(document) + position + 1);
  return after == 0 ? 0 : std::min(after - 1, n - 1);
}

inline std::string AxisLabel(bool time_axis, double position) {
  if (!time_axis) return fmt::format("event {}", static_cast<std::uint64_t>(position));
  return fmt::format("{:.3f} ms", position / 1e6);
}

}  // namespace fragscope::gui::timeline_axis
