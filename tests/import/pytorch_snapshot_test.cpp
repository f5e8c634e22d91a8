// The PyTorch snapshot importer: the four real snapshots of ../shared/data/torch (skipped when
// that folder is absent) and small snapshots built here for what they do not cover (several
// devices, expandable segments, oom, torch 2.0 block history, inconsistencies, bad input).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fragscope/traces/pytorch_snapshot.hpp"

namespace fragscope::traces {
namespace {

const std::string kDataDir = FRAGSCOPE_SOURCE_DIR "/../shared/data/torch";

#define REQUIRE_DATA(file)                                                                    \
  if (!std::filesystem::exists(kDataDir + "/" + (file))) {                                    \
    GTEST_SKIP() << "shared data absent: " << kDataDir << "/" << (file)                        \
                 << " (third-party snapshots live outside the project; see the data README)"; \
  }

// What a consumer that matches frees by (device, address) sees.
struct Replay {
  std::map<EventType, std::uint64_t> counts;
  std::uint64_t unmatched_frees = 0;
  std::map<std::uint32_t, std::uint64_t> peak_live;  // per device
  std::map<std::uint32_t, std::uint64_t> end_live;
  std::map<std::uint32_t, std::uint64_t> end_reserved;
  std::uint64_t live_allocs_at_end = 0;
};

Replay ReplayOf(const Trace& trace) {
  Replay r;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> live;
  for (const Event& e : trace.events) {
    ++r.counts[e.type];
    if (e.type == EventType::kAlloc) {
      live[{e.device, e.address}] = e.size;
      r.end_live[e.device] += e.size;
      r.peak_live[e.device] = std::max(r.peak_live[e.device], r.end_live[e.device]);
    } else if (e.type == EventType::kFree) {
      auto it = live.find({e.device, e.address});
      if (it == live.end()) {
        ++r.unmatched_frees;
      } else {
        r.end_live[e.device] -= it->second;
        live.erase(it);
      }
    } else if (e.type == EventType::kRegionReserve) {
      r.end_reserved[e.device] += e.size;
    } else if (e.type == EventType::kRegionRelease) {
      r.end_reserved[e.device] -= e.size;
    }
  }
  r.live_allocs_at_end = live.size();
  return r;
}

std::uint64_t Count(const Replay& r, EventType t) {
  auto it = r.counts.find(t);
  return it == r.counts.end() ? 0 : it->second;
}

std::uint64_t Markers(const Trace& t, const std::string& name) {
  return static_cast<std::uint64_t>(std::count_if(t.events.begin(), t.events.end(), [&](const Event& e) {
    return e.type == EventType::kMarker && t.TagName(e.tag) == name;
  }));
}

// Common checks of a well-formed import.
void CheckShape(const Trace& t) {
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    ASSERT_EQ(t.events[i].seq, i);
    if (i > 0) {
      ASSERT_GE(t.events[i].time_ns, t.events[i - 1].time_ns);
    }
    if (t.events[i].type == EventType::kAlloc) {
      ASSERT_FALSE(t.TagName(t.events[i].tag).empty()) << "event " << i;
      ASSERT_GE(t.events[i].rounded, t.events[i].size);
    }
  }
  EXPECT_EQ(t.header.producer, "PyTorch memory snapshot");
  EXPECT_EQ(t.header.source_format, "pytorch-snapshot");
  if (!t.stacks.empty()) {
    ASSERT_EQ(t.event_stacks.size(), t.events.size());
    for (std::uint32_t s : t.event_stacks) ASSERT_LE(s, t.stacks.size());
  }
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(PytorchSnapshot, LinearGradTiny) {
  REQUIRE_DATA("pt_linear_grad_tiny.pickle");
  const Trace t = ReadPytorchSnapshot(kDataDir + "/pt_linear_grad_tiny.pickle");
  CheckShape(t);
  EXPECT_TRUE(t.warnings.empty()) << Joined(t.warnings);
  // 33 traced events; nothing existed before recording started.
  EXPECT_EQ(t.events.size(), 33u);
  const Replay r = ReplayOf(t);
  EXPECT_EQ(Count(r, EventType::kRegionReserve), 7u);  // the 7 segments, all made while tracing
  EXPECT_EQ(Count(r, EventType::kAlloc), 12u);
  EXPECT_EQ(Count(r, EventType::kFree), 7u);
  EXPECT_EQ(Markers(t, "free_requested"), 7u);
  EXPECT_EQ(r.unmatched_frees, 0u);
  EXPECT_EQ(r.end_reserved.at(0), 4439670784u);  // sum of the segments' total_size
  // Live requested at the end = the segments' requested_size sum; peak from the trace.
  EXPECT_EQ(r.end_live.at(0), 3233754432u);
  EXPECT_EQ(r.peak_live.at(0), 4434803008u);
  EXPECT_EQ(r.live_allocs_at_end, 5u);  // the 5 active blocks of the segments
  ASSERT_EQ(t.header.devices.size(), 1u);
  EXPECT_EQ(t.header.devices[0].name, "cuda:0");
  EXPECT_EQ(t.header.devices[0].backing, "pytorch");
  // The tag is the innermost frame outside torch and the Python library: the user's script.
  EXPECT_EQ(t.TagName(t.events[1].tag), "profile_grad.py:8:<module>");
  ASSERT_FALSE(t.stacks.empty());
  const std::string& stack = t.stacks[t.event_stacks[1] - 1];
  EXPECT_EQ(stack.substr(0, stack.find('\n')), "??:0:torch::unwind::unwind()");
  EXPECT_NE(stack.find("profile_grad.py:8:<module>"), std::string::npos);
  // The source's settings are typed facts, not metadata keys matched by prefix.
  ASSERT_NE(t.header.source.Setting("expandable_segments"), nullptr);
  EXPECT_EQ(*t.header.source.Setting("expandable_segments"), "False");
  EXPECT_EQ(t.header.source.allocator, "PyTorch CUDA caching allocator");
  EXPECT_EQ(t.header.source.rounding, 512u);
  for (const auto& [key, value] : t.header.metadata) {
    EXPECT_NE(key.rfind("allocator_settings.", 0), 0u) << key;
    EXPECT_EQ(key.find("before_recording"), std::string::npos) << key;
  }
}

TEST(PytorchSnapshot, EorCnnCounterfactuals) {
  REQUIRE_DATA("pt_eor_cnn_counterfactuals.pickle");
  const Trace t = ReadPytorchSnapshot(kDataDir + "/pt_eor_cnn_counterfactuals.pickle");
  CheckShape(t);
  EXPECT_TRUE(t.warnings.empty()) << Joined(t.warnings);
  // The first 34 events only reconstruct the start: the header says so (a typed fact).
  EXPECT_EQ(t.header.source.reconstructed_events, 34u);
  // 3 segments and 31 blocks existed before recording: 34 state events, then the 5,803 traced.
  EXPECT_EQ(t.events.size(), 34u + 5803u);
  EXPECT_EQ(Markers(t, "snapshot"), 9u);
  const Replay r = ReplayOf(t);
  EXPECT_EQ(Count(r, EventType::kRegionReserve), 10u);
  EXPECT_EQ(Count(r, EventType::kAlloc), 31u + 1935u);
  EXPECT_EQ(Count(r, EventType::kFree), 1926u);
  EXPECT_EQ(r.unmatched_frees, 0u);
  EXPECT_EQ(r.end_reserved.at(0), 128u << 20);
  EXPECT_EQ(r.end_live.at(0), 48748928u);  // = sum of the segments' requested_size
  EXPECT_EQ(r.peak_live.at(0), 108258676u);
  EXPECT_EQ(r.live_allocs_at_end, 40u);
  EXPECT_EQ(t.TagName(t.events[3].tag), "(allocated before recording)");
}

TEST(PytorchSnapshot, Cs336TransformerForward) {
  REQUIRE_DATA("pt_cs336_lm_ctx128_forward.pickle");
  const Trace t = ReadPytorchSnapshot(kDataDir + "/pt_cs336_lm_ctx128_forward.pickle");
  CheckShape(t);
  EXPECT_TRUE(t.warnings.empty()) << Joined(t.warnings);
  // 227 segments and 324 blocks existed before recording, then 4,657 traced events.
  EXPECT_EQ(t.events.size(), 227u + 324u + 4657u);
  const Replay r = ReplayOf(t);
  EXPECT_EQ(Count(r, EventType::kRegionReserve), 516u);
  EXPECT_EQ(Count(r, EventType::kAlloc), 324u + 2058u);
  EXPECT_EQ(Count(r, EventType::kFree), 1155u);
  EXPECT_EQ(r.unmatched_frees, 0u);
  EXPECT_EQ(r.end_reserved.at(0), 19667091456u);  // 18.3 GiB
  EXPECT_EQ(r.end_live.at(0), 19352504320u);      // = the segments' requested_size sum
  EXPECT_EQ(r.peak_live.at(0), 19352504320u);     // a forward pass: the peak is at the end
  EXPECT_EQ(r.live_allocs_at_end, 1227u);
}

TEST(PytorchSnapshot, FlexgenStateOnlyTorch20) {
  REQUIRE_DATA("pt_flexgen_opt_oom_state.pickle");
  const Trace t = ReadPytorchSnapshot(kDataDir + "/pt_flexgen_opt_oom_state.pickle");
  CheckShape(t);
  EXPECT_TRUE(t.warnings.empty()) << Joined(t.warnings);
  // State only: 176 segments and 460 live blocks as events, then the one `snapshot` event.
  EXPECT_EQ(t.events.size(), 176u + 460u + 1u);
  const Replay r = ReplayOf(t);
  EXPECT_EQ(Count(r, EventType::kRegionReserve), 176u);
  EXPECT_EQ(Count(r, EventType::kAlloc), 460u);
  EXPECT_EQ(r.end_reserved.at(0), 11844714496u);  // 11.03 GiB
  EXPECT_EQ(r.end_live.at(0), 11840159744u);
  EXPECT_EQ(Markers(t, "snapshot"), 1u);
  // torch 2.0 blocks: addresses from the segment address plus the sizes before; frames from the
  // block's history.
  EXPECT_EQ(t.events[176].address, 140037408686080u);
  EXPECT_EQ(t.TagName(t.events[176].tag).rfind("pytorch_backend.py:190:allocate", 0), 0u)
      << t.TagName(t.events[176].tag);
  EXPECT_EQ(t.stacks.size() > 0, true);
}

TEST(PytorchSnapshot, Detection) {
  REQUIRE_DATA("pt_linear_grad_tiny.pickle");
  std::ifstream in(kDataDir + "/pt_linear_grad_tiny.pickle", std::ios::binary);
  std::vector<std::uint8_t> head(64);
  in.read(reinterpret_cast<char*>(head.data()), 64);
  EXPECT_TRUE(LooksLikePytorchSnapshot(head));
  const std::string text = "{\"traceEvents\": []}                                    ";
  EXPECT_FALSE(LooksLikePytorchSnapshot(
      std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size())));
  std::vector<std::uint8_t> other_pickle = {0x80, 4, 0x95, 0, 0, 0, 0, 0, 0, 0, 0x8c, 5, 'h', 'e', 'l', 'l', 'o', 0x2e};
  EXPECT_FALSE(LooksLikePytorchSnapshot(other_pickle));
}

}  // namespace
}  // namespace fragscope::traces
