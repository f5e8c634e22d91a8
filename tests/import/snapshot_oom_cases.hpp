// Small PyTorch snapshots that end in an oom event, one per case of the rule in docs/importers.md
// ("Out-of-memory events"), written here (pickle_writer.hpp). Shared by the importer's test
// (pytorch_snapshot_oom_test.cpp) and the report's (tests/cli/snapshot_oom_report_test.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "import/pickle_writer.hpp"

namespace fragscope::testing::snapshot_oom_cases {

using namespace pickle_writer;

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kA = 0x7f3000000000;
inline constexpr std::uint64_t kSideStream = 0x55aa00001000;  // a cudaStream_t, as PyTorch records it

inline Py Event(const char* action, std::uint64_t addr, std::uint64_t size, std::uint64_t time_us,
                std::uint64_t stream = 0) {
  return D({{"action", S(action)}, {"addr", I(addr)}, {"size", I(size)}, {"stream", I(stream)},
            {"time_us", I(time_us)}, {"frames", L({})}});
}

inline Py Oom(std::uint64_t device_free, std::uint64_t size, std::uint64_t time_us, std::uint64_t stream = 0) {
  return D({{"action", S("oom")}, {"device_free", I(device_free)}, {"size", I(size)}, {"stream", I(stream)},
            {"time_us", I(time_us)}, {"frames", L({})}});
}

inline Py Block(std::uint64_t address, std::uint64_t size, const char* state) {
  return D({{"address", I(address)}, {"size", I(size)}, {"requested_size", I(size)}, {"state", S(state)},
            {"frames", L({})}});
}

inline Py Segment(std::uint32_t device, std::uint64_t address, std::uint64_t total, std::vector<Py> blocks,
                  const char* type = "large") {
  return D({{"device", I(device)}, {"address", I(address)}, {"total_size", I(total)}, {"stream", I(0)},
            {"segment_type", S(type)}, {"is_expandable", B(false)}, {"blocks", L(std::move(blocks))}});
}

// A 40 MiB segment on the default stream: 10 MiB live, 30 MiB freed in the trace, then `oom`.
inline Py FreedThirtyOfForty(Py oom) {
  return D({{"segments", L({Segment(0, kA, 40 * kMiB,
                                    {Block(kA, 10 * kMiB, "active_allocated"),
                                     Block(kA + 10 * kMiB, 30 * kMiB, "inactive")})})},
            {"device_traces",
             L({L({Event("segment_alloc", kA, 40 * kMiB, 1), Event("alloc", kA, 10 * kMiB, 2),
                   Event("alloc", kA + 10 * kMiB, 30 * kMiB, 3), Event("free_requested", kA + 10 * kMiB, 30 * kMiB, 4),
                   Event("free_completed", kA + 10 * kMiB, 30 * kMiB, 5), std::move(oom)})})}});
}

// 20 MiB asked on a side stream, 1 MiB free on the device: the 30 MiB free block is the default
// stream's, which PyTorch never gives to another stream.
inline Py CrossStream() { return FreedThirtyOfForty(Oom(kMiB, 20 * kMiB, 6, kSideStream)); }

// 512 KiB asked (the small pool), nothing free on the device: the 30 MiB free block is in a large
// segment, which serves only requests above 1 MiB.
inline Py SmallPool() { return FreedThirtyOfForty(Oom(0, 512 * 1024, 6)); }

// Device 1 only (device 0's trace list is empty): 40 MiB reserved, 30 MiB live, 1 MiB free on the
// device, 64 MiB asked: more than free plus cached (11 MiB), and the device's size is not recorded.
inline Py Capacity() {
  return D({{"segments", L({Segment(1, kA, 40 * kMiB,
                                    {Block(kA, 30 * kMiB, "active_allocated"),
                                     Block(kA + 30 * kMiB, 10 * kMiB, "inactive")})})},
            {"device_traces", L({L({}), L({Event("segment_alloc", kA, 40 * kMiB, 10), Event("alloc", kA, 30 * kMiB, 11),
                                           Oom(kMiB, 64 * kMiB, 12)})})}});
}

// A 20 MiB segment [4 MiB live][4 MiB free][12 MiB live]; 5 MiB asked with `device_free` free on
// the device. PyTorch asks the driver for a 20 MiB segment: from 20 MiB free on it fit, and the
// numbers contradict an out-of-memory.
inline Py MidRequestWithFree(std::uint64_t device_free) {
  return D({{"segments", L({Segment(0, kA, 20 * kMiB,
                                    {Block(kA, 4 * kMiB, "active_allocated"), Block(kA + 4 * kMiB, 4 * kMiB, "inactive"),
                                     Block(kA + 8 * kMiB, 12 * kMiB, "active_allocated")})})},
            {"device_traces",
             L({L({Event("segment_alloc", kA, 20 * kMiB, 1), Event("alloc", kA, 4 * kMiB, 2),
                   Event("alloc", kA + 4 * kMiB, 4 * kMiB, 3), Event("alloc", kA + 8 * kMiB, 12 * kMiB, 4),
                   Event("free_requested", kA + 4 * kMiB, 4 * kMiB, 5),
                   Event("free_completed", kA + 4 * kMiB, 4 * kMiB, 6), Oom(device_free, 5 * kMiB, 7)})})}});
}

// A 20 MiB segment wholly live, 5 MiB asked with 6 MiB free: nothing cached, the request fits in
// free memory, but the 20 MiB segment PyTorch asks for does not (fragmentation by the rule: R <= F + U).
inline Py NothingCached() {
  return D({{"segments", L({Segment(0, kA, 20 * kMiB, {Block(kA, 20 * kMiB, "active_allocated")})})},
            {"device_traces", L({L({Event("segment_alloc", kA, 20 * kMiB, 1), Event("alloc", kA, 20 * kMiB, 2),
                                    Oom(6 * kMiB, 5 * kMiB, 3)})})}});
}

// The same with 1 MiB free: 19 MiB more than was free is what the segment needs.
inline Py MidRequest() { return MidRequestWithFree(kMiB); }

}  // namespace fragscope::testing::snapshot_oom_cases
