// Out-of-memory message wordings found in the wild beyond the shared corpus, on short synthetic lines
// in each wording (this test's own numbers): what traces::ScanOomMessages reads, and what it must
// not take for an error.
#include <gtest/gtest.h>

#include <cstdint>
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


// CUDA's out-of-memory error in the words of libraries that call CUDA themselves, with the size
// they print where they print one; a repeat of one failure is one message.
TEST(OomMessageWordings, NcclGgmlAndOldPytorchRawErrors) {
  // NCCL: the CUDACHECK warning, then the size it failed to allocate, then its proxy's error.
  const auto nccl = FindOomMessages(
      "NCCL version 2.19.3+cuda12.2\n"
      "host:1201:1290 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
      "host:1201:1290 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 4194304 bytes\n"
      "host:1201:1290 [3] proxy.cc:1518 NCCL WARN [Proxy Service 7] Failed to execute operation Setup from rank 7, "
      "retcode 1\n"
      "host:1201:1294 [3] enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'\n");
  ASSERT_EQ(nccl.size(), 1u);
  EXPECT_EQ(nccl[0].kind, OomMessageKind::kCudaRaw);
  EXPECT_EQ(nccl[0].framework, "nccl");
  EXPECT_EQ(nccl[0].line, 2u);
  EXPECT_EQ(nccl[0].end_line, 5u);
  ASSERT_TRUE(nccl[0].request);
  EXPECT_EQ(nccl[0].request->bytes, 4194304u);
  // llama.cpp / ggml, old: "CUDA error 2 at …: out of memory" and the device on the next line.
  const auto old_ggml = FindOomMessages("main: seed  = 1700000000\n\nCUDA error 2 at /src/llama.cpp/ggml-cuda.cu:6100: "
                                        "out of memory\ncurrent device: 1\n");
  ASSERT_EQ(old_ggml.size(), 1u);
  EXPECT_EQ(old_ggml[0].framework, "ggml");
  EXPECT_EQ(old_ggml[0].device, "device 1");
  EXPECT_FALSE(old_ggml[0].request);
  // ggml, new: the buffer it allocates, as printed and then exactly.
  const auto new_ggml = FindOomMessages(
      "load_tensors: loading model tensors, this can take a while... (mmap = true)\n"
      "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.50 MiB on device 0: cudaMalloc failed: out of "
      "memory\n"
      "alloc_tensor_range: failed to allocate CUDA0 buffer of size 21475360768\n"
      "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n");
  ASSERT_EQ(new_ggml.size(), 1u);
  EXPECT_EQ(new_ggml[0].framework, "ggml");
  EXPECT_EQ(new_ggml[0].device, "device 0");
  ASSERT_TRUE(new_ggml[0].request);
  EXPECT_EQ(new_ggml[0].request->bytes, 21475360768u);
  EXPECT_EQ(new_ggml[0].end_line, 3u);
  // Without the exact line, the size as printed.
  const auto printed = FindOomMessages("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 512.00 MiB on device 2: "
                                       "cudaMalloc failed: out of memory\n");
  ASSERT_EQ(printed.size(), 1u);
  EXPECT_EQ(printed[0].request->bytes, 512u << 20);
  EXPECT_EQ(printed[0].device, "device 2");
  // A newer ggml: CUDA's own words, then a line naming ggml.
  const auto newer = FindOomMessages("CUDA error: out of memory\n  current device: 0, in function ggml_cuda_pool_alloc "
                                     "at /src/ggml/src/ggml-cuda/ggml-cuda.cu:396\n  cuMemCreate(&handle, ...)\n");
  ASSERT_EQ(newer.size(), 1u);
  EXPECT_EQ(newer[0].framework, "ggml");
  // PyTorch 0.1: "cuda runtime err(2)".
  const auto old_torch = FindOomMessages(
      "RuntimeError: cuda runtime err(2): out of memory at /b/pytorch-0.1.12/torch/lib/THC/THCStorage.cu:66\n");
  ASSERT_EQ(old_torch.size(), 1u);
  EXPECT_EQ(old_torch[0].kind, OomMessageKind::kPytorchLegacy);
  // A raw error of PyTorch and one of NCCL close together are two failures, not one.
  EXPECT_EQ(FindOomMessages("RuntimeError: CUDA error: out of memory\nx NCCL WARN Cuda failure 'out of memory'\n").size(),
            2u);
}

