// Small torch.profiler Chrome traces written in the tests (the shape Kineto writes), shared by
// the torch_profiler_*_test.cpp files and the command-line tests.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace fragscope::traces::profiler_fixtures {

inline std::string Gzip(const std::string& text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, text.size()) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// The allocator's running totals after an event, as PyTorch >= 1.10 writes them.
struct Totals {
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
};

// A "[memory]" instant event; with `totals`, "Total Allocated" and "Total Reserved" too.
inline std::string MemoryEvent(double ts, std::int64_t bytes, std::int64_t device_type, std::int64_t device_id,
                               std::optional<std::uint64_t> addr, const std::string& tid = "7",
                               std::optional<Totals> totals = std::nullopt) {
  std::string args = fmt::format(R"("Device Type": {}, "Device Id": {}, "Bytes": {})", device_type, device_id, bytes);
  if (addr) args += fmt::format(R"(, "Addr": {})", *addr);
  if (totals) args += fmt::format(R"(, "Total Reserved": {}, "Total Allocated": {})", totals->reserved, totals->allocated);
  return fmt::format(R"({{"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": {}, "ts": {}, "args": {{{}}}}})",
                     tid, ts, args);
}

// An "[OutOfMemory]" instant event as Kineto writes it (PyTorch's reportOutOfMemory): the device,
// the request's "Bytes" (none where `bytes` is absent) and, with `totals`, the allocator's totals
// at the failure.
inline std::string OomEvent(double ts, std::optional<std::int64_t> bytes, std::int64_t device_type,
                            std::int64_t device_id, std::optional<Totals> totals = std::nullopt) {
  std::string args = fmt::format(R"("Device Type": {}, "Device Id": {})", device_type, device_id);
  if (bytes) args += fmt::format(R"(, "Bytes": {})", *bytes);
  if (totals) args += fmt::format(R"(, "Total Reserved": {}, "Total Allocated": {})", totals->reserved, totals->allocated);
  return fmt::format(
      R"({{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[OutOfMemory]", "pid": 7, "tid": 7, "ts": {}, "args": {{{}}}}})",
      ts, args);
}

inline std::string Span(const std::string& name, double ts, double dur, const std::string& cat = "cpu_op") {
  return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 7, "tid": 7, "ts": {}, "dur": {}}})", cat, name,
                     ts, dur);
}

// A whole trace around `events`, Kineto's header first.
inline std::string Trace(const std::vector<std::string>& events, const std::string& header = R"("schemaVersion": 1)") {
  std::string joined;
  for (const auto& e : events) joined += (joined.empty() ? "" : ",\n  ") + e;
  return "{\n  " + header + ",\n  \"traceEvents\": [\n  " + joined + "\n  ]\n}\n";
}

}  // namespace fragscope::traces::profiler_fixtures
