// A TensorFlow dump whose chunk list was cut and that prints no reserved count: the regions past the
// cut are not in the log, so the reserved bytes are a lower bound and the OOM's reserved, free in
// regions and headroom are unknown (absent, never 0), and backing and fragmentation cannot be told
// apart; capacity still can. Also: "(rounded to N)" gives the rounded request exactly (no "known
// only as printed" warning), and a dump followed by jaxlib's exception is JAX's.
#include <string>

#include <gtest/gtest.h>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::FindOom;
using testing::HasWarning;
using testing::Join;

constexpr std::uint64_t kMiB = 1 << 20;

// TF 1.8's shape: a 200 MiB limit, 100 MiB in use by Stats, one 50 MiB chunk listed, and optionally
// a listed free chunk of `free_mib` after it in the same inferred region; `extra` follows the dump.
std::string CutDump(const std::string& request, std::uint64_t free_mib = 0, const std::string& extra = "") {
  std::string log = "W tensorflow/core/common_runtime/bfc_allocator.cc:275] Allocator (GPU_1_bfc) ran out of memory "
                    "trying to allocate " + request + ".  Current allocation summary follows.\n"
                    "I tensorflow/core/common_runtime/bfc_allocator.cc:665] Chunk at 0x10600000000 of size 52428800\n";
  if (free_mib > 0)
    log += "I tensorflow/core/common_runtime/bfc_allocator.cc:665] Free at 0x10603200000 of size " +
           std::to_string(free_mib * kMiB) + "\n";
  log += "I tensorflow/core/common_runtime/bfc_allocator.cc:680] Stats: \n"
         "Limit:                    209715200\n"
         "InUse:                    104857600\n"
         "MaxInUse:                 157286400\n"
         "NumAllocs:                      900\n"
         "MaxAllocSize:              52428800\n\n" +
         extra;
  return log;
}

TEST(TfCutReserved, WithoutAReservedCountTheOomLeavesReservedFreeAndHeadroomOut) {
  const Trace t = ParseTfBfcLogToTrace(CutDump("64.00MiB"), "cut.log");
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  const OomRecord& r = oom->oom;
  EXPECT_EQ(r.present & (kOomReserved | kOomFreeInRegions | kOomHeadroom), 0) << r.present;
  EXPECT_TRUE(r.Has(kOomRequest | kOomRounded | kOomLimit | kOomInUse));
  EXPECT_EQ(r.limit, 200 * kMiB);
  EXPECT_EQ(r.in_use, 100 * kMiB);
  EXPECT_EQ(r.rounded, 64 * kMiB);
  // In use + request fit in the limit: the 100 MiB past the listed region may be reserved (then
  // fragmentation) or not (then the device refused a region): unknown, not backing.
  EXPECT_EQ(r.cause, OomCause::kUnknown);
  EXPECT_TRUE(HasWarning(t.warnings, "reserved at least 104857600 (not printed: free in regions and headroom "
                                     "unknown)")) << Join(t.warnings);
  EXPECT_TRUE(HasWarning(t.warnings, "the chunk list is cut and the dump prints no reserved count (its regions "
                                     "hold at least 104857600): with the bytes in use and the request within the "
                                     "limit, a device that refused a new region (backing) and fragmentation cannot "
                                     "be told apart: cause unknown")) << Join(t.warnings);
  ASSERT_EQ(t.header.source.states.size(), 1u);
  const StateSummary& s = t.header.source.states[0];
  EXPECT_FALSE(s.reserved.has_value());
  EXPECT_FALSE(s.free_at_least.has_value());  // no free chunk shown: the bound is the bytes in use
  EXPECT_NE(s.missing.find("no reserved count: its regions hold at least 100.00 MiB"), std::string::npos) << s.missing;

  // Capacity needs no reserved count: 100 MiB in use and 128 MiB asked exceed the 200 MiB limit.
  const auto capacity_trace = ParseTfBfcLogToTrace(CutDump("128.00MiB"), "cut.log");  // the event lives in it
  const Event* capacity = FindOom(capacity_trace);
  ASSERT_NE(capacity, nullptr);
  EXPECT_EQ(capacity->oom.cause, OomCause::kCapacity);
}

// A listed free chunk counts in the bound; the state gives the same bound as the OOM's warning.
TEST(TfCutReserved, TheStateAndTheOomGiveOneBound) {
  const Trace t = ParseTfBfcLogToTrace(CutDump("64.00MiB", 10), "free.log");
  EXPECT_TRUE(HasWarning(t.warnings, "reserved at least 115343360 (not printed")) << Join(t.warnings);
  ASSERT_EQ(t.header.source.states.size(), 1u);
  const StateSummary& s = t.header.source.states[0];
  EXPECT_EQ(s.in_use, 100 * kMiB);
  EXPECT_EQ(s.free_at_least, 10 * kMiB);  // in use + free at least = the 110 MiB of the warning
  EXPECT_NE(s.missing.find("its regions hold at least 110.00 MiB"), std::string::npos) << s.missing;
}

// The pool line prints the reserved bytes: exact, and the cause follows (the regions fill the limit).
TEST(TfCutReserved, APrintedPoolTotalDecides) {
  const Trace t = ParseTfBfcLogToTrace(
      CutDump("64.00MiB", 0,
              "I tensorflow/core/common_runtime/bfc_allocator.cc:1049] total_region_allocated_bytes_: 209715200 "
              "memory_limit_: 209715200 available bytes: 0\n"),
      "pool.log");
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_TRUE(oom->oom.Has(kOomReserved | kOomFreeInRegions | kOomHeadroom));
  EXPECT_EQ(oom->oom.reserved, 200 * kMiB);
  EXPECT_EQ(oom->oom.headroom, 0u);
  EXPECT_EQ(oom->oom.cause, OomCause::kFragmentation);
}

TEST(TfCutReserved, RoundedToGivesTheRequestExactly) {
  const Trace exact = ParseTfBfcLogToTrace(CutDump("64.00MiB (rounded to 67108864)"), "rounded.log");
  EXPECT_FALSE(HasWarning(exact.warnings, "known only as printed")) << Join(exact.warnings);
  ASSERT_NE(FindOom(exact), nullptr);
  EXPECT_EQ(FindOom(exact)->oom.rounded, 67108864u);
  const Trace printed = ParseTfBfcLogToTrace(CutDump("64.00MiB"), "printed.log");
  EXPECT_TRUE(HasWarning(printed.warnings, "the request is known only as printed (rounded to 2 decimals): 67108864 "
                                           "bytes")) << Join(printed.warnings);
}

TEST(TfCutReserved, ADumpFollowedByJaxlibsExceptionIsJaxs) {
  const Trace jax = ParseTfBfcLogToTrace(
      CutDump("64.00MiB", 0,
              "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
              "67108864 bytes.\n"),
      "jax.log");
  EXPECT_EQ(jax.header.producer, "XLA BFC allocator log (JAX)");
  EXPECT_EQ(jax.header.source.allocator, kJaxBfcAllocator);
  EXPECT_EQ(jax.header.source_format, "tensorflow-bfc-log");
  const Trace tf = ParseTfBfcLogToTrace(CutDump("64.00MiB"), "tf.log");
  EXPECT_EQ(tf.header.producer, "TensorFlow BFC allocator log");
  EXPECT_EQ(tf.header.source.allocator, "TensorFlow BFC allocator");
  EXPECT_TRUE(IsJaxLog("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED"));
  EXPECT_FALSE(IsJaxLog("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM"));
}

}  // namespace
}  // namespace fragscope::traces
