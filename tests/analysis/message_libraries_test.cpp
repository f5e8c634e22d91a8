// The rules for libraries that call CUDA themselves (CuPy's pool, MXNet, TensorRT, XGBoost, LightGBM,
// cuFFT, cuSOLVER, a program's "GPUassert:"): a cause only where the numbers they print decide one,
// unknown where they print none, and advice in each one's own terms. The messages are this test's
// own, in each one's wording.
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

// CuPy's pool refuses to grow past its own limit: capacity of that limit, not of the device.
TEST(MessageRulesCupy, ThePoolsLimitDecidesWhereItIsPrinted) {
  const MessageDiagnosis over = DiagnoseText(
      "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 268,435,456 bytes (allocated so far: "
      "939,524,096 bytes, limit set to: 1,073,741,824 bytes).\n");
  EXPECT_EQ(over.cause, OomCause::kCapacity) << over.explanation;
  const auto lines = MessageLines(over);
  EXPECT_TRUE(Mentions(lines, "M + R = 896.00 MiB + 256.00 MiB = 1.12 GiB > L = 1.00 GiB"))
      << ::testing::PrintToString(lines);
  EXPECT_TRUE(Mentions(lines, "CuPy's memory pool may hold 1.00 GiB (its limit, set by set_limit or CUPY_GPU_MEMORY_LIMIT)"));
  EXPECT_TRUE(Mentions(lines, "set_limit(size=…) or CUPY_GPU_MEMORY_LIMIT"));

  // Under its limit, or without one, CUDA itself refused: unknown, with what the pool holds.
  const MessageDiagnosis under = DiagnoseText(
      "OutOfMemoryError: Out of memory allocating 1,024 bytes (allocated so far: 1,024 bytes, limit set to: "
      "1,073,741,824 bytes).\n");
  EXPECT_EQ(under.cause, OomCause::kUnknown);
  EXPECT_TRUE(Mentions(MessageLines(under), "M + R = 1.00 KiB + 1.00 KiB = 2.00 KiB ≤ L = 1.00 GiB"));
  const MessageDiagnosis free_form = DiagnoseText(
      "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes (allocated so far: "
      "10,737,418,240 bytes).\n");
  EXPECT_EQ(free_form.cause, OomCause::kUnknown);
  EXPECT_NE(free_form.explanation.find("CUDA refused 1.00 GiB with CuPy's pool holding 10.00 GiB"), std::string::npos)
      << free_form.explanation;
  EXPECT_TRUE(Mentions(free_form.advice, "free_all_blocks()"));
  for (const auto& n : free_form.numbers) EXPECT_NE(n.symbol, "T") << "no device total is printed";
}

// XGBoost prints what CUDA had free: a request within it contradicts the failure; beyond it the
// device was full, by whom the message does not say.
TEST(MessageRulesXgboost, FreeAndRequestedDecideOnlyWhatTheyCan) {
  const auto xgb = [](const std::string& free, const std::string& requested) {
    return "xgboost.core.XGBoostError: [10:11:12] device_helpers.cuh:431: Memory allocation error on worker 0: "
           "std::bad_alloc: cudaErrorMemoryAllocation: out of memory\n- Free memory: " + free +
           "\n- Requested memory: " + requested + "\n";
  };
  const MessageDiagnosis full = DiagnoseText(xgb("1048576", "2147483648"));
  EXPECT_EQ(full.cause, OomCause::kUnknown);
  EXPECT_FALSE(full.inconsistent);
  EXPECT_TRUE(Mentions(MessageLines(full), "R = 2.00 GiB > F = 1.00 MiB"));
  EXPECT_NE(full.explanation.find("XGBoost's device allocation of 2.00 GiB failed"), std::string::npos)
      << full.explanation;
  EXPECT_TRUE(Mentions(full.advice, "xgboost.QuantileDMatrix"));
  ASSERT_EQ(full.numbers.size(), 2u);
  EXPECT_EQ(full.numbers[1].symbol, "F");
  EXPECT_EQ(full.numbers[1].bytes, 1048576u);

  const MessageDiagnosis fits = DiagnoseText(xgb("3GB", "1.5GB"));
  EXPECT_EQ(fits.cause, OomCause::kUnknown);
  EXPECT_TRUE(fits.inconsistent);
  EXPECT_TRUE(Mentions(MessageLines(fits), "R = 1.50 GiB ≤ F = 3.00 GiB"));
}

