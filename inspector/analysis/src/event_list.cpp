#include "fragscope/analysis/event_list.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope::analysis {

std::string DescribeEvent(const TimelineModel& model, const traces::Event& e) {
  using traces::EventType;
  using traces::FormatBytes;
  const std::string tag = e.tag == traces::kNoTag ? std::string() : ", tag " + model.TagName(e.tag);
  switch (e.type) {
    case EventType::kAlloc:
      if (e.rounded != 0 && e.rounded != e.size) {
        return fmt::format("alloc {} (rounded {}) at {:#x}{}", FormatBytes(e.size), FormatBytes(e.rounded), e.address, tag);
      }
      return fmt::format("alloc {} at {:#x}{}", FormatBytes(e.size), e.address, tag);
    case EventType::kFree:
      return fmt::format("free {} at {:#x}{}", FormatBytes(e.rounded != 0 ? e.rounded : e.size), e.address, tag);
    case EventType::kOom:
      // A TensorFlow OOM line may give no size ("RESOURCE_EXHAUSTED: failed to allocate memory").
      if (!e.oom.Has(traces::kOomRequest))
        return fmt::format("OUT OF MEMORY: a request of unknown size failed ({}){}", traces::ToString(e.oom.cause), tag);
      return fmt::format("OUT OF MEMORY: a request of {} failed ({}){}", FormatBytes(e.oom.rounded != 0 ? e.oom.rounded : e.oom.request),
                         traces::ToString(e.oom.cause), tag);
    case EventType::kMarker:
      return fmt::format("marker: {}", e.tag == traces::kNoTag ? std::string("(unnamed)") : model.TagName(e.tag));
    case EventType::kRegionReserve: return fmt::format("region reserved: {} at {:#x}", FormatBytes(e.size), e.address);
    case EventType::kRegionRelease: return fmt::format("region released: {} at {:#x}", FormatBytes(e.size), e.address);
    case EventType::kAddressReserve:
      return fmt::format("address space reserved: {} at {:#x}", FormatBytes(e.size), e.address);
    case EventType::kAddressRelease:
      return fmt::format("address space released: {} at {:#x}", FormatBytes(e.size), e.address);
    case EventType::kMap: return fmt::format("pages mapped: {} at {:#x}", FormatBytes(e.size), e.address);
    case EventType::kUnmap: return fmt::format("pages unmapped: {} at {:#x}", FormatBytes(e.size), e.address);
  }
  return fmt::format("event of type {}", static_cast<int>(e.type));
}

std::vector<EventRow> EventsAround(const TimelineModel& model, std::uint32_t device, std::uint64_t cursor,
                                   std::size_t before, std::size_t after, std::uint64_t max_scan) {
  std::vector<EventRow> rows;
  const std::uint64_t n = model.event_count();
  if (n == 0) return rows;
  cursor = std::min(cursor, n - 1);
  std::vector<std::uint64_t> earlier;
  for (std::uint64_t i = cursor, scanned = 0; i-- > 0 && earlier.size() < before && scanned < max_scan; ++scanned) {
    if (model.event(i).device == device) earlier.push_back(i);
  }
  std::vector<std::uint64_t> indices(earlier.rbegin(), earlier.rend());
  std::size_t later = 0;
  for (std::uint64_t i = cursor, scanned = 0; i < n && scanned <= max_scan; ++i, ++scanned) {
    if (model.event(i).device != device) continue;
    if (i != cursor) {
      if (later == after) break;
      ++later;
    }
    indices.push_back(i);
  }
  rows.reserve(indices.size());
  for (const std::uint64_t i : indices) {
    EventRow& row = rows.emplace_back();
    row.index = i;
    row.event = model.event(i);
    row.what = DescribeEvent(model, row.event);
    row.in_use = model.ValueAt(device, Series::kInUse, i);
    row.reserved = model.ValueAt(device, Series::kReserved, i);
  }
  return rows;
}

}  // namespace fragscope::analysis
