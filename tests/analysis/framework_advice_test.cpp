// Advice in the evidence's framework's own terms: which setting each framework's OOM of each cause
// gets, and none for fragscope's own traces or an unknown cause.
#include "fragscope/analysis/framework_advice.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/tf_bfc_log.hpp"

namespace fragscope::analysis {
namespace {

using traces::OomCause;

bool Says(const FrameworkAdvice& advice, const char* text) { return advice.advice.find(text) != std::string::npos; }

FrameworkAdvice AdviceInFrameworkTerms(std::string_view source_format, OomCause cause,
                                       std::vector<std::pair<std::string, std::string>> settings = {}) {
  traces::TraceHeader header;
  header.source_format = std::string(source_format);
  header.source.settings = std::move(settings);
  return analysis::AdviceInFrameworkTerms(header, cause);
}

TEST(FrameworkAdvice, PytorchGetsItsAllocatorSettingsOnlyWhereTheyHelp) {
  for (const char* source : {"pytorch-snapshot", "torch-profiler"}) {
    EXPECT_EQ(AdviceInFrameworkTerms(source, OomCause::kFragmentation).framework, "PyTorch");
    EXPECT_TRUE(Says(AdviceInFrameworkTerms(source, OomCause::kFragmentation), "expandable_segments:True"));
    EXPECT_TRUE(Says(AdviceInFrameworkTerms(source, OomCause::kCapacity), "no PYTORCH_CUDA_ALLOC_CONF setting"));
    EXPECT_TRUE(Says(AdviceInFrameworkTerms(source, OomCause::kRequestTooLarge), "no allocator setting helps"));
    EXPECT_TRUE(Says(AdviceInFrameworkTerms(source, OomCause::kBacking), "nvidia-smi"));
  }
}

// A run that already had expandable segments is not told to turn them on.
TEST(FrameworkAdvice, PytorchWithExpandableSegmentsOnIsNotToldToTurnThemOn) {
  const FrameworkAdvice on = AdviceInFrameworkTerms("pytorch-snapshot", OomCause::kFragmentation,
                                                    {{"expandable_segments", "True"}});
  EXPECT_TRUE(Says(on, "already on")) << on.advice;
  EXPECT_FALSE(Says(on, "expandable_segments:True")) << on.advice;
  const FrameworkAdvice off = AdviceInFrameworkTerms("pytorch-snapshot", OomCause::kFragmentation,
                                                     {{"expandable_segments", "False"}});
  EXPECT_TRUE(Says(off, "expandable_segments:True")) << off.advice;
}

TEST(FrameworkAdvice, TensorflowAndRmmInTheirOwnTerms) {
  EXPECT_EQ(AdviceInFrameworkTerms("tensorflow-bfc-log", OomCause::kFragmentation).framework, "TensorFlow");
  EXPECT_TRUE(Says(AdviceInFrameworkTerms("tensorflow-bfc-log", OomCause::kFragmentation), "TF_GPU_ALLOCATOR=cuda_malloc_async"));
  EXPECT_TRUE(Says(AdviceInFrameworkTerms("tensorflow-bfc-log", OomCause::kBacking), "set_memory_growth"));
  EXPECT_EQ(AdviceInFrameworkTerms("rmm-csv", OomCause::kFragmentation).framework, "RMM");
  EXPECT_TRUE(Says(AdviceInFrameworkTerms("rmm-csv", OomCause::kFragmentation), "CudaAsyncMemoryResource"));
}

// A BFC dump from a JAX log (its source allocator kJaxBfcAllocator): JAX's environment variables.
TEST(FrameworkAdvice, JaxDumpsInJaxsTerms) {
  traces::TraceHeader header;
  header.source_format = "tensorflow-bfc-log";
  header.source.allocator = std::string(traces::kJaxBfcAllocator);
  EXPECT_EQ(analysis::AdviceInFrameworkTerms(header, OomCause::kCapacity).framework, "JAX");
  EXPECT_TRUE(Says(analysis::AdviceInFrameworkTerms(header, OomCause::kCapacity), "XLA_PYTHON_CLIENT_MEM_FRACTION"));
  EXPECT_TRUE(Says(analysis::AdviceInFrameworkTerms(header, OomCause::kFragmentation), "XLA_PYTHON_CLIENT_ALLOCATOR=platform"));
  EXPECT_TRUE(Says(analysis::AdviceInFrameworkTerms(header, OomCause::kBacking), "XLA_PYTHON_CLIENT_PREALLOCATE=false"));
  EXPECT_TRUE(Says(analysis::AdviceInFrameworkTerms(header, OomCause::kRequestTooLarge), "split it"));
  EXPECT_FALSE(Says(analysis::AdviceInFrameworkTerms(header, OomCause::kCapacity), "tf.keras"));
  EXPECT_TRUE(analysis::AdviceInFrameworkTerms(header, OomCause::kUnknown).empty());
}

TEST(FrameworkAdvice, NoneForOurOwnTracesOrAnUnknownCause) {
  EXPECT_TRUE(AdviceInFrameworkTerms("fragscope", OomCause::kFragmentation).empty());
  EXPECT_TRUE(AdviceInFrameworkTerms("oom-message", OomCause::kCapacity).empty());  // messages advise themselves
  EXPECT_TRUE(AdviceInFrameworkTerms("pytorch-snapshot", OomCause::kUnknown).empty());
  EXPECT_TRUE(AdviceInFrameworkTerms("tensorflow-bfc-log", OomCause::kUnknown).empty());
}

}  // namespace
}  // namespace fragscope::analysis
