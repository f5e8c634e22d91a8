// Out-of-memory message wordings found in the wild beyond the shared corpus, on short synthetic lines
// in each wording (this test's own numbers): what traces::ScanOomMessages reads, and what it must
// not take for an error.
#include <gtest/gtest.h>

#include <string>

#include "fragscope/traces/oom_message.hpp"

namespace fragscope::traces {
namespace {

const char kNotAFailure[] =
    "2021-03-01 10:00:00.000001: W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran out "
    "of memory trying to allocate 1.50GiB with freed_by_count=0. The caller indicates that this is not a failure, but "
    "may mean that there could be performance gains if more memory were available.\n";
// The Windows wording of TensorFlow 1.x, without freed_by_count.
const char kNotAFailureOld[] =
    " W C:\\src\\tensorflow\\core\\common_runtime\\bfc_allocator.cc:219] Allocator (GPU_0_bfc) ran out of memory "
    "trying to allocate 600.00MiB. The caller indicates that this is not a failure, but may mean that there could be "
    "performance gains if more memory were available.\n";

// TensorFlow's "not a failure" warnings are no messages: they are listed apart, with their sizes.
TEST(OomMessageWordings, TensorflowNotAFailureWarningsAreNoMessages) {
  const std::string alone = std::string(kNotAFailure) + "\n" + kNotAFailureOld;
  EXPECT_TRUE(HoldsTfNotAFailure(alone));
  EXPECT_FALSE(LooksLikeOomMessage(alone));
  const OomMessageScan scan = ScanOomMessages(alone);
  EXPECT_TRUE(scan.messages.empty());
  ASSERT_EQ(scan.not_failures.size(), 2u);
  EXPECT_EQ(scan.not_failures[0].line, 1u);
  EXPECT_EQ(scan.not_failures[0].allocator, "GPU_0_bfc");
  ASSERT_TRUE(scan.not_failures[0].request);
  EXPECT_EQ(scan.not_failures[0].request->bytes, 1610612736u);  // 1.50 GiB
  EXPECT_EQ(scan.not_failures[1].line, 3u);
  ASSERT_TRUE(scan.not_failures[1].request);
  EXPECT_EQ(scan.not_failures[1].request->bytes, 600u << 20);
  // Beside them, the driver's refusals are messages.
  const std::string mixed =
      std::string(kNotAFailure) +
      "2021-03-01 10:00:00.100000: I tensorflow/stream_executor/cuda/cuda_driver.cc:739] failed to allocate 3.00G "
      "(3221225472 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n";
  const OomMessageScan both = ScanOomMessages(mixed);
  ASSERT_EQ(both.messages.size(), 1u);
  EXPECT_EQ(both.messages[0].kind, OomMessageKind::kTfDeviceAlloc);
  EXPECT_EQ(both.messages[0].request->bytes, 3221225472u);
  EXPECT_EQ(both.not_failures.size(), 1u);
  EXPECT_EQ(FindOomMessages(mixed).size(), 1u);
  // Without the words "not a failure" it is a header (the TensorFlow reader's), not a warning.
  EXPECT_FALSE(HoldsTfNotAFailure("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.50GiB.\n"));
}

}  // namespace
}  // namespace fragscope::traces
