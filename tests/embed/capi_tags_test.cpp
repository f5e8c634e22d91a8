// Tags through the C ABI across traces: a live allocation keeps its tag in every trace attached
// later, whatever was interned in between, and a tag given with no trace attached is kept.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/fragscope.h"
#include "fragscope/traces/trace_reader.hpp"

namespace {

namespace fs = std::filesystem;

// Size of each allocation event -> its tag's name, in `path`.
std::map<std::uint64_t, std::string> TagsBySize(const fs::path& path) {
  const auto trace = fragscope::traces::ReadTrace(path.string());
  std::map<std::uint64_t, std::string> tags;
  for (const auto& event : trace.events) {
    if (event.type == fragscope::traces::EventType::kAlloc) tags[event.size] = trace.TagName(event.tag);
  }
  return tags;
}

class CapiTags : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("capi_tags_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_EQ(fragscope_create("backing=sim,growth=on,limit=64MiB", &allocator_), FRAGSCOPE_OK);
  }
  void TearDown() override {
    fragscope_destroy(allocator_);
    fs::remove_all(dir_);
  }
  void* Malloc(std::uint64_t size, const char* tag) {
    void* ptr = nullptr;
    EXPECT_EQ(fragscope_malloc_tagged(allocator_, size, 0, 0, tag, &ptr), FRAGSCOPE_OK) << fragscope_last_error();
    return ptr;
  }
  fs::path dir_;
  fragscope_allocator* allocator_ = nullptr;
};

TEST_F(CapiTags, LiveAllocationsKeepTheirTagsInEveryLaterTrace) {
  void* early = Malloc(1000, "early");  // no trace attached yet
  const fs::path a = dir_ / "a.fst", b = dir_ / "b.fst";
  ASSERT_EQ(fragscope_attach_trace(allocator_, a.c_str()), FRAGSCOPE_OK);
  void* weights = Malloc(2000, "weights");
  void* activations = Malloc(3000, "activations");
  ASSERT_EQ(fragscope_mark(allocator_, 0, "step 1"), FRAGSCOPE_OK);
  ASSERT_EQ(fragscope_attach_trace(allocator_, b.c_str()), FRAGSCOPE_OK);  // closes a.fst
  // b.fst's writer interns in its own order: "grad" first would have taken the id of "early".
  void* grad = Malloc(4000, "grad");
  void* optimizer = Malloc(5000, "optimizer");
  void* untagged = Malloc(6000, nullptr);
  ASSERT_EQ(fragscope_detach_trace(allocator_), FRAGSCOPE_OK);

  EXPECT_EQ(TagsBySize(a), (std::map<std::uint64_t, std::string>{
                               {1000, "early"}, {2000, "weights"}, {3000, "activations"}}));
  EXPECT_EQ(TagsBySize(b), (std::map<std::uint64_t, std::string>{{1000, "early"},
                                                                 {2000, "weights"},
                                                                 {3000, "activations"},
                                                                 {4000, "grad"},
                                                                 {5000, "optimizer"},
                                                                 {6000, ""}}));
  const auto trace_a = fragscope::traces::ReadTrace(a.string());
  int markers = 0;
  for (const auto& event : trace_a.events) {
    if (event.type == fragscope::traces::EventType::kMarker) {
      EXPECT_EQ(trace_a.TagName(event.tag), "step 1");
      ++markers;
    }
  }
  EXPECT_EQ(markers, 1);
  for (void* ptr : {early, weights, activations, grad, optimizer, untagged}) {
    EXPECT_EQ(fragscope_free(allocator_, ptr, 0), FRAGSCOPE_OK);
  }
}

TEST_F(CapiTags, ThreadsTaggingWhileTracesAreAttachedAndDetachedNeverMislabel) {
  // Each thread allocates with its own tag while the main thread swaps traces; every allocation
  // event of every trace must carry the tag its size says.
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([this, t] {
      const std::string tag = "thread " + std::to_string(t);
      for (int i = 0; i < 300; ++i) {
        void* ptr = nullptr;
        if (fragscope_malloc_tagged(allocator_, 256 * static_cast<std::uint64_t>(t + 1), 0, 0, tag.c_str(), &ptr) ==
            FRAGSCOPE_OK) {
          fragscope_free(allocator_, ptr, 0);
        }
      }
    });
  }
  std::vector<fs::path> traces;
  for (int k = 0; k < 6; ++k) {
    traces.push_back(dir_ / ("t" + std::to_string(k) + ".fst"));
    ASSERT_EQ(fragscope_attach_trace(allocator_, traces.back().c_str()), FRAGSCOPE_OK);
    std::this_thread::yield();
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(fragscope_detach_trace(allocator_), FRAGSCOPE_OK);
  for (const auto& path : traces) {
    for (const auto& [size, tag] : TagsBySize(path)) {
      EXPECT_EQ(tag, "thread " + std::to_string(size / 256 - 1)) << path;
    }
  }
}

// A configuration for CUDA device 1 (device=1) names itself device 1 in reports and traces; that
// number is accepted back, as is the index 0, and a device it is not is refused naming both.
TEST(CapiDevices, TheNumberAReportGivesCanBePassedBack) {
  fragscope_allocator* allocator = nullptr;
  ASSERT_EQ(fragscope_create("backing=sim,device=1,limit=4MiB", &allocator), FRAGSCOPE_OK);
  void* ptr = nullptr;
  EXPECT_EQ(fragscope_malloc(allocator, 64u << 20, 0, 0, &ptr), FRAGSCOPE_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(fragscope_last_error()).find("out of memory on device 1"), std::string::npos)
      << fragscope_last_error();
  char buffer[4096];
  size_t needed = 0;
  EXPECT_EQ(fragscope_last_oom_json(allocator, 1, buffer, sizeof buffer, &needed), FRAGSCOPE_OK) << fragscope_last_error();
  EXPECT_NE(std::string(buffer).find("\"device\":1"), std::string::npos) << buffer;
  EXPECT_EQ(fragscope_last_oom_json(allocator, 0, buffer, sizeof buffer, &needed), FRAGSCOPE_OK);
  EXPECT_EQ(fragscope_malloc(allocator, 1024, 1, 0, &ptr), FRAGSCOPE_OK);
  EXPECT_EQ(fragscope_free(allocator, ptr, 1), FRAGSCOPE_OK);
  EXPECT_EQ(fragscope_malloc(allocator, 1024, 2, 0, &ptr), FRAGSCOPE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fragscope_last_error()).find("which reports call device 1"), std::string::npos)
      << fragscope_last_error();
  fragscope_destroy(allocator);
}

}  // namespace
