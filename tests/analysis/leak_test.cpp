// The leak finding from step markers: growth at every step end is a leak, named by the tag that
// grew; steady or falling memory between steps, too few steps, or the first step's own growth
// (optimizer state) are not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fragscope/analysis/leak.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

// A tiny trace builder: tags 1.. are the names pushed into `tags`.
struct Script {
  std::vector<std::string> tags;
  LeakDetector detector;
  std::uint64_t next_address = 0x1000;

  traces::TagId Tag(const std::string& name) {
    for (std::size_t i = 0; i < tags.size(); ++i) if (tags[i] == name) return static_cast<traces::TagId>(i + 1);
    tags.push_back(name);
    return static_cast<traces::TagId>(tags.size());
  }
  std::uint64_t Alloc(std::uint64_t size, const std::string& tag, std::uint32_t device = 0) {
    Event e;
    e.type = EventType::kAlloc;
    e.device = device;
    e.address = next_address;
    next_address += size + 256;
    e.size = size;
    e.tag = Tag(tag);
    detector.Add(e, tags);
    return e.address;
  }
  void Free(std::uint64_t address, std::uint32_t device = 0) {
    Event e;
    e.type = EventType::kFree;
    e.device = device;
    e.address = address;
    detector.Add(e, tags);
  }
  void Mark(const std::string& name, std::uint32_t device = 0) {
    Event e;
    e.type = EventType::kMarker;
    e.device = device;
    e.tag = Tag(name);
    detector.Add(e, tags);
  }
  // One training step: activations come and go; `kept` bytes of `kept_tag` stay.
  void Step(int n, std::uint64_t kept, const std::string& kept_tag = "input/images") {
    Mark("step " + std::to_string(n) + " begin");
    const std::uint64_t a = Alloc(4 << 20, "layer1/activation");
    if (kept > 0) Alloc(kept, kept_tag);
    Free(a);
    Mark("step " + std::to_string(n) + " end");
    Mark("step " + std::to_string(n) + " end", 1);  // a second device marks the same end
  }
};

TEST(Leak, GrowthAtEveryStepEndNamesTheTag) {
  Script s;
  s.Alloc(1 << 20, "fc/weight");
  s.Step(0, 0);
  s.Alloc(1 << 20, "fc/momentum");  // optimizer state after the first step: growth, no leak
  for (int i = 1; i <= 5; ++i) s.Step(i, 3000);
  const auto leak = s.detector.Finish();
  ASSERT_TRUE(leak.has_value());
  EXPECT_EQ(leak->first_step, 1u);
  EXPECT_EQ(leak->last_step, 5u);
  EXPECT_EQ(leak->steps, 4u);
  EXPECT_EQ(leak->live_first, (2u << 20) + 3000);
  EXPECT_EQ(leak->live_last, (2u << 20) + 5 * 3000);
  EXPECT_EQ(leak->tag, "input/images");
  EXPECT_EQ(leak->tag_growth, 4u * 3000);
  EXPECT_NE(leak->explanation.find("most of the growth is 'input/images'"), std::string::npos) << leak->explanation;
  EXPECT_NE(leak->explanation.find("about 2.93 KiB per step"), std::string::npos) << leak->explanation;
}

TEST(Leak, SteadyMemoryIsNoLeak) {
  Script s;
  s.Alloc(1 << 20, "fc/weight");
  for (int i = 0; i <= 8; ++i) s.Step(i, 0);
  EXPECT_FALSE(s.detector.Finish().has_value());
}

TEST(Leak, OneFlatStepBreaksTheRule) {
  Script s;
  for (int i = 0; i <= 3; ++i) s.Step(i, 1000);
  s.Step(4, 0);  // no growth at this step end
  for (int i = 5; i <= 7; ++i) s.Step(i, 1000);
  EXPECT_FALSE(s.detector.Finish().has_value());
}

TEST(Leak, TooFewStepsOrNoMarkers) {
  Script s;
  for (int i = 0; i <= 2; ++i) s.Step(i, 1000);  // two step ends after the first: not enough
  EXPECT_FALSE(s.detector.Finish().has_value());
  s.Step(3, 1000);
  EXPECT_TRUE(s.detector.Finish().has_value());

  Script unmarked;
  for (int i = 0; i < 10; ++i) unmarked.Alloc(1000, "kept");
  unmarked.Mark("step x end");   // not a step number
  unmarked.Mark("backward");
  EXPECT_FALSE(unmarked.detector.Finish().has_value());
}

}  // namespace
}  // namespace fragscope::analysis
