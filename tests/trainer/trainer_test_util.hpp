// Shared helpers of the trainer tests: a host-memory device with the cpu backend.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/trainer/backend.hpp"
#include "fragscope/trainer/tensor.hpp"

namespace fragscope::trainer::testing {

struct HostDevice {
  explicit HostDevice(BackendKind kind = BackendKind::kCpu, const std::string& conf = "backing=host")
      : system(MemorySystem::Create(ParseAllocConf(conf))), backend(MakeBackend(kind)),
        dev(system->device(0), *backend, names) {}
  std::unique_ptr<MemorySystem> system;
  std::unique_ptr<Backend> backend;
  TagNames names;
  Device dev;

  Tensor Random(Shape shape, std::uint64_t seed, float scale = 1.0f, float away_from_zero = 0.0f) {
    Tensor t = dev.Alloc(shape, "test", "input");
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    for (long i = 0; i < t.count(); ++i) {
      float v = u(rng);
      if (away_from_zero > 0 && v > -away_from_zero && v < away_from_zero) v += v < 0 ? -away_from_zero : away_from_zero;
      t.f()[i] = v;
    }
    return t;
  }
};

inline std::vector<float> ToVector(const Tensor& t) { return std::vector<float>(t.f(), t.f() + t.count()); }

}  // namespace fragscope::trainer::testing

#include <filesystem>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::trainer::testing {

// A path in the temporary folder unique to this test and process.
inline std::string TempPath(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string file = std::string("fragscope-trainer-") + info->test_suite_name() + "-" + info->name() +
                     "-" + std::to_string(::getpid()) + "-" + name;
  for (char& c : file) c = c == '/' ? '_' : c;  // parameterized tests: "All/Suite.Test/param"
  return (std::filesystem::temp_directory_path() / file).string();
}

// One alloc or free of a trace, by its meaning: what an allocation schedule is.
struct ScheduleEntry {
  traces::EventType type;
  std::uint64_t size;
  std::string tag;
  bool operator==(const ScheduleEntry&) const = default;
};

inline std::vector<ScheduleEntry> Schedule(const traces::Trace& trace) {
  std::vector<ScheduleEntry> out;
  std::unordered_map<std::uint64_t, std::string> tag_of;  // alloc_id -> tag
  for (const traces::Event& e : trace.events) {
    if (e.type == traces::EventType::kAlloc) {
      tag_of[e.alloc_id] = trace.TagName(e.tag);
      out.push_back({e.type, e.size, trace.TagName(e.tag)});
    } else if (e.type == traces::EventType::kFree) {
      out.push_back({e.type, e.size, tag_of[e.alloc_id]});
    }
  }
  return out;
}

}  // namespace fragscope::trainer::testing
