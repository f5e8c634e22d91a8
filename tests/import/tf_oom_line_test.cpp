// The OOM line after a TensorFlow / XLA dump whose header was lost (a Stats block and the bar
// pasted alone), in every wording TensorFlow, XLA and PJRT print it: the line is that dump's OOM,
// its request what the line gives (nothing for "RESOURCE_EXHAUSTED: failed to allocate memory"),
// and the limit and bytes in use the Stats block's. Short logs in the format's shape, written here.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::HasWarning;
using testing::Join;

// TF >= 2.10: the pool line, an 8-field Stats block and the bar, without the "ran out of memory"
// header and the chunk lines before them. 6 GB limit, 5 GiB in use: 631,290,880 bytes left.
const std::string kStats =
    "2024-03-01 10:00:00.000110: I tensorflow/core/common_runtime/bfc_allocator.cc:1103] "
    "total_region_allocated_bytes_: 6000000000 memory_limit_: 6000000000 available bytes: 0 "
    "curr_region_allocation_bytes_: 12000000000\n"
    "2024-03-01 10:00:00.000120: I tensorflow/core/common_runtime/bfc_allocator.cc:1109] Stats: \n"
    "Limit:                      6000000000\n"
    "InUse:                      5368709120\n"
    "MaxInUse:                   5368709376\n"
    "NumAllocs:                        1200\n"
    "MaxAllocSize:                536870912\n"
    "Reserved:                            0\n"
    "PeakReserved:                        0\n"
    "LargestFreeBlock:                    0\n"
    "\n"
    "2024-03-01 10:00:00.000130: W tensorflow/core/common_runtime/bfc_allocator.cc:491] "
    "****************************************************************************************************\n";

const TfBfcDump& OnlyDump(const std::vector<TfBfcDump>& dumps) {
  EXPECT_EQ(dumps.size(), 1u);
  return dumps.front();
}

// TF >= 2.10 says no size: the OOM is there, its request unknown (absent from the record, not 0),
// and so its cause; the limit and the bytes in use are the Stats block's. The Python exception that
// repeats the words later in the log is the same OOM, not a second one.
TEST(TfOomLine, ResourceExhaustedWithoutASizeIsTheFragmentsOomWithTheRequestUnknown) {
  const std::string log = kStats +
                          "2024-03-01 10:00:00.000140: W tensorflow/core/framework/op_kernel.cc:1768] "
                          "RESOURCE_EXHAUSTED: failed to allocate memory\n"
                          "Traceback (most recent call last):\n"
                          "tensorflow.python.framework.errors_impl.ResourceExhaustedError: failed to allocate memory "
                          "[Op:AddV2]\n";
  const std::vector<TfBfcDump> dumps = ParseTfBfcLog(log, "tf210.log");
  const TfBfcDump& d = OnlyDump(dumps);
  EXPECT_TRUE(d.has_header);
  EXPECT_TRUE(d.oom_from_line);
  EXPECT_EQ(d.allocator, "");
  EXPECT_EQ(d.request, 0u);
  EXPECT_EQ(d.rounded, 0u);
  EXPECT_EQ(d.limit, 6000000000u);
  EXPECT_EQ(d.in_use, 5368709120u);
  EXPECT_EQ(d.reserved, 6000000000u);  // Stats Reserved is printed 0: the pool line's total
  EXPECT_EQ(d.cause, OomCause::kUnknown);
  EXPECT_FALSE(d.cause_known);
  EXPECT_TRUE(HasWarning(d.warnings, "tf210.log:13: no \"ran out of memory\" header: the OOM line after the dump "
                                     "(\"RESOURCE_EXHAUSTED: failed to allocate memory\") is its OOM; the line gives "
                                     "no size: the request is unknown"))
      << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "the cause cannot be determined (the request is unknown): cause unknown"))
      << Join(d.warnings);
  const OomRecord r = d.ToOomRecord();
  EXPECT_FALSE(r.Has(kOomRequest));
  EXPECT_FALSE(r.Has(kOomRounded));
  EXPECT_TRUE(r.Has(kOomLimit | kOomInUse | kOomReserved));
  EXPECT_EQ(r.limit, 6000000000u);
  EXPECT_EQ(r.in_use, 5368709120u);

  const Trace t = ParseTfBfcLogToTrace(log, "tf210.log");
  EXPECT_EQ(testing::Count(t).oom, 1u);
  const Event* oom = testing::FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_FALSE(oom->oom.Has(kOomRequest));
  EXPECT_EQ(oom->oom.cause, OomCause::kUnknown);
  bool said = false;
  for (const auto& [key, value] : t.header.metadata)
    if (key == "tf.dump1") said = value.find(", request unknown, cause unknown") != std::string::npos;
  EXPECT_TRUE(said);
}

// Without TensorFlow's status words the phrase is no OOM line (a retry note, a user's print).
TEST(TfOomLine, FailedToAllocateMemoryAloneIsNoOomLine) {
  const std::vector<TfBfcDump> dumps =
      ParseTfBfcLog(kStats + "W my_script.py] failed to allocate memory, retrying\n", "f.log");
  const TfBfcDump& d = OnlyDump(dumps);
  EXPECT_FALSE(d.has_header);
  EXPECT_FALSE(d.oom_from_line);
  // Nor is the line alone, with no dump before it, a dump.
  EXPECT_TRUE(ParseTfBfcLog("E op_kernel.cc:1768] RESOURCE_EXHAUSTED: failed to allocate memory\n", "a.log").empty());
}

