// The diagnosis of out-of-memory messages on short synthetic messages in the wordings real users
// paste (this test's own numbers): what each rule concludes and what its explanation may and may
// not say. One test per rule or wording; message_diagnosis_test.cpp holds the shared corpus.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fragscope/analysis/message_diagnosis.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "support/message_lines.hpp"

namespace fragscope::analysis {
namespace {

using C = traces::OomCause;
using fragscope::testing::MessageLines;
using fragscope::testing::PrintsANegativeFigure;
using fragscope::testing::DiagnoseText;
using fragscope::testing::Mentions;


std::string Async(const std::string& c, const std::string& r, const std::string& l, const std::string& f) {
  return "Allocation on device 0 would exceed allowed memory. (out of memory)\n"
         "Currently allocated     : " + c + "\n"
         "Requested               : " + r + "\n"
         "Device limit            : " + l + "\n"
         "Free (according to CUDA): " + f + "\n"
         "PyTorch limit (set by user-supplied memory fraction)\n"
         "                        : 17179869184.00 GiB\n";
}

// cudaMallocAsync: the gap L − C − F is memory no live tensor holds. When it would hold the request,
// it is what blocked it: backing, as the shared corpus reads its file 44 (a 3.80 GiB gap on a
// 16 GiB card: "non-PyTorch memory / pool cache blocks a request that would otherwise fit"), even
// when the gap is small beside the card. Kept on purpose after a tester proposed a threshold.
TEST(MessageRulesAsync, AGapThatWouldHoldTheRequestIsBacking) {
  const MessageDiagnosis full = DiagnoseText(Async("15.10 GiB", "512.00 KiB", "16.00 GiB", "0 bytes"));
  EXPECT_EQ(full.cause, C::kBacking) << full.explanation;
  EXPECT_FALSE(PrintsANegativeFigure(full));
  EXPECT_EQ(DiagnoseText(Async("15.50 GiB", "1.00 GiB", "16.00 GiB", "0 bytes")).cause, C::kCapacity);
  EXPECT_EQ(DiagnoseText(Async("1.00 GiB", "17.00 GiB", "16.00 GiB", "0 bytes")).cause, C::kRequestTooLarge);
}

// cudaMallocAsync with a memory fraction (torch.cuda.set_per_process_memory_fraction): the allocator
// raises when live tensors plus the request pass the fraction's limit, whatever CUDA has free.
TEST(MessageRulesAsync, PassingTheMemoryFractionIsCapacityOfTheAllowedShare) {
  const auto with_limit = [](const std::string& c, const std::string& r, const std::string& limit) {
    return "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\n"
           "Currently allocated     : " + c + "\nRequested               : " + r +
           "\nDevice limit            : 40.00 GiB\nFree (according to CUDA): 19.50 GiB\n"
           "PyTorch limit (set by user-supplied memory fraction)\n                        : " + limit + "\n";
  };
  const MessageDiagnosis over = DiagnoseText(with_limit("19.00 GiB", "2.00 GiB", "20.00 GiB"));
  EXPECT_EQ(over.cause, C::kCapacity) << over.explanation;
  EXPECT_FALSE(over.inconsistent);
  const auto lines = MessageLines(over);
  EXPECT_TRUE(Mentions(lines, "C + R = 19.00 GiB + 2.00 GiB = 21.00 GiB > allowed = 20.00 GiB"))
      << ::testing::PrintToString(lines);
  EXPECT_TRUE(Mentions(lines, "the process may hold 20.00 GiB (a memory fraction of the 40.00 GiB device)"));
  EXPECT_TRUE(Mentions(lines, "raise torch.cuda.set_per_process_memory_fraction"));
  EXPECT_TRUE(Mentions(lines, "(19.50 GiB is free)"));

  const MessageDiagnosis one = DiagnoseText(with_limit("1.00 GiB", "24.00 GiB", "20.00 GiB"));
  EXPECT_EQ(one.cause, C::kRequestTooLarge) << one.explanation;
  EXPECT_TRUE(Mentions(MessageLines(one), "R = 24.00 GiB > allowed = 20.00 GiB"));

  // Under the fraction, CUDA refused: the rules of the device apply (here the request fits in free).
  const MessageDiagnosis under = DiagnoseText(with_limit("10.00 GiB", "2.00 GiB", "20.00 GiB"));
  EXPECT_EQ(under.cause, C::kUnknown);
  EXPECT_TRUE(under.inconsistent);
  EXPECT_TRUE(Mentions(MessageLines(under), "C + R = 10.00 GiB + 2.00 GiB = 12.00 GiB ≤ allowed = 20.00 GiB"));

  // Within the printed figures' rounding of the limit: neither side can be told.
  const MessageDiagnosis close = DiagnoseText(with_limit("18.00 GiB", "2.00 GiB", "20.00 GiB"));
  EXPECT_EQ(close.cause, C::kUnknown) << close.explanation;
  EXPECT_TRUE(Mentions(MessageLines(close), "≈ allowed = 20.00 GiB"));
  EXPECT_NE(close.explanation.find("inconclusive"), std::string::npos);
}

// A PyTorch message cut after its request (an issue title) or after its free figure: what it lacks
// is named, never assumed (no "0 held by PyTorch", no batch share from missing figures).
TEST(MessageRulesPytorch, ACutMessageIsUnknownAndSaysWhatIsMissing) {
  const auto never_invents = [](const MessageDiagnosis& d) {
    for (const std::string& line : MessageLines(d)) {
      EXPECT_EQ(line.find("by the total the request fits"), std::string::npos) << line;
      EXPECT_EQ(line.find("?"), std::string::npos) << line;
      EXPECT_EQ(line.find("at most about"), std::string::npos) << line;
    }
  };
  const MessageDiagnosis title = DiagnoseText("CUDA out of memory. Tried to allocate 96.00 MiB. GPU");
  EXPECT_EQ(title.cause, C::kUnknown);
  EXPECT_EQ(title.explanation,
            "the message is cut off (it ends \"…out of memory. Tried to allocate 96.00 MiB. GPU\"): it lacks the "
            "device's total capacity, the free memory, what PyTorch has allocated and what it has reserved, so "
            "capacity, fragmentation and memory held elsewhere cannot be told apart");
  EXPECT_TRUE(Mentions(title.advice, "paste the whole message"));
  never_invents(title);
  // Only the request, larger than most cards but not than every one: still only cut.
  const MessageDiagnosis big = DiagnoseText("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 GiB");
  EXPECT_EQ(big.cause, C::kUnknown);
  EXPECT_NE(big.explanation.find("cut off"), std::string::npos) << big.explanation;
  never_invents(big);
  // Cut after "… is free.": T and F are there, what PyTorch holds is not.
  const MessageDiagnosis after_free = DiagnoseText(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 2 has a total capacity of 39.38 GiB "
      "of which 320.00 KiB is free.");
  EXPECT_EQ(after_free.cause, C::kUnknown);
  EXPECT_NE(after_free.explanation.find("it lacks what PyTorch has allocated and what it has reserved"),
            std::string::npos) << after_free.explanation;
  EXPECT_NE(after_free.explanation.find("(it ends \"…"), std::string::npos) << after_free.explanation;
  EXPECT_TRUE(Mentions(after_free.arithmetic, "S = 20.00 MiB > F = 320.00 KiB: no fresh segment fits"));
  never_invents(after_free);
  // What a cut message still decides: a request larger than the device it names, a fresh segment
  // that fits in the free memory it prints.
  EXPECT_EQ(DiagnoseText("CUDA out of memory. Tried to allocate 50.00 GiB. GPU 0 has a total capacity of 39.38 GiB of "
                         "which 20.00 GiB is free.").cause,
            C::kRequestTooLarge);
  const MessageDiagnosis fits = DiagnoseText(
      "CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 39.38 GiB of which 1.00 GiB is "
      "free.");
  EXPECT_EQ(fits.cause, C::kUnknown);
  EXPECT_TRUE(fits.inconsistent);
  // The legacy layout cut before its reserved figure.
  const MessageDiagnosis legacy = DiagnoseText(
      "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 7.79 GiB total capacity; 7.20 GiB already "
      "allocated; 12.00 MiB free;");
  EXPECT_EQ(legacy.cause, C::kUnknown);
  EXPECT_NE(legacy.explanation.find("it lacks what it has reserved"), std::string::npos) << legacy.explanation;
  // XPU before 2.8 prints no free figure: whole, it is not cut, and the rule without F applies.
  const MessageDiagnosis xpu = DiagnoseText(
      "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 15.11 GiB. "
      "Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.");
  EXPECT_EQ(xpu.explanation.find("cut off"), std::string::npos) << xpu.explanation;
  EXPECT_NE(xpu.explanation.find("no free figure"), std::string::npos) << xpu.explanation;
  EXPECT_TRUE(Mentions(xpu.advice, "check what else holds the device (xpu-smi)"));
}


// Libraries that report CUDA's out-of-memory error in their own words: unknown (no device state),
// the size they print, and advice in that library's terms.
TEST(MessageRulesRaw, NcclAndGgmlInTheirOwnTerms) {
  const MessageDiagnosis nccl = DiagnoseText(
      "h:1:2 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
      "h:1:2 [0] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 4194304 bytes\n");
  EXPECT_EQ(nccl.cause, C::kUnknown);
  EXPECT_NE(nccl.explanation.find("NCCL's CUDA allocation of 4.00 MiB failed"), std::string::npos) << nccl.explanation;
  ASSERT_EQ(nccl.numbers.size(), 1u);
  EXPECT_EQ(nccl.numbers[0].symbol, "R");
  EXPECT_EQ(nccl.numbers[0].bytes, 4194304u);
  EXPECT_TRUE(Mentions(nccl.advice, "NCCL_BUFFSIZE"));
  const MessageDiagnosis ggml = DiagnoseText(
      "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.50 MiB on device 0: cudaMalloc failed: out of "
      "memory\nalloc_tensor_range: failed to allocate CUDA0 buffer of size 21475360768\n");
  EXPECT_EQ(ggml.cause, C::kUnknown);
  EXPECT_NE(ggml.explanation.find("llama.cpp (ggml) could not allocate a CUDA buffer of 20.00 GiB"), std::string::npos)
      << ggml.explanation;
  EXPECT_TRUE(Mentions(ggml.advice, "--n-gpu-layers"));
  EXPECT_FALSE(Mentions(ggml.advice, "torch"));
  const MessageDiagnosis old = DiagnoseText("CUDA error 2 at /src/llama.cpp/ggml-cuda.cu:6100: out of memory\n");
  EXPECT_NE(old.explanation.find("no sizes"), std::string::npos) << old.explanation;
  EXPECT_TRUE(Mentions(old.advice, "--n-gpu-layers"));
  const MessageDiagnosis torch01 = DiagnoseText("RuntimeError: cuda runtime err(2): out of memory at THCStorage.cu:66\n");
  EXPECT_EQ(torch01.cause, C::kUnknown);
  EXPECT_NE(torch01.explanation.find("legacy THC"), std::string::npos) << torch01.explanation;
}


// TensorFlow's cpu allocator: host RAM, as pinned host memory is; no GPU advice.
TEST(MessageRulesTensorflow, TheCpuAllocatorIsHostMemory) {
  const MessageDiagnosis cpu = DiagnoseText(
      "W tensorflow/core/framework/op_kernel.cc:1763] OP_REQUIRES failed at cast_op.cc:109 : Resource exhausted: OOM "
      "when allocating tensor with shape[2,512,512,3] and type float on /job:localhost/replica:0/task:0/device:CPU:0 "
      "by allocator cpu\n");
  EXPECT_EQ(cpu.cause, C::kBacking);
  EXPECT_TRUE(cpu.host_memory);
  EXPECT_NE(cpu.explanation.find("not GPU memory: the tensor (6.00 MiB) was to live in host RAM (device CPU:0"),
            std::string::npos)
      << cpu.explanation;
  for (const std::string& line : MessageLines(cpu)) {
    for (const char* gpu : {"set_memory_growth", "GPU_0_bfc", "nvidia-smi", "TF_GPU_ALLOCATOR", "BFC dump"}) {
      EXPECT_EQ(line.find(gpu), std::string::npos) << gpu << " in: " << line;
    }
  }
  // The same tensor on a GPU stays unknown, with the GPU's advice.
  const MessageDiagnosis gpu = DiagnoseText(
      "ResourceExhaustedError: OOM when allocating tensor with shape[2,512,512,3] and type float on "
      "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n");
  EXPECT_EQ(gpu.cause, C::kUnknown);
  EXPECT_FALSE(gpu.host_memory);
  EXPECT_TRUE(Mentions(gpu.advice, "set_memory_growth"));
}


// TensorFlow's first attempt asks for about all the free memory it found: a margin within the printed
// free figure's rounding (±0.005 GiB) decides nothing, and no "R > F" is printed of two equal figures.
TEST(MessageRulesTensorflow, ARetryCascadeWithinTheRoundingIsInconclusive) {
  const auto cascade = [](const std::string& free, const std::string& first, const std::string& second) {
    return "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1432] Found device 0 with properties:\n"
           "totalMemory: 7.93GiB freeMemory: " + free + "\n"
           "E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 2.12G (" + first +
           " bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
           "E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 1.91G (" + second +
           " bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n";
  };
  // 2.12 GiB is 2276332667 bytes; the attempt is 1 MiB below it, the retry 0.9 of that.
  const MessageDiagnosis close = DiagnoseText(cascade("2.12GiB", "2275284091", "2047755682"));
  EXPECT_EQ(close.cause, C::kUnknown) << close.explanation;
  EXPECT_FALSE(close.inconsistent);
  const auto lines = MessageLines(close);
  EXPECT_TRUE(Mentions(lines, "R = 2.12 GiB ≈ F = 2.12GiB (of T = 7.93GiB): equal within the rounding"))
      << ::testing::PrintToString(lines);
  EXPECT_FALSE(Mentions(lines, "> F = 2.12GiB"));
  EXPECT_NE(close.explanation.find("inconclusive"), std::string::npos);

  // Beyond the rounding each way: the driver had less than it said free (backing), or it fits (inconsistent).
  EXPECT_EQ(DiagnoseText(cascade("2.00GiB", "2275284091", "2047755682")).cause, C::kBacking);
  const MessageDiagnosis fits = DiagnoseText(cascade("2.50GiB", "2275284091", "2047755682"));
  EXPECT_EQ(fits.cause, C::kUnknown);
  EXPECT_TRUE(fits.inconsistent);
}

// XLA:TPU at compile time: where used and capacity print alike, the excess XLA prints decides.
TEST(MessageRulesXla, TheExcessDecidesWhereTheRoundedFiguresLookEqual) {
  const MessageDiagnosis smem = DiagnoseText(
      "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in "
      "memory space smem. Used 2.00M of 2.00M smem. Exceeded smem capacity by 3.5K.");
  EXPECT_EQ(smem.cause, C::kCapacity) << smem.explanation;
  EXPECT_TRUE(Mentions(smem.arithmetic, "used = 2.00M and C = 2.00M are equal within their rounding (±5.12 KiB); the "
                                        "excess XLA prints, 3.5K, decides"));
  EXPECT_NE(smem.explanation.find("3.5K over"), std::string::npos) << smem.explanation;
  EXPECT_FALSE(PrintsANegativeFigure(smem));
  // Clearly over: as before, with the ratio.
  const MessageDiagnosis hbm = DiagnoseText(
      "XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 20.00G of 15.50G hbm. Exceeded "
      "hbm capacity by 4.50G.");
  EXPECT_EQ(hbm.cause, C::kCapacity);
  EXPECT_NE(hbm.explanation.find("1.29×"), std::string::npos) << hbm.explanation;
  // Equal and no excess printed, or used clearly below: nothing to decide, and no negative figure.
  EXPECT_EQ(DiagnoseText("Ran out of memory in memory space smem. Used 1.00M of 1.00M smem.").cause, C::kUnknown);
  const MessageDiagnosis below = DiagnoseText(
      "Ran out of memory in memory space vmem. Used 10.00M of 16.00M vmem. Exceeded vmem capacity by 1.0K.");
  EXPECT_EQ(below.cause, C::kUnknown);
  EXPECT_FALSE(PrintsANegativeFigure(below));
}


// A request above what any device holds is request-too-large without the device's size: PyTorch's
// "more than 1EB", or a number that large.
TEST(MessageRulesPytorch, MoreThanAnyDeviceIsRequestTooLarge) {
  const MessageDiagnosis eb = DiagnoseText("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate more than "
                                           "1EB memory");
  EXPECT_EQ(eb.cause, C::kRequestTooLarge);
  EXPECT_NE(eb.explanation.find("one request of more than 1EB is larger than any device"), std::string::npos)
      << eb.explanation;
  EXPECT_TRUE(Mentions(eb.arithmetic, "R > 1EB = 1.00 EiB"));
  ASSERT_FALSE(eb.numbers.empty());
  EXPECT_EQ(eb.numbers[0].name, "requested (more than)");
  EXPECT_EQ(DiagnoseText("CUDA out of memory. Tried to allocate 600.00 GiB").cause, C::kRequestTooLarge);
  // Below that bound and without the device's size: a cut message, no more.
  EXPECT_EQ(DiagnoseText("CUDA out of memory. Tried to allocate 200.00 GiB").cause, C::kUnknown);
}


// No figure is printed below zero: differences of rounded figures within their rounding read "≈ 0",
// beyond it they are said in words; a process NVML did not see is not "−20 GiB of non-PyTorch memory".
TEST(MessageRulesPytorch, NoNegativeFigures) {
  // "this process has 0 bytes": NVML did not see the process.
  const MessageDiagnosis unseen = DiagnoseText(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total capacity of 23.65 GiB "
      "of which 1.00 GiB is free. Including non-PyTorch memory, this process has 0 bytes memory in use. Of the "
      "allocated memory 20.00 GiB is allocated by PyTorch, and 2.00 GiB is reserved by PyTorch but unallocated.");
  EXPECT_EQ(unseen.cause, C::kFragmentation);
  EXPECT_FALSE(PrintsANegativeFigure(unseen));
  EXPECT_TRUE(Mentions(unseen.arithmetic, "P = 0 bytes < Rv = 22.00 GiB"));
  EXPECT_TRUE(Mentions(unseen.notes, "NVML did not see this process"));
  EXPECT_FALSE(Mentions(unseen.advice, "not PyTorch's (P − Rv)"));
  // T and F print alike, PyTorch holds 2 MiB: T − F − Rv is −2 MiB as printed, 0 within the rounding.
  const MessageDiagnosis empty = DiagnoseText(
      "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 4.50 GiB. GPU 0 has a total capacity of 5.65 GiB of "
      "which 5.65 GiB is free. Of the allocated memory 200.00 KiB is allocated by PyTorch, and 1.80 MiB is reserved by "
      "PyTorch but unallocated.");
  EXPECT_FALSE(PrintsANegativeFigure(empty));
  EXPECT_TRUE(Mentions(empty.arithmetic, "outside = T − F − Rv = 5.65 GiB − 5.65 GiB − 2.00 MiB ≈ 0 (within the "
                                         "figures' rounding"));
  // MPS at its limit within the rounding: "reach", not "pass … by −5 MiB"; no "100 %" batch.
  const MessageDiagnosis mps = DiagnoseText(
      "RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, max allowed: "
      "9.07 GB). Tried to allocate 6.25 MB on private pool.");
  EXPECT_EQ(mps.cause, C::kCapacity);
  EXPECT_FALSE(PrintsANegativeFigure(mps));
  EXPECT_NE(mps.explanation.find("reach the 9.07 GB limit"), std::string::npos) << mps.explanation;
  EXPECT_TRUE(Mentions(mps.advice, "a slightly smaller batch"));
  EXPECT_FALSE(Mentions(mps.advice, "100 %"));
  // Windows: PyTorch holds more than the card; said in words.
  const MessageDiagnosis wddm = DiagnoseText(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of "
      "8.00 GiB of which 0 bytes is free. Of the allocated memory 12.00 GiB is allocated by PyTorch, and 1.00 GiB is "
      "reserved by PyTorch but unallocated.");
  EXPECT_TRUE(wddm.wddm_spill);
  EXPECT_FALSE(PrintsANegativeFigure(wddm));
}

// ROCm (HIP) devices get ROCm's tools, not NVIDIA's.
TEST(MessageRulesPytorch, HipAdviceNamesRocmTools) {
  const MessageDiagnosis hip = DiagnoseText(
      "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 128.00 GiB "
      "of which 800.00 MiB is free. Of the allocated memory 50.00 GiB is allocated by PyTorch, and 80.00 MiB is "
      "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
      "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
  EXPECT_EQ(hip.cause, C::kBacking);
  EXPECT_TRUE(Mentions(hip.advice, "rocm-smi"));
  EXPECT_TRUE(Mentions(hip.advice, "HIP_VISIBLE_DEVICES"));
  for (const std::string& line : MessageLines(hip)) {
    for (const char* nvidia : {"nvidia-smi", "CUDA_VISIBLE_DEVICES", "CUDA context", "PYTORCH_CUDA_ALLOC_CONF"}) {
      EXPECT_EQ(line.find(nvidia), std::string::npos) << nvidia << " in: " << line;
    }
  }
  // The same on CUDA keeps NVIDIA's.
  std::string cuda = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total "
                     "capacity of 128.00 GiB of which 800.00 MiB is free. Of the allocated memory 50.00 GiB is allocated "
                     "by PyTorch, and 80.00 MiB is reserved by PyTorch but unallocated.";
  EXPECT_TRUE(Mentions(DiagnoseText(cuda).advice, "nvidia-smi"));
}

}  // namespace
}  // namespace fragscope::analysis
