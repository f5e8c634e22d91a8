// torch.profiler "[OutOfMemory]" instants: the allocator's reportOutOfMemory while the profiler ran
// ("Device Type", "Device Id", "Bytes", and "Total Allocated" / "Total Reserved" where the version
// writes them). Each becomes an oom event on its device, in time among the memory events, with the
// request and the totals it gives and nothing else: no limit, so the cause is unknown.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fragscope/traces/torch_profiler.hpp"
#include "torch_profiler_fixtures.hpp"

namespace fragscope::traces {
namespace {

using profiler_fixtures::MemoryEvent;
using profiler_fixtures::OomEvent;
using profiler_fixtures::Span;
using profiler_fixtures::Totals;

constexpr std::int64_t kMiB = 1 << 20;

std::string Describe(const Trace& t, const Event& e) {
  const std::string tag = t.TagName(e.tag);
  return fmt::format("{} {} {:#x} {}{}", ToString(e.type), e.device, e.address, e.size, tag.empty() ? "" : " " + tag);
}

std::string Error(const std::string& text) {
  try {
    (void)ParseTorchProfilerTrace(text, "oom.json");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

// cuda:0 holds 20 MiB reserved; aten::empty allocates 4 MiB, then asks for 64 MiB and fails; the
// 4 MiB are freed at the same microsecond, after the OOM in the file.
TEST(TorchProfilerOom, OutOfMemoryEventBecomesAnOomEventWithTheTotalsItGives) {
  const Trace t = ParseTorchProfilerTrace(
      profiler_fixtures::Trace({Span("aten::empty", 1000, 10),
                                MemoryEvent(1001, 4 * kMiB, 1, 0, 0x1000, "7", Totals{4 * kMiB, 20 * kMiB}),
                                OomEvent(1005, 64 * kMiB, 1, 0, Totals{4 * kMiB, 20 * kMiB}),
                                MemoryEvent(1005, -4 * kMiB, 1, 0, 0x1000, "7", Totals{0, 20 * kMiB})}),
      "oom.json");
  std::vector<std::string> seen;
  for (const Event& e : t.events) seen.push_back(Describe(t, e));
  EXPECT_EQ(seen, (std::vector<std::string>{"region_reserve 0 0x8000000000000000 20971520",
                                            "alloc 0 0x1000 4194304 aten::empty",
                                            "oom 0 0x0 67108864 aten::empty",  // before the free: first in the file
                                            "free 0 0x1000 4194304"}));
  const Event& oom = t.events[2];
  EXPECT_EQ(oom.time_ns, 4000u);  // 4 µs after the first memory event
  EXPECT_EQ(oom.oom.request, 64u * kMiB);
  EXPECT_EQ(oom.oom.rounded, 64u * kMiB);  // PyTorch reports the size it rounded to 512 bytes
  EXPECT_EQ(oom.oom.in_use, 4u * kMiB);
  EXPECT_EQ(oom.oom.reserved, 20u * kMiB);
  EXPECT_EQ(oom.oom.free_in_regions, 16u * kMiB);
  EXPECT_EQ(oom.oom.present, kOomRequest | kOomRounded | kOomInUse | kOomReserved | kOomFreeInRegions);
  EXPECT_FALSE(oom.oom.Has(kOomLimit));  // the event gives no limit and no free device memory
  EXPECT_EQ(oom.oom.cause, OomCause::kUnknown);
  EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();
}

// A trace whose window held no allocation but an OOM is read (the OOM is the evidence): a CPU OOM
// (PyTorch's CPU allocator reports 0 reserved: no reserved count), and one on cuda:1 from a
// version that wrote no Bytes and no totals (nothing known but where).
TEST(TorchProfilerOom, OomsAloneAreReadOnTheirOwnDevices) {
  const Trace t = ParseTorchProfilerTrace(
      profiler_fixtures::Trace({OomEvent(50, 1000, 0, -1, Totals{300, 0}), OomEvent(60, std::nullopt, 1, 1)},
                               R"("schemaVersion": 1, "deviceProperties": [{"id": 1, "name": "NVIDIA A100", "totalGlobalMem": 85000000000}])"),
      "alone.json");
  ASSERT_EQ(t.events.size(), 2u);
  ASSERT_EQ(t.header.devices.size(), 2u);
  EXPECT_EQ(t.header.devices[0].index, 1u);
  EXPECT_EQ(t.header.devices[0].name, "cuda:1 (NVIDIA A100)");
  EXPECT_EQ(t.header.devices[0].capacity, 85000000000u);
  EXPECT_EQ(t.header.devices[1].index, 1000000u);
  EXPECT_EQ(t.header.devices[1].name, "cpu (host memory)");

  const Event& cpu = t.events[0];
  EXPECT_EQ(cpu.type, EventType::kOom);
  EXPECT_EQ(cpu.device, 1000000u);
  EXPECT_EQ(cpu.time_ns, 0u);
  EXPECT_EQ(cpu.oom.request, 1000u);
  EXPECT_EQ(cpu.oom.in_use, 300u);
  EXPECT_EQ(cpu.oom.present, kOomRequest | kOomRounded | kOomInUse);
  EXPECT_EQ(cpu.oom.cause, OomCause::kUnknown);

  const Event& gpu = t.events[1];
  EXPECT_EQ(gpu.type, EventType::kOom);
  EXPECT_EQ(gpu.device, 1u);
  EXPECT_EQ(gpu.time_ns, 10000u);
  EXPECT_EQ(gpu.oom.present, 0u);  // no request, no totals: unknown, not 0
  EXPECT_EQ(gpu.oom.cause, OomCause::kUnknown);
  EXPECT_TRUE(t.header.source.reserved_without_layout.empty());
}

// A reserved total below the bytes in use cannot be a count of the pool: left out, not trusted.
TEST(TorchProfilerOom, ReservedBelowInUseIsLeftOut) {
  const Trace t = ParseTorchProfilerTrace(
      profiler_fixtures::Trace({OomEvent(5, 2 * kMiB, 1, 0, Totals{8 * kMiB, 4 * kMiB})}), "odd.json");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].oom.present, kOomRequest | kOomRounded | kOomInUse);
  EXPECT_EQ(t.events[0].oom.in_use, 8u * kMiB);
}

TEST(TorchProfilerOom, ARequestOfNoBytesOrAnOversizeTotalIsAnError) {
  EXPECT_EQ(Error(profiler_fixtures::Trace({OomEvent(70, -5, 1, 0)})),
            "oom.json: \"[OutOfMemory]\" event at ts 70 µs: \"Bytes\" -5 is not a request size (a failed allocation "
            "asks for at least 1 byte)");
  EXPECT_EQ(Error(profiler_fixtures::Trace({OomEvent(70, 0, 1, 0)})),
            "oom.json: \"[OutOfMemory]\" event at ts 70 µs: \"Bytes\" 0 is not a request size (a failed allocation "
            "asks for at least 1 byte)");
  EXPECT_EQ(Error(profiler_fixtures::Trace({OomEvent(70, 512, 1, 0, Totals{std::uint64_t{1} << 63, 0})})),
            fmt::format("oom.json: \"[OutOfMemory]\" event at ts 70 µs: \"Total Allocated\" {}",
                        OversizeMessage(std::uint64_t{1} << 63)));
}

}  // namespace
}  // namespace fragscope::traces
