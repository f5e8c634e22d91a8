// The rules for PaddlePaddle, Theano, ONNX Runtime, torch-directml and TensorFlow's Eigen allocator:
// the cause each message's numbers allow (never more than they allow), the arithmetic shown, and
// advice in the framework's own terms. The messages are this test's own, in each one's wording.
#include <string>

#include <gtest/gtest.h>

#include "fragscope/analysis/message_diagnosis.hpp"
#include "support/message_lines.hpp"

namespace fragscope::analysis {
namespace {

using fragscope::testing::DiagnoseText;
using fragscope::testing::MessageLines;
using fragscope::testing::Mentions;
using traces::OomCause;

std::string Paddle(const std::string& request, const std::string& used, const std::string& available) {
  return "Out of memory error on GPU 0. Cannot allocate " + request + " memory on GPU 0, " + used +
         " memory has been allocated and available memory is only " + available + ".\n";
}

// Paddle's in-use figure is the device's total less its available memory, every process's: the
// numbers cannot say whether this process filled the device or another one holds it.
TEST(MessageRulesPaddle, AFullDeviceIsUnknownWithItsTotalDerived) {
  const MessageDiagnosis d = DiagnoseText(Paddle("400.000244MB", "7.500000GB", "150.000000MB"));
  EXPECT_EQ(d.cause, OomCause::kUnknown) << d.explanation;
  EXPECT_FALSE(d.inconsistent);
  const auto lines = MessageLines(d);
  EXPECT_TRUE(Mentions(lines, "T = A + F = 7.500000GB + 150.000000MB = 7.65 GiB")) << ::testing::PrintToString(lines);
  EXPECT_TRUE(Mentions(lines, "R = 400.000244MB > F = 150.000000MB"));
  EXPECT_TRUE(Mentions(lines, "counts this process and every other one"));
  EXPECT_TRUE(Mentions(lines, "98 % of the device"));
  EXPECT_TRUE(Mentions(lines, "nvidia-smi shows which processes hold GPU 0"));
  EXPECT_TRUE(Mentions(lines, "FLAGS_allocator_strategy=auto_growth"));
  bool derived_total = false;
  for (const auto& n : d.numbers) {
    if (n.symbol == "T") {
      derived_total = true;
      EXPECT_TRUE(n.printed.empty()) << "derived, not printed";
      EXPECT_EQ(n.bytes, 8053063680ull + 157286400ull);
    }
  }
  EXPECT_TRUE(derived_total);
}

TEST(MessageRulesPaddle, TooLargeFitsInAvailableAndImpossibleFigures) {
  const MessageDiagnosis large = DiagnoseText(Paddle("30.000000GB", "2.000000GB", "13.500000GB"));
  EXPECT_EQ(large.cause, OomCause::kRequestTooLarge) << large.explanation;
  EXPECT_TRUE(Mentions(MessageLines(large), "R = 30.000000GB > T = 15.50 GiB"));

  const MessageDiagnosis fits = DiagnoseText(Paddle("100.000000MB", "6.000000GB", "2.000000GB"));
  EXPECT_EQ(fits.cause, OomCause::kUnknown);
  EXPECT_TRUE(fits.inconsistent);
  EXPECT_TRUE(Mentions(MessageLines(fits), "R = 100.000000MB ≤ F = 2.000000GB"));

  const MessageDiagnosis nothing = DiagnoseText(Paddle("240.250244MB", "0.000000B", "0.000000B"));
  EXPECT_EQ(nothing.cause, OomCause::kUnknown);
  EXPECT_TRUE(nothing.inconsistent);
  EXPECT_TRUE(Mentions(MessageLines(nothing), "no device memory at all"));

  // Total less available wrapped below zero: no device holds that much.
  const MessageDiagnosis wrapped = DiagnoseText(Paddle("39.250000kB", "85.412131TB", "0.000000B"));
  EXPECT_EQ(wrapped.cause, OomCause::kUnknown);
  EXPECT_TRUE(wrapped.inconsistent);

  // Before 2.3: only request and available.
  const MessageDiagnosis old = DiagnoseText("Out of memory error on GPU 0. Cannot allocate 3.125000GB memory on GPU 0, "
                                            "available memory is only 117.750000MB.\n");
  EXPECT_EQ(old.cause, OomCause::kUnknown);
  EXPECT_TRUE(Mentions(MessageLines(old), "prints neither the device's total nor what is in use"));
}

TEST(MessageRulesPaddle, ItsFlagsInTheAdviceAndHostMemory) {
  const MessageDiagnosis limited = DiagnoseText(
      Paddle("512.000000MB", "3.750000GB", "256.000000MB") +
      "2. If no, please decrease the batch size of your model. Or set environment variable `FLAGS_gpu_memory_limit_mb` "
      "to a larger value. Currently `FLAGS_gpu_memory_limit_mb` is 4096, so the maximum GPU memory usage is limited "
      "to 4096 MB.\n");
  EXPECT_TRUE(Mentions(MessageLines(limited), "FLAGS_gpu_memory_limit_mb caps this process at 4096 MB"));
  const MessageDiagnosis fraction = DiagnoseText(
      "Out of memory error on GPU 0. Cannot allocate 6.000000GB memory on GPU 0, available memory is only 700.000000MB.\n"
      "   2) FLAGS_fraction_of_gpu_memory_to_use is 0.92 now, please set it to a higher value but less than 1.0.\n");
  EXPECT_TRUE(Mentions(MessageLines(fraction), "(FLAGS_allocator_strategy=naive_best_fit)"));

  const MessageDiagnosis host = DiagnoseText("Fail to alloc memory of 46000000000 size, error code is 12.\n");
  EXPECT_EQ(host.cause, OomCause::kBacking);
  EXPECT_TRUE(host.host_memory);
  EXPECT_TRUE(Mentions(MessageLines(host), "42.84 GiB of host RAM (posix_memalign failed with ENOMEM)"));
}

TEST(MessageRulesTheano, DriverFiguresDecideOnlyWhatTheyCan) {
  const MessageDiagnosis full = DiagnoseText("MemoryError: Error allocating 150000000 bytes of device memory (out of "
                                             "memory). Driver report 90000000 bytes free and 2147483648 bytes total\n");
  EXPECT_EQ(full.cause, OomCause::kUnknown);
  EXPECT_TRUE(Mentions(MessageLines(full), "T − F = 2.00 GiB − 85.83 MiB = 1.92 GiB in use"));
  const MessageDiagnosis fits = DiagnoseText("Error allocating 2064384 bytes of device memory (out of memory). Driver "
                                             "report 1774694400 bytes free and 2146762752 bytes total\n");
  EXPECT_EQ(fits.cause, OomCause::kUnknown);
  EXPECT_TRUE(fits.inconsistent);
  EXPECT_TRUE(Mentions(MessageLines(fits), "fragmentation"));
  const MessageDiagnosis large = DiagnoseText("Error allocating 4294967296 bytes of device memory (out of memory). "
                                              "Driver report 1000000000 bytes free and 2147483648 bytes total\n");
  EXPECT_EQ(large.cause, OomCause::kRequestTooLarge);
}

TEST(MessageRulesOnnxRuntime, ArenaLimitDriverRefusalAndCudaProvider) {
  const MessageDiagnosis limit = DiagnoseText(
      "BFCArena::AllocateRawInternal Available memory of 34603008 is smaller than requested bytes of 945815552\n");
  EXPECT_EQ(limit.cause, OomCause::kUnknown);
  const auto lines = MessageLines(limit);
  EXPECT_TRUE(Mentions(lines, "R = 902.00 MiB > 33.00 MiB left under the arena's memory limit"))
      << ::testing::PrintToString(lines);
  EXPECT_TRUE(Mentions(lines, "gpu_mem_limit"));
  EXPECT_TRUE(Mentions(lines, "kSameAsRequested"));
  const MessageDiagnosis refused =
      DiagnoseText("onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested buffer of size "
                   "31568306688\n");
  EXPECT_EQ(refused.cause, OomCause::kUnknown);
  EXPECT_TRUE(Mentions(MessageLines(refused), "refused 29.40 GiB"));
  const MessageDiagnosis huge = DiagnoseText("Failed to allocate memory for requested buffer of size 1099511627776\n");
  EXPECT_EQ(huge.cause, OomCause::kRequestTooLarge);
  EXPECT_TRUE(Mentions(MessageLines(huge), "R = 1099511627776 bytes: more than any accelerator holds"));
  const MessageDiagnosis provider = DiagnoseText("CUDA failure 2: out of memory ; GPU=0 ; hostname=h ; "
                                                 "expr=cudaMalloc((void**)&p, size);\n");
  EXPECT_EQ(provider.cause, OomCause::kUnknown);
  EXPECT_TRUE(Mentions(MessageLines(provider), "ONNX Runtime's CUDA provider got cudaErrorMemoryAllocation"));
  EXPECT_TRUE(Mentions(MessageLines(provider), "gpu_mem_limit"));
}

TEST(MessageRulesDirectmlAndEigen, RequestOnlyAndTheZeroByteCase) {
  const MessageDiagnosis dml = DiagnoseText("Could not allocate tensor with 234881024 bytes. There is not enough GPU "
                                            "video memory available!\n");
  EXPECT_EQ(dml.cause, OomCause::kUnknown);
  EXPECT_TRUE(Mentions(MessageLines(dml), "DirectML could not allocate 224.00 MiB"));
  EXPECT_TRUE(Mentions(MessageLines(dml), "Task Manager"));
  const MessageDiagnosis zero = DiagnoseText("EigenAllocator for GPU ran out of memory when allocating 0. See error "
                                             "logs for more detailed info.\n");
  EXPECT_EQ(zero.cause, OomCause::kUnknown);
  EXPECT_TRUE(Mentions(MessageLines(zero), "a request of 0 bytes is no shortage of memory"));
  const MessageDiagnosis eigen = DiagnoseText("EigenAllocator for GPU ran out of memory when allocating 16777216. See "
                                              "error logs for more detailed info.\n");
  EXPECT_TRUE(Mentions(MessageLines(eigen), "Eigen's temporary buffer (16.00 MiB)"));
}

}  // namespace
}  // namespace fragscope::analysis
