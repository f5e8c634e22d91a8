// Out-of-memory messages of PaddlePaddle, Theano, ONNX Runtime, torch-directml and TensorFlow's Eigen
// allocator, in each one's wording (from its source and public reports) with this test's own
// numbers: every number the message prints is read to the byte, none it does not print is made up.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "fragscope/traces/oom_message.hpp"
#include "oom_message_test_support.hpp"

namespace fragscope::traces {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

using testing::One;

// Paddle ≥ 2.3 (CUDAAllocator): request, memory in use, available, then its advice lines.
TEST(OomMessagePaddle, CurrentWordingWithItsAdviceLines) {
  const std::string text =
      "W1102 08:00:01.000000  4242 gpu_resources.cc:61] Please NOTE: device: 0, GPU Compute Capability: 8.6\n"
      "----------------------\nError Message Summary:\n----------------------\nResourceExhaustedError: \n\n"
      "Out of memory error on GPU 1. Cannot allocate 300.500000MB memory on GPU 1, 10.250000GB memory has been "
      "allocated and available memory is only 20.000000MB.\n\n"
      "Please check whether there is any other process using GPU 1.\n"
      "1. If yes, please stop them, or start PaddlePaddle on another GPU.\n"
      "2. If no, please decrease the batch size of your model. \n"
      " (at /paddle/paddle/phi/core/memory/allocation/cuda_allocator.cc:71)\n"
      "\nepoch 3 done\n";
  const OomMessage m = One(text);
  EXPECT_EQ(m.kind, OomMessageKind::kPaddleGpu);
  EXPECT_EQ(ToString(m.kind), "paddle-gpu");
  EXPECT_EQ(m.framework, "paddle");
  EXPECT_EQ(m.backend, "GPU");
  EXPECT_EQ(m.device, "GPU 1");
  EXPECT_EQ(m.line, 7u);
  EXPECT_EQ(m.end_line, 12u) << "the advice lines up to \"(at …)\" belong to it";
  ASSERT_TRUE(m.request && m.allocated && m.free);
  EXPECT_EQ(m.request->bytes, 300 * kMiB + kMiB / 2);
  EXPECT_EQ(m.allocated->bytes, 10 * kGiB + kGiB / 4);
  EXPECT_EQ(m.free->bytes, 20 * kMiB);
  EXPECT_FALSE(m.total) << "Paddle prints no total: it is derived, never read";
  EXPECT_FALSE(m.memory_limit);
  EXPECT_TRUE(m.problems.empty());
}

// Paddle 1.6 – 2.2: no memory in use; a paste that wrapped the line; the fraction flag.
TEST(OomMessagePaddle, OlderWordingsWrappedAndWithTheFractionFlag) {
  const OomMessage wrapped = One(
      "Out of memory error on GPU 0. Cannot allocate 1.500000GB memory on GPU 0, available memory is only \n"
      "                   416.000000MB.\n\n"
      "                   Please check whether there is any other process using GPU 0.\n");
  EXPECT_EQ(wrapped.request->bytes, 3 * kGiB / 2);
  ASSERT_TRUE(wrapped.free);
  EXPECT_EQ(wrapped.free->bytes, 416 * kMiB);
  EXPECT_FALSE(wrapped.allocated);
  EXPECT_EQ(wrapped.end_line, 4u);

  const OomMessage fraction = One(
      "paddle::memory::allocation::BadAlloc\n"
      "Out of memory error on GPU 0. Cannot allocate 6.000000GB memory on GPU 0, available memory is only 700.000000MB.\n"
      "Please check whether there is any other process using GPU 0.\n"
      "1. If yes, please stop them, or start PaddlePaddle on another GPU.\n"
      "2. If no, please try one of the following suggestions:\n"
      "   1) Decrease the batch size of your model.\n"
      "   2) FLAGS_fraction_of_gpu_memory_to_use is 0.92 now, please set it to a higher value but less than 1.0.\n"
      "      The command is `export FLAGS_fraction_of_gpu_memory_to_use=xxx`.\n");
  EXPECT_EQ(fraction.request->bytes, 6 * kGiB);
  EXPECT_EQ(fraction.free->bytes, 700 * kMiB);
  EXPECT_EQ(fraction.hint_env, "FLAGS_fraction_of_gpu_memory_to_use");
  EXPECT_EQ(fraction.end_line, 8u);

  // 2019's: "… GPU memory, available memory is X."
  const OomMessage v15 = One("Out of memory error on GPU 2. Cannot allocate 145.000000MB GPU memory, available memory "
                             "is 72.500000MB.\n");
  EXPECT_EQ(v15.device, "GPU 2");
  EXPECT_EQ(v15.request->bytes, 145 * kMiB);
  EXPECT_EQ(v15.free->bytes, 72 * kMiB + kMiB / 2);
}

TEST(OomMessagePaddle, MemoryLimitFlagEnforceAndHostWordings) {
  const OomMessage limited = One(
      "Out of memory error on GPU 0. Cannot allocate 512.000000MB memory on GPU 0, 3.750000GB memory has been allocated "
      "and available memory is only 256.000000MB.\n\nPlease check whether there is any other process using GPU 0.\n"
      "1. If yes, please stop them, or start PaddlePaddle on another GPU.\n"
      "2. If no, please decrease the batch size of your model. Or set environment variable "
      "`FLAGS_gpu_memory_limit_mb` to a larger value. Currently `FLAGS_gpu_memory_limit_mb` is 4096, so the maximum GPU "
      "memory usage is limited to 4096 MB.\n   The command is `export FLAGS_gpu_memory_limit_mb=xxx`.\n");
  EXPECT_EQ(limited.hint_env, "FLAGS_gpu_memory_limit_mb");
  ASSERT_TRUE(limited.memory_limit);
  EXPECT_EQ(limited.memory_limit->bytes, 4 * kGiB);

  // 2018: exact bytes.
  const OomMessage enforce = One("paddle.fluid.core.EnforceNotMet: enforce allocating <= available failed, 9663676416 > "
                                 "1073741824\nat [/paddle/paddle/fluid/platform/gpu_info.cc:89]\n");
  EXPECT_EQ(enforce.kind, OomMessageKind::kPaddleGpu);
  EXPECT_EQ(enforce.request->bytes, 9663676416u);
  EXPECT_EQ(enforce.free->bytes, 1073741824u);

  // Its host allocator: host RAM, with posix_memalign's errno.
  const OomMessage host = One("ResourceExhaustedError: Fail to alloc memory of 40000000000 size, error code is 12.\n");
  EXPECT_EQ(host.kind, OomMessageKind::kPaddleHost);
  EXPECT_EQ(host.backend, "host");
  EXPECT_EQ(host.request->bytes, 40000000000u);
  EXPECT_EQ(host.error_code, "12");
}

TEST(OomMessageTheano, RequestWithAndWithoutTheDriversFigures) {
  const OomMessage full = One(
      "MemoryError: Error allocating 150000000 bytes of device memory (out of memory). Driver report 90000000 bytes "
      "free and 2147483648 bytes total\nApply node that caused the error: GpuDot22(x, W)\n");
  EXPECT_EQ(full.kind, OomMessageKind::kTheano);
  EXPECT_EQ(full.framework, "theano");
  EXPECT_EQ(full.request->bytes, 150000000u);
  EXPECT_EQ(full.free->bytes, 90000000u);
  EXPECT_EQ(full.total->bytes, 2147483648u);
  EXPECT_EQ(full.error_code, "out of memory");

  const OomMessage bare = One("MemoryError: Error allocating 2000000 bytes of device memory (CNMEM_STATUS_OUT_OF_MEMORY).\n");
  EXPECT_EQ(bare.request->bytes, 2000000u);
  EXPECT_FALSE(bare.free);
  EXPECT_FALSE(bare.total);
  EXPECT_EQ(bare.error_code, "CNMEM_STATUS_OUT_OF_MEMORY");

  // Wrapped before "Driver report".
  const OomMessage wrapped = One("Error allocating 4096 bytes of device memory (out of memory).\n"
                                 "Driver report 0 bytes free and 1073741824 bytes total\n");
  EXPECT_EQ(wrapped.free->bytes, 0u);
  EXPECT_EQ(wrapped.total->bytes, 1073741824u);
  EXPECT_EQ(wrapped.end_line, 2u);
}

TEST(OomMessageOnnxRuntime, ArenaAndCudaProviderWordings) {
  const OomMessage failed = One(
      "2024-05-01 10:00:00.000 [E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] Non-zero status code returned "
      "while running Conv node. Name:'conv_3' Status Message: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 "
      "void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
      "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 805306368\n");
  EXPECT_EQ(failed.kind, OomMessageKind::kOrtArena);
  EXPECT_EQ(ToString(failed.kind), "onnxruntime-arena");
  EXPECT_EQ(failed.framework, "onnxruntime");
  EXPECT_EQ(failed.request->bytes, 805306368u);
  EXPECT_FALSE(failed.limit_available);

  const OomMessage limit = One("RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : BFCArena::AllocateRawInternal "
                               "Available memory of 1048576 is smaller than requested bytes of 33554432\n");
  EXPECT_EQ(limit.request->bytes, 33554432u);
  ASSERT_TRUE(limit.limit_available);
  EXPECT_EQ(limit.limit_available->bytes, 1048576u);
  EXPECT_FALSE(limit.free) << "the room under the arena's limit is not the device's free memory";

  const OomMessage cuda = One("onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : "
                              "RUNTIME_EXCEPTION : CUDA failure 2: out of memory ; GPU=3 ; hostname=node7 ; "
                              "expr=cudaMalloc((void**)&p, size);\n");
  EXPECT_EQ(cuda.kind, OomMessageKind::kCudaRaw);
  EXPECT_EQ(cuda.framework, "onnxruntime");
  EXPECT_EQ(cuda.device, "GPU 3");
  EXPECT_EQ(cuda.error_code, "cudaErrorMemoryAllocation");
  EXPECT_FALSE(cuda.request);

  const OomMessage cublas = One("CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=h ; "
                                "expr=cublasCreate(&cublas_handle_);\n");
  EXPECT_EQ(cublas.kind, OomMessageKind::kCublas);
  EXPECT_EQ(cublas.framework, "onnxruntime");
  EXPECT_EQ(cublas.device, "GPU 0");
}

TEST(OomMessageDirectmlAndEigen, RequestOnly) {
  const OomMessage dml = One("RuntimeError: Could not allocate tensor with 471859200 bytes. There is not enough GPU "
                             "video memory available!\n");
  EXPECT_EQ(dml.kind, OomMessageKind::kDirectml);
  EXPECT_EQ(dml.framework, "pytorch");
  EXPECT_EQ(dml.backend, "DirectML");
  EXPECT_EQ(dml.request->bytes, 471859200u);

  const OomMessage eigen = One("F tensorflow/core/common_runtime/gpu/gpu_device.cc:104] EigenAllocator for GPU ran out "
                               "of memory when allocating 16777216. See error logs for more detailed info.\n");
  EXPECT_EQ(eigen.kind, OomMessageKind::kTfEigen);
  EXPECT_EQ(eigen.framework, "tensorflow");
  EXPECT_EQ(eigen.request->bytes, 16777216u);
  const OomMessage status = One("ResourceExhaustedError: Ran out of GPU memory when allocating 0 bytes for "
                                "[[{{node Conv2D}}]]\n");
  ASSERT_TRUE(status.request);
  EXPECT_EQ(status.request->bytes, 0u) << "a size of 0 is read as 0, not as absent";
}

// Their numbers pass the same 4 EiB check as every other message's.
TEST(OomMessageFrameworks, NumbersTooLargeAreProblemsNotCrashes) {
  const OomMessage ort = One("Failed to allocate memory for requested buffer of size 99999999999999999999\n");
  EXPECT_FALSE(ort.request);
  const OomMessage theano = One("Error allocating 18446744073709551615 bytes of device memory (out of memory).\n");
  EXPECT_FALSE(theano.request);
  EXPECT_EQ(theano.problems.size(), 1u);
  const OomMessage paddle = One("Out of memory error on GPU 0. Cannot allocate 9000000.000000TB memory on GPU 0, "
                                "available memory is only 0.000000B.\n");
  EXPECT_FALSE(paddle.request);
  EXPECT_EQ(paddle.problems.size(), 1u);
  ASSERT_TRUE(paddle.free);
  EXPECT_EQ(paddle.free->bytes, 0u);
  for (const char* cut : {"Out of memory error on ", "Out of memory error on GPU 0. Cannot allocate", "Error allocating ",
                          "Available memory of  is smaller than requested bytes of ", "Fail to alloc memory of x"}) {
    EXPECT_NO_THROW(FindOomMessages(cut)) << cut;
  }
}

// TensorFlow's MakeTensorFromProto says "of shape [..]" with a space, where the op kernels say
// "with shape[..]": the request is the shape times the dtype's size either way.
TEST(OomMessageTensorflow, TensorOfShapeWithASpace) {
  const OomMessage m = One(
      "ResourceExhaustedError: OOM when allocating tensor of shape [32256512,512] and type float\n"
      "\t [[Node: embedding/Initializer/random_uniform = Const[dtype=DT_FLOAT]()]]\n");
  EXPECT_EQ(m.kind, OomMessageKind::kTfTensor);
  EXPECT_EQ(m.tensor_shape, (std::vector<std::uint64_t>{32256512, 512}));
  EXPECT_EQ(m.tensor_dtype, "float");
  ASSERT_TRUE(m.request.has_value());
  EXPECT_EQ(m.request->bytes, 32256512ull * 512 * 4);
}

}  // namespace
}  // namespace fragscope::traces
