// Private to the timeline model: external fragmentation over time (metrics.hpp: 1 - largest hole /
// free bytes in regions), after every event, per device.
//
// It is not part of Build: it needs the free ranges themselves (where the index keeps only the live
// chunks), and most uses of the model never ask for it. The first query runs one pass over the
// stored records (the index's decisions are in their flags, so nothing is checked twice) that keeps
// each device's holes in an ordered set with their sizes beside, and stores:
//   - per event, the value of its own device after it, as a 16-bit fraction (2 bytes an event);
//   - per device, min / max / end of each 64-event block it has events in (parallel to the series
//     pyramid's l1_at) and min / max of each whole 4096-event block (parallel to l2_at), so a plot
//     of any zoom reads a column from at most two block scans, as the byte series do;
//   - per device, the moments of the highest ratio and of the most bytes stranded outside the
//     largest hole, with their exact bytes.
// The holes are exactly StateAt's: each region (or mapped piece) minus every live chunk, never
// joined across two regions.
#pragma once

#include <cstdint>
#include <vector>

#include "fragscope/analysis/timeline.hpp"
#include "timeline_store.hpp"

namespace fragscope::analysis::timeline_detail {

struct ModelData;

// 65535 is a ratio of 1: a resolution of 1.5e-5, far below what a report prints (two decimals).
inline constexpr double kFragmentationScale = 65535.0;

struct FragmentationBlock {
  std::uint16_t min = 0, max = 0, end = 0;
};

struct DeviceFragmentation {
  std::vector<FragmentationBlock> l1;  // parallel to DeviceData::l1_at
  std::vector<FragmentationBlock> l2;  // parallel to DeviceData::l2_at (end unused)
  FragmentationSummary summary;
};

struct FragmentationData {
  ChunkedVector<std::uint16_t> by_event;      // the event's own device, after it
  std::vector<DeviceFragmentation> devices;   // by record device index
  std::uint64_t bytes() const;
};

// The pass: call once, after the model is built.
void BuildFragmentation(const ModelData& model, FragmentationData* out);

double FragmentationAt(const ModelData& model, const FragmentationData& data, std::uint32_t device,
                       std::uint64_t index);
void DownsampleFragmentation(const ModelData& model, const FragmentationData& data, std::uint32_t device,
                             std::uint64_t begin, std::uint64_t end, std::uint32_t columns,
                             std::vector<float>* min, std::vector<float>* max);

}  // namespace fragscope::analysis::timeline_detail
