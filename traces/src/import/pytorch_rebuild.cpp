// The state of one device at the start of recording, rebuilt from the snapshot's final segments
// by undoing the device's trace backwards: an alloc is undone by removing its block, a
// free_completed by bringing its block back, segment_alloc / segment_map by removing the range,
// segment_free / segment_unmap by adding it back. What is left are the segments and blocks that
// existed before the first traced event. Disagreements are warnings.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pytorch_model.hpp"

namespace fragscope::traces::pytorch_import {

bool Overlaps(const RangeMap& ranges, std::uint64_t address, std::uint64_t size) {
  const std::uint64_t end = address + size;
  auto it = ranges.lower_bound(address);
  if (it != ranges.end() && it->first < end) return true;
  if (it != ranges.begin()) {
    --it;
    if (it->first + it->second > address) return true;
  }
  return false;
}

std::uint64_t Carve(RangeMap& ranges, std::uint64_t address, std::uint64_t size) {
  const std::uint64_t end = address + size;
  auto it = ranges.upper_bound(address);
  if (it != ranges.begin()) --it;
  std::uint64_t covered = 0;
  while (it != ranges.end() && it->first < end) {
    const std::uint64_t start = it->first;
    const std::uint64_t stop = it->first + it->second;
    if (stop <= address) {
      ++it;
      continue;
    }
    covered += std::min(stop, end) - std::max(start, address);
    it = ranges.erase(it);
    if (start < address) ranges.emplace(start, address - start);
    if (stop > end) it = ranges.emplace(end, stop - end).first;
  }
  return covered;
}

RangeMap::const_iterator Containing(const RangeMap& ranges, std::uint64_t address) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return address - it->first < it->second ? it : ranges.end();
}