TEST(MessageRulesRaw, TensorrtGivesItsRequestAndItsOwnAdvice) {
  const MessageDiagnosis d = DiagnoseText(
      "[TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)\n"
      "[TRT] [W] Requested amount of GPU memory (4294967296 bytes) could not be allocated. There may not be enough "
      "free memory for allocation to succeed.\n");
  EXPECT_EQ(d.cause, OomCause::kUnknown);
  ASSERT_EQ(d.numbers.size(), 1u);
  EXPECT_EQ(d.numbers[0].bytes, 4294967296u);
  EXPECT_NE(d.explanation.find("TensorRT could not allocate 4.00 GiB of GPU memory"), std::string::npos) << d.explanation;
  EXPECT_TRUE(Mentions(d.advice, "trt.MemoryPoolType.WORKSPACE"));

  // A size no device holds is a size bug, whoever asked for it.
  const MessageDiagnosis huge = DiagnoseText("[TRT] [W] Requested amount of GPU memory (1099511627776 bytes) could "
                                             "not be allocated.\n");
  EXPECT_EQ(huge.cause, OomCause::kRequestTooLarge);
}

TEST(MessageRulesRaw, SizelessLibrariesAreUnknownInTheirOwnTerms) {
  const MessageDiagnosis mxnet = DiagnoseText("MXNetError: cudaMalloc retry failed: out of memory\n");
  EXPECT_EQ(mxnet.cause, OomCause::kUnknown);
  EXPECT_NE(mxnet.explanation.find("MXNet's pooled storage manager could not allocate even after releasing its whole "
                                   "pool"), std::string::npos) << mxnet.explanation;
  EXPECT_NE(mxnet.explanation.find("the message gives no sizes"), std::string::npos);
  EXPECT_TRUE(mxnet.numbers.empty());
  EXPECT_FALSE(Mentions(mxnet.advice, "MXNET_CUDNN_AUTOTUNE_DEFAULT")) << "no cuDNN in this failure";

  const MessageDiagnosis cufft = DiagnoseText("RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED\n");
  EXPECT_NE(cufft.explanation.find("cuFFT could not allocate (a plan's work area)"), std::string::npos);
  EXPECT_TRUE(Mentions(cufft.notes, "outside PyTorch's caching allocator"));
  EXPECT_TRUE(Mentions(cufft.advice, "torch.backends.cuda.cufft_plan_cache.clear()"));

  const MessageDiagnosis cusolver = DiagnoseText("RuntimeError: cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when "
                                                 "calling `cusolverDnCreate(handle)`\n");
  EXPECT_NE(cusolver.explanation.find("cuSOLVER could not allocate"), std::string::npos);
  EXPECT_TRUE(Mentions(cusolver.advice, "torch.cuda.empty_cache()"));

  for (const char* text : {"[LightGBM] [Fatal] [CUDA] out of memory /src/cuda/cuda_utils.cpp 20\n",
                           "GPUassert: out of memory main.cu 42\n"}) {
    const MessageDiagnosis d = DiagnoseText(text);
    EXPECT_EQ(d.cause, OomCause::kUnknown) << text;
    EXPECT_TRUE(d.numbers.empty()) << text;
    EXPECT_NE(d.explanation.find("the message gives no sizes"), std::string::npos) << d.explanation;
    EXPECT_TRUE(Mentions(d.advice, "nvidia-smi")) << text;
  }
}

}  // namespace
}  // namespace fragscope::analysis