// Lines that speak of running out of memory without being an error are not messages.
TEST(OomMessageWordings, ProseAboutOutOfMemoryIsNoMessage) {
  for (const char* text : {
           "If NCCL runs out of memory, lower NCCL_BUFFSIZE.\n",
           "NCCL INFO NCCL_BUFFSIZE set to 1048576 to save memory\n",
           "llama.cpp: note that cudaMalloc may fail when the GPU is out of memory\n",
           "INFO: the CUDA error 2 at startup was fixed; no out of memory since\n",
           "ggml_cuda_init: found 1 CUDA devices: out of memory checks enabled\n",
           "Tip: a CUDA runtime error can mean the card is out of memory.\n",
       }) {
    EXPECT_TRUE(FindOomMessages(text).empty()) << text;
  }
}


// A tensor of TensorFlow's cpu allocator lives in host RAM: backend "host".
TEST(OomMessageWordings, TensorflowCpuAllocatorIsTheHost) {
  const auto cpu = FindOomMessages(
      "OP_REQUIRES failed at cast_op.cc:109 : Resource exhausted: OOM when allocating tensor with shape[1,559,512,3] "
      "and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0].backend, "host");
  EXPECT_EQ(cpu[0].device, "CPU:0");
  EXPECT_EQ(cpu[0].allocator, "cpu");
  EXPECT_EQ(cpu[0].request->bytes, 1u * 559 * 512 * 3 * 4);
  const auto gpu = FindOomMessages("OOM when allocating tensor with shape[4] and type float on "
                                   "/job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc\n");
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].backend, "GPU");
}


// PyTorch's check of a size that cannot be real: the bound it prints is the request, marked as one.
TEST(OomMessageWordings, PytorchMoreThanOneExbibyte) {
  const auto m = FindOomMessages("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.\n"
                                 "next unrelated line of the log\n");
  ASSERT_EQ(m.size(), 1u);
  ASSERT_TRUE(m[0].request);
  EXPECT_EQ(m[0].request->bytes, std::uint64_t{1} << 60);
  EXPECT_TRUE(m[0].request_at_least);
  EXPECT_EQ(m[0].end_line, 1u) << "a whole message: no line joined";
  EXPECT_TRUE(m[0].problems.empty());
  EXPECT_FALSE(FindOomMessages("CUDA out of memory. Tried to allocate 2.00 MiB. GPU")[0].request_at_least);
}

// A coloured logger's escape codes around the message are no part of its text (the numbers are read
// all the same).
TEST(OomMessageWordings, TerminalEscapeCodesAreLeftOutOfTheText) {
  const auto messages = FindOomMessages(
      "\x1b[1;31m2023-02-11 09:14:02,118 ERROR\x1b[0m [trainer] torch.cuda.OutOfMemoryError: CUDA out of memory. "
      "Tried to allocate 20.00 MiB (GPU 0; 3.00 GiB total capacity; 2.50 GiB already allocated; 4.00 MiB free; "
      "2.60 GiB reserved in total by PyTorch)\x1b[0m\n");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].text.find('\x1b'), std::string::npos) << messages[0].text;
  EXPECT_EQ(messages[0].text.rfind("2023-02-11 09:14:02,118 ERROR [trainer] torch.cuda.OutOfMemoryError", 0), 0u)
      << messages[0].text;
  ASSERT_TRUE(messages[0].request && messages[0].free);
  EXPECT_EQ(messages[0].request->bytes, 20ull << 20);
  EXPECT_EQ(messages[0].free->bytes, 4ull << 20);
}

}  // namespace
}  // namespace fragscope::traces
