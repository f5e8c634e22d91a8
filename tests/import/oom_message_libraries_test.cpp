// Out-of-memory messages of libraries that call CUDA themselves, each in its own wording (from its
// source: CuPy's memory.pyx, MXNet's pooled_storage_manager.h, TensorRT's allocator, XGBoost's
// device_helpers, LightGBM's cuda_utils.h, PyTorch's cuFFT / cuSOLVER checks) with this test's own
// numbers: every number the message prints is read to the byte, none it does not print is made up.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/oom_message.hpp"
#include "oom_message_test_support.hpp"

namespace fragscope::traces {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

using testing::One;

TEST(OomMessageCupy, PoolWordingWithAndWithoutItsLimit) {
  const OomMessage plain = One("Traceback (most recent call last):\n"
                               "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 2,147,483,648 bytes "
                               "(allocated so far: 6,442,450,944 bytes).\n");
  EXPECT_EQ(plain.kind, OomMessageKind::kCupy);
  EXPECT_EQ(ToString(plain.kind), "cupy");
  EXPECT_EQ(plain.framework, "cupy");
  EXPECT_EQ(plain.line, 2u);
  ASSERT_TRUE(plain.request && plain.allocated);
  EXPECT_EQ(plain.request->bytes, 2 * kGiB);
  EXPECT_EQ(plain.request->tolerance, 0u) << "an exact count";
  EXPECT_EQ(plain.request->text, "2,147,483,648 bytes") << "as printed";
  EXPECT_EQ(plain.allocated->bytes, 6 * kGiB);
  EXPECT_FALSE(plain.allowed) << "no limit printed";
  EXPECT_FALSE(plain.total);
  EXPECT_FALSE(plain.free);

  const OomMessage limited = One("OutOfMemoryError: Out of memory allocating 1,024 bytes (allocated so far: "
                                 "536,870,400 bytes, limit set to: 536,870,912 bytes).");
  ASSERT_TRUE(limited.request && limited.allocated && limited.allowed);
  EXPECT_EQ(limited.request->bytes, 1024u);
  EXPECT_EQ(limited.allocated->bytes, 512 * kMiB - 512);
  EXPECT_EQ(limited.allowed->bytes, 512 * kMiB);
}

TEST(OomMessageCupy, OtherProgramsSameWordsAreNoCupyMessage) {
  // XLA's CPU client and plain C programs say "Out of memory allocating N bytes" too, about host RAM.
  EXPECT_TRUE(FindOomMessages("fprintf: Out of memory allocating 4096 bytes for the table\n").empty());
}

TEST(OomMessageMxnet, RetryFailedAfterReleasingThePool) {
  const OomMessage m = One("mxnet.base.MXNetError: [10:21:33] src/storage/./pooled_storage_manager.h:157: "
                           "cudaMalloc retry failed: out of memory\n");
  EXPECT_EQ(m.kind, OomMessageKind::kCudaRaw);
  EXPECT_EQ(m.framework, "mxnet");
  EXPECT_EQ(m.backend, "CUDA");
  EXPECT_EQ(m.error_code, "cudaErrorMemoryAllocation");
  EXPECT_FALSE(m.request) << "MXNet prints no size";

  // Its Windows traceback form: the header file on one line, the error on the next.
  const OomMessage traceback = One("  File \"c:\\jenkins\\mxnet\\src\\storage\\./pooled_storage_manager.h\", line 161\n"
                                   "MXNetError: cudaMalloc retry failed: out of memory\n");
  EXPECT_EQ(traceback.framework, "mxnet");
  EXPECT_EQ(traceback.line, 2u);
}

TEST(OomMessageTensorrt, ItsThreeLinesAreOneFailureWithTheRequest) {
  const OomMessage m = One(
      "[01/10/2024-10:00:00] [TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of "
      "memory)\n"
      "[01/10/2024-10:00:00] [TRT] [W] Requested amount of GPU memory (3221225472 bytes) could not be allocated. "
      "There may not be enough free memory for allocation to succeed.\n"
      "[01/10/2024-10:00:00] [TRT] [E] 2: [executionContext.cpp::ExecutionContext::400] Error Code 2: OutOfMemory "
      "(no further information)\n"
      "Segmentation fault\n");
  EXPECT_EQ(m.kind, OomMessageKind::kCudaRaw);
  EXPECT_EQ(m.framework, "tensorrt");
  EXPECT_EQ(m.line, 1u);
  EXPECT_EQ(m.end_line, 3u);
  ASSERT_TRUE(m.request);
  EXPECT_EQ(m.request->bytes, 3 * kGiB);
  EXPECT_EQ(m.request->tolerance, 0u);

  // Without the allocator's first line: the request line starts it, the size also in "Requested size was".
  const OomMessage later = One("[W] Requested amount of GPU memory (1048576 bytes) could not be allocated.\n"
                               "[E] [executionContext.cpp::initializeExecutionContext::625] Error Code 2: OutOfMemory "
                               "(Requested size was 1048576 bytes.)\n");
  EXPECT_EQ(later.framework, "tensorrt");
  EXPECT_EQ(later.end_line, 2u);
  ASSERT_TRUE(later.request);
  EXPECT_EQ(later.request->bytes, kMiB);
}

TEST(OomMessageXgboost, FreeAndRequestedInBytesOrInItsUnits) {
  const OomMessage bytes = One("xgboost.core.XGBoostError: [10:11:12] /workspace/src/common/device_helpers.cuh:431: "
                               "Memory allocation error on worker 0: std::bad_alloc: cudaErrorMemoryAllocation: out of "
                               "memory\n- Free memory: 3145728\n- Requested memory: 1073741824\n\nStack trace:\n");
  EXPECT_EQ(bytes.framework, "xgboost");
  EXPECT_EQ(bytes.end_line, 3u);
  ASSERT_TRUE(bytes.free && bytes.request);
  EXPECT_EQ(bytes.free->bytes, 3 * kMiB);
  EXPECT_EQ(bytes.request->bytes, kGiB);
  EXPECT_EQ(bytes.free->tolerance, 0u);

  // Since 2.1: HumanMemUnit, six significant digits without trailing zeros, 1024-based.
  const OomMessage units = One("XGBoostError: Memory allocation error on worker 1: std::bad_alloc: "
                               "cudaErrorMemoryAllocation: out of memory\n- Free memory: 512MB\n"
                               "- Requested memory: 1.5GB\n");
  ASSERT_TRUE(units.free && units.request);
  EXPECT_EQ(units.free->bytes, 512 * kMiB);
  EXPECT_EQ(units.request->bytes, 3 * kGiB / 2);
  EXPECT_EQ(units.free->tolerance, 512 * kMiB / 200000 + 1) << "six digits, not ±0.5 MiB";
  EXPECT_EQ(units.request->text, "1.5GB");
}

TEST(OomMessageCudaChecks, LightgbmGpuassertCufftCusolverHaveNoSize) {
  const OomMessage lightgbm = One("[LightGBM] [Fatal] [CUDA] out of memory /lightgbm/src/cuda/cuda_utils.cpp 20\n");
  EXPECT_EQ(lightgbm.kind, OomMessageKind::kCudaRaw);
  EXPECT_EQ(lightgbm.framework, "lightgbm");
  EXPECT_FALSE(lightgbm.request);

  const OomMessage gpuassert = One("GPUassert: out of memory kernel.cu 42\n");
  EXPECT_EQ(gpuassert.kind, OomMessageKind::kCudaRaw);
  EXPECT_EQ(gpuassert.framework, "cuda");
  EXPECT_EQ(gpuassert.error_code, "cudaErrorMemoryAllocation");

  const OomMessage cufft = One("RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED\n");
  EXPECT_EQ(cufft.kind, OomMessageKind::kCufft);
  EXPECT_EQ(ToString(cufft.kind), "cufft");
  EXPECT_EQ(cufft.framework, "pytorch");
  EXPECT_EQ(cufft.error_code, "CUFFT_ALLOC_FAILED");

  const OomMessage cupy_fft = One("cupy.cuda.cufft.CuFFTError: CUFFT_ALLOC_FAILED\n");
  EXPECT_EQ(cupy_fft.framework, "cupy");

  const OomMessage cusolver =
      One("RuntimeError: cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling `cusolverDnCreate(handle)`\n");
  EXPECT_EQ(cusolver.kind, OomMessageKind::kCusolver);
  EXPECT_EQ(ToString(cusolver.kind), "cusolver");
  EXPECT_EQ(cusolver.framework, "pytorch");
  EXPECT_EQ(cusolver.error_code, "CUSOLVER_STATUS_ALLOC_FAILED");
}

}  // namespace
}  // namespace fragscope::traces
