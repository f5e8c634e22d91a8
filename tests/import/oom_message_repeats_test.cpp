// One failure printed several times is one message (OomMessage::repeat_lines); failures on other
// devices, of other ranks or with any other number stay separate messages.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/oom_message.hpp"

namespace fragscope::traces {
namespace {

// PyTorch ≥ 2.2's wording with this test's own numbers, on the GPU given.
std::string Pytorch(int gpu, const std::string& request = "2.00 GiB") {
  return "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " + request + ". GPU " + std::to_string(gpu) +
         " has a total capacity of 23.65 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process "
         "has 22.50 GiB memory in use. Of the allocated memory 20.00 GiB is allocated by PyTorch, and 2.00 GiB is "
         "reserved by PyTorch but unallocated.";
}

std::string Traceback(int frames) {
  std::string text = "Traceback (most recent call last):\n";
  for (int i = 0; i < frames; ++i) text += "  File \"train.py\", line " + std::to_string(100 + i) + ", in step\n";
  return text;
}

TEST(OomMessageRepeats, OneFailurePrintedThreeTimesIsOneMessage) {
  // The exception, the traceback printed again by a wrapper, and a logger's line.
  const std::string text = Traceback(3) + Pytorch(0) + "\n" + "During handling of the above exception:\n" +
                           Traceback(5) + "RuntimeError: " + Pytorch(0).substr(24) + "\n" +
                           "ERROR:trainer:step failed: " + Pytorch(0) + "\n";
  const auto messages = FindOomMessages(text);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].line, 5u);
  EXPECT_EQ(messages[0].repeat_lines, (std::vector<std::size_t>{13, 14}));
  EXPECT_EQ(messages[0].device, "GPU 0");
}

TEST(OomMessageRepeats, OtherDevicesRanksOrNumbersAreOtherFailures) {
  // Eight DDP ranks, each on its own GPU, each failing: eight failures, each printed twice.
  std::string ddp;
  for (int gpu = 0; gpu < 8; ++gpu) ddp += "[rank" + std::to_string(gpu) + "]: " + Pytorch(gpu) + "\n";
  for (int gpu = 0; gpu < 8; ++gpu) ddp += "[rank" + std::to_string(gpu) + "]: " + Pytorch(gpu) + "\n";
  auto messages = FindOomMessages(ddp);
  ASSERT_EQ(messages.size(), 8u);
  for (int gpu = 0; gpu < 8; ++gpu) {
    EXPECT_EQ(messages[gpu].device, "GPU " + std::to_string(gpu));
    EXPECT_EQ(messages[gpu].origin, "rank " + std::to_string(gpu));
    EXPECT_EQ(messages[gpu].repeat_lines, (std::vector<std::size_t>{static_cast<std::size_t>(gpu + 9)}));
  }
  // Ranks that each see their GPU as "GPU 0" (CUDA_VISIBLE_DEVICES), with the same numbers: the
  // rank their launcher prints tells them apart.
  messages = FindOomMessages("[rank0]: " + Pytorch(0) + "\n[rank1]: " + Pytorch(0) + "\n");
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].origin, "rank 1");
  messages = FindOomMessages("[default0]:" + Pytorch(0) + "\n(RayWorker pid=4711) " + Pytorch(0) + "\n");
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].origin, "local rank 0");
  EXPECT_EQ(messages[1].origin, "pid 4711");
  // One number apart: two failures (the second step asked for more).
  messages = FindOomMessages(Pytorch(0) + "\n" + Pytorch(0, "2.01 GiB") + "\n");
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_TRUE(messages[0].repeat_lines.empty());
}

TEST(OomMessageRepeats, MessagesWithoutNumbersRepeatOnlyWithTheSameText) {
  std::string text = "RuntimeError: CUDA error: out of memory\n";
  for (int i = 0; i < 60; ++i) text += "step " + std::to_string(i) + "\n";
  text += "RuntimeError: CUDA error: out of memory\n";
  for (int i = 0; i < 60; ++i) text += "step " + std::to_string(i) + "\n";
  text += "2024-01-02 03:04:05 ERROR worker 3: RuntimeError: CUDA error: out of memory\n";
  const auto messages = FindOomMessages(text);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].repeat_lines, (std::vector<std::size_t>{62}));
  EXPECT_TRUE(messages[1].repeat_lines.empty());
  EXPECT_EQ(messages[1].line, 123u);
}

// TensorFlow prints the op's warning and then the Python exception of one failure.
TEST(OomMessageRepeats, TensorflowsWarningAndExceptionAreOneFailure) {
  const std::string oom = "OOM when allocating tensor with shape[64,512,28,28] and type float on "
                          "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc";
  const auto messages = FindOomMessages(
      "2021-01-01 00:00:00.000000: W tensorflow/core/framework/op_kernel.cc:1767] OP_REQUIRES failed at "
      "conv_ops.cc:539 : Resource exhausted: " + oom + "\n" + Traceback(2) +
      "tensorflow.python.framework.errors_impl.ResourceExhaustedError: " + oom + " [Op:Conv2D]\n");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].repeat_lines, (std::vector<std::size_t>{5}));
  EXPECT_EQ(messages[0].request->bytes, 64ull * 512 * 28 * 28 * 4);
}

// TensorFlow 1.x's op warning names no dtype ("… with shape[…]" and nothing after); the exception's
// "[[Node: … T=DT_FLOAT …]]" does: still one failure, sized by what the exception adds.
TEST(OomMessageRepeats, TensorflowsOldWarningWithoutDtypeJoinsItsException) {
  const std::string head = "OOM when allocating tensor with shape[16,64,112,112]";
  const std::string node = "\t [[Node: conv1/Conv2D = Conv2D[T=DT_FLOAT, padding=\"SAME\"](input, conv1/w)]]\n";
  const auto messages = FindOomMessages("W tensorflow/core/framework/op_kernel.cc:975] Resource exhausted: " + head +
                                        "\n" + Traceback(1) + "ResourceExhaustedError: " + head + "\n" + node);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].line, 1u);
  EXPECT_EQ(messages[0].repeat_lines, (std::vector<std::size_t>{4}));
  EXPECT_EQ(messages[0].tensor_dtype, "float");
  ASSERT_TRUE(messages[0].request);
  EXPECT_EQ(messages[0].request->bytes, 16ull * 64 * 112 * 112 * 4);

  // Another shape is another tensor: two failures, the first's size unknown.
  const auto two = FindOomMessages("W op_kernel.cc:975] Resource exhausted: " + head + "\n" + Traceback(1) +
                                   "ResourceExhaustedError: OOM when allocating tensor with shape[16,64,56,56]\n" +
                                   node);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_FALSE(two[0].request);
  EXPECT_TRUE(two[0].repeat_lines.empty());
  ASSERT_TRUE(two[1].request);
  EXPECT_EQ(two[1].request->bytes, 16ull * 64 * 56 * 56 * 4);
}

}  // namespace
}  // namespace fragscope::traces