std::uint64_t RoundBlock(std::uint64_t bytes) {
  constexpr std::uint64_t kMinBlock = 512;
  if (bytes > std::numeric_limits<std::uint64_t>::max() - kMinBlock) return bytes;
  return bytes < kMinBlock ? kMinBlock : (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
}

void WarningLog::Add(const std::string& kind, const std::string& message) {
  constexpr std::uint64_t kVerbatim = 10;
  if (++counts_[kind] <= kVerbatim) lines_.push_back(prefix_ + message);
}

std::vector<std::string> WarningLog::Finish() {
  for (const auto& [kind, count] : counts_) {
    if (count > 10) {
      lines_.push_back(fmt::format("{}{} warnings of this kind: {} (first 10 shown)", prefix_,
                                   count, kind));
    }
  }
  return std::move(lines_);
}

DeviceStart RebuildStart(std::uint32_t device, const SourceSnapshot& snapshot, WarningLog& log) {
  DeviceStart start;
  // The final state.
  for (const SourceSegment& seg : snapshot.segments) {
    if (seg.device != device) continue;
    if (seg.total_size == 0) continue;
    if (Overlaps(start.regions, seg.address, seg.total_size)) {
      log.Add("overlapping segments",
              fmt::format("device {}: segment {:#x} (+{}) overlaps another segment; skipped",
                          device, seg.address, seg.total_size));
      continue;
    }
    start.regions.emplace(seg.address, seg.total_size);
    for (const SourceBlock& block : seg.blocks) {
      if (!block.live) continue;
      start.blocks[block.address] = StartBlock{block.size, block.requested, seg.stream, block.frames};
    }
  }
  const std::vector<SourceEvent> empty;
  const auto& events = device < snapshot.device_traces.size() ? snapshot.device_traces[device] : empty;
  start.alloc_rounded.assign(events.size(), 0);
  for (std::size_t i = events.size(); i-- > 0;) {
    const SourceEvent& e = events[i];
    switch (e.action) {
      case Action::kAlloc: {
        auto it = start.blocks.find(e.addr);
        if (it == start.blocks.end()) {
          log.Add("trace/segment disagreement",
                  fmt::format("device {} event {}: alloc at {:#x} matches no block that the "
                              "segments or a later free say is live after it",
                              device, i, e.addr));
          start.alloc_rounded[i] = RoundBlock(e.size);
        } else {
          start.alloc_rounded[i] = std::max(it->second.rounded, e.size);
          start.blocks.erase(it);
        }
        break;
      }
      case Action::kFreeCompleted:
        if (start.blocks.contains(e.addr)) {
          log.Add("trace/segment disagreement",
                  fmt::format("device {} event {}: free_completed at {:#x}, but the block is live "
                              "right after it",
                              device, i, e.addr));
        } else {
          start.blocks.emplace(e.addr, StartBlock{RoundBlock(e.size), e.size, e.stream, nullptr});
        }
        break;
      case Action::kSegmentAlloc: {
        auto it = start.regions.find(e.addr);
        if (it == start.regions.end() || it->second != e.size) {
          log.Add("trace/segment disagreement",
                  fmt::format("device {} event {}: segment_alloc at {:#x} (+{}) is not a segment "
                              "after it",
                              device, i, e.addr, e.size));
          Carve(start.regions, e.addr, e.size);
        } else {
          start.regions.erase(it);
        }
        break;
      }
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        if (e.size == 0 || e.addr > std::numeric_limits<std::uint64_t>::max() - e.size) break;
        if (Overlaps(start.regions, e.addr, e.size)) {
          log.Add("trace/segment disagreement",
                  fmt::format("device {} event {}: {} of {:#x} (+{}), but that memory is still "
                              "reserved after it",
                              device, i, e.action_name, e.addr, e.size));
        } else {
          start.regions.emplace(e.addr, e.size);
        }
        break;
      case Action::kSegmentMap:
        if (e.addr > std::numeric_limits<std::uint64_t>::max() - e.size) break;
        if (Carve(start.regions, e.addr, e.size) != e.size) {
          log.Add("trace/segment disagreement",
                  fmt::format("device {} event {}: segment_map of {:#x} (+{}) is not all mapped "
                              "after it",
                              device, i, e.addr, e.size));
        }
        break;
      default:
        break;
    }
  }
  for (const auto& [address, block] : start.blocks) {
    const auto region = Containing(start.regions, address);
    if (region == start.regions.end() ||
        address - region->first + block.rounded > region->second) {
      log.Add("block outside segments",
              fmt::format("device {}: block {:#x} (+{}), live at the start of recording, lies "
                          "outside the segments of that time",
                          device, address, block.rounded));
    }
  }
  return start;
}

RangeMap ExpandableSpaces(std::uint32_t device, const SourceSnapshot& snapshot, WarningLog& log) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> hulls;  // stream -> [begin, end)
  RangeMap ordinary;
  auto piece = [&](std::uint64_t stream, std::uint64_t address, std::uint64_t size) {
    if (size == 0 || address > kMax - size) return;
    auto [it, added] = hulls.try_emplace(stream, address, address + size);
    if (!added) {
      it->second.first = std::min(it->second.first, address);
      it->second.second = std::max(it->second.second, address + size);
    }
  };
  for (const SourceSegment& seg : snapshot.segments) {
    if (seg.device != device) continue;
    if (seg.expandable) {
      piece(seg.stream, seg.address, seg.total_size);
    } else if (seg.total_size > 0 && seg.address <= kMax - seg.total_size) {
      ordinary[seg.address] = std::max(ordinary[seg.address], seg.total_size);
    }
  }
  const std::vector<SourceEvent> empty;
  const auto& events = device < snapshot.device_traces.size() ? snapshot.device_traces[device] : empty;
  for (const SourceEvent& e : events) {
    if (e.action == Action::kSegmentMap || e.action == Action::kSegmentUnmap) {
      piece(e.stream, e.addr, e.size);
    } else if ((e.action == Action::kSegmentAlloc || e.action == Action::kSegmentFree) && e.size > 0 &&
               e.addr <= kMax - e.size) {
      ordinary[e.addr] = std::max(ordinary[e.addr], e.size);
    }
  }
  // Hulls by start; overlapping ones are one range.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sorted;
  for (const auto& [stream, hull] : hulls) sorted.push_back(hull);
  std::sort(sorted.begin(), sorted.end());
  RangeMap spaces;
  std::uint64_t begin = 0, end = 0;
  bool open = false;
  auto close = [&] {
    if (!open) return;
    // An ordinary segment inside the hull: the hull is no range PyTorch reserved as one.
    bool covers = false;
    for (auto it = ordinary.lower_bound(begin); it != ordinary.end() && it->first < end && !covers; ++it) covers = true;
    if (auto it = ordinary.lower_bound(begin); !covers && it != ordinary.begin()) {
      --it;
      covers = it->first + it->second > begin;
    }
    if (covers) {
      log.Add("expandable extent overlaps a segment",
              fmt::format("device {}: the expandable pieces in [{:#x}, {:#x}) enclose an ordinary segment; "
                          "they are read as separate regions",
                          device, begin, end));
    } else {
      spaces.emplace(begin, end - begin);
    }
    open = false;
  };
  for (const auto& [b, e] : sorted) {
    if (open && b < end) {
      end = std::max(end, e);
      continue;
    }
    close();
    begin = b;
    end = e;
    open = true;
  }
  close();
  return spaces;
}

}  // namespace fragscope::traces::pytorch_import