// TF's MakeTensorFromProto prints "tensor of shape [40000,512]" (a space, "of"): 40000 × 512 × 4 B
// = 81,920,000 B, above the 50,000,000 left under the 1 GB limit: capacity.
TEST(TfOomLine, TensorOfShapeGivesTheExactRequest) {
  const std::string stats =
      "I bfc_allocator.cc:696] Stats: \n"
      "Limit:                  1000000000\n"
      "InUse:                   950000000\n"
      "MaxInUse:                950000000\n"
      "NumAllocs:                     300\n"
      "MaxAllocSize:            100000000\n"
      "\n";
  const std::string line =
      "2018-08-06 05:47:33.110207: W tensorflow/core/framework/op_kernel.cc:1295] OP_REQUIRES failed at "
      "constant_op.cc:75 : Resource exhausted: OOM when allocating tensor of shape [40000,512] and type float\n";
  const std::vector<TfBfcDump> dumps = ParseTfBfcLog(stats + line, "of.log");
  const TfBfcDump& d = OnlyDump(dumps);
  EXPECT_TRUE(d.oom_from_line);
  EXPECT_TRUE(d.request_exact);
  EXPECT_EQ(d.request, 81920000u);
  EXPECT_EQ(d.rounded, 81920000u);
  EXPECT_EQ(d.op, "shape[40000,512] float");
  EXPECT_EQ(d.cause, OomCause::kCapacity);
  EXPECT_TRUE(HasWarning(d.warnings, "(\"OOM when allocating tensor\") is its OOM, and its tensor shape the request"))
      << Join(d.warnings);
  // After a header, the same line makes the header's printed size exact.
  const std::string header =
      "W bfc_allocator.cc:267] Allocator (GPU_0_bfc) ran out of memory trying to allocate 78.12MiB.  Current "
      "allocation summary follows.\n";
  const std::vector<TfBfcDump> with_header = ParseTfBfcLog(header + stats + line, "h.log");
  const TfBfcDump& h = OnlyDump(with_header);
  EXPECT_FALSE(h.oom_from_line);
  EXPECT_TRUE(h.request_exact);
  EXPECT_EQ(h.request, 81920000u);
}

// XLA's and PJRT's lines carry the exact bytes: 2 GiB above the 1 GiB left under 8 GiB: capacity.
TEST(TfOomLine, XlaAndPjrtByteCountsGiveTheExactRequest) {
  const std::string stats =
      "I external/xla/xla/tsl/framework/bfc_allocator.cc:1112] Stats: \n"
      "Limit:                      8589934592\n"
      "InUse:                      7516192768\n"
      "MaxInUse:                   7516192768\n"
      "NumAllocs:                         900\n"
      "MaxAllocSize:               1073741824\n"
      "Reserved:                            0\n"
      "PeakReserved:                        0\n"
      "LargestFreeBlock:                    0\n"
      "\n";
  for (const std::string line :
       {"E0301 10:00:00.000000 1 pjrt_stream_executor_client.cc:2826] Execution of replica 0 failed: "
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2147483648 bytes.\n",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 2.00GiB "
        "(2147483648B) on device ordinal 0\n"}) {
    const std::vector<TfBfcDump> dumps = ParseTfBfcLog(stats + line, "xla.log");
    const TfBfcDump& d = OnlyDump(dumps);
    EXPECT_TRUE(d.oom_from_line) << line;
    EXPECT_TRUE(d.request_exact) << line;
    EXPECT_EQ(d.request, 2147483648u) << line;
    EXPECT_EQ(d.rounded, 2147483648u) << line;
    EXPECT_EQ(d.cause, OomCause::kCapacity) << line;
    EXPECT_TRUE(HasWarning(d.warnings, "is its OOM, and its byte count the request")) << Join(d.warnings);
  }
  // A byte count that is no size is said, and the request stays unknown.
  const std::vector<TfBfcDump> negative = ParseTfBfcLog(
      stats + "RESOURCE_EXHAUSTED: Out of memory while trying to allocate -1024 bytes.\n", "neg.log");
  const TfBfcDump& bad = OnlyDump(negative);
  EXPECT_TRUE(bad.has_header);
  EXPECT_EQ(bad.request, 0u);
  EXPECT_TRUE(HasWarning(bad.warnings, "the line gives no size: the request is unknown")) << Join(bad.warnings);
  EXPECT_TRUE(HasWarning(bad.warnings, "XLA's \"Out of memory while trying to allocate N bytes\": -1024 is negative, "
                                       "not a size: not taken as the request"))
      << Join(bad.warnings);
  // PJRT's human-readable size alone is not exact: the OOM, with its request unknown.
  const std::vector<TfBfcDump> human_only = ParseTfBfcLog(
      stats + "RESOURCE_EXHAUSTED: Failed to allocate request for 2.00GiB on device ordinal 0\n", "h.log");
  const TfBfcDump& human = OnlyDump(human_only);
  EXPECT_TRUE(human.has_header);
  EXPECT_EQ(human.request, 0u);
}

}  // namespace
}  // namespace fragscope::traces
