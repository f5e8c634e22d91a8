// `fragscope report` of out-of-memory error messages: one pasted on standard input (golden text,
// exit code 1), two found in a long log (JSON, one device each, --device picks one), a number too
// large to represent, and every message of the shared corpus.
//
// After an intended change of the output, regenerate tests/golden/report-message.txt with
//   FRAGSCOPE_UPDATE_GOLDEN=1 ctest -R MessageReport
// and review the diff.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli_fixture.hpp"
#include "support/golden.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::testing::CliResult;
using fragscope::testing::ExpectGolden;

class MessageReport : public fragscope::testing::CliTest {};

// A message in PyTorch 2.2's wording with this test's own numbers (the corpus stays in ../shared).
const char kMessage22[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of "
    "23.65 GiB of which 2.10 GiB is free. Including non-PyTorch memory, this process has 21.50 GiB memory in use. "
    "Of the allocated memory 17.25 GiB is allocated by PyTorch, and 3.90 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n";
const char kMessageOld[] =
    "RuntimeError: CUDA out of memory. Tried to allocate 700.00 MiB (GPU 3; 10.92 GiB total capacity; 9.80 GiB "
    "already allocated; 300.00 MiB free; 10.10 GiB reserved in total by PyTorch)\n";

TEST_F(MessageReport, PastedOnStandardInputMatchesTheGoldenTextAndExitsOne) {
  const std::string input = Path("paste.txt");
  std::ofstream(input) << kMessage22;
  const CliResult r = Run({"report", "-"}, input);
  EXPECT_EQ(r.code, 1) << "a report of an OOM exits 1; " << r.err;
  EXPECT_NE(r.out.find("cause: fragmentation"), std::string::npos) << r.out;
  ExpectGolden("report-message.txt", r.out);
}

TEST_F(MessageReport, MessagesInALogAsJsonOneDeviceEachAndPickedByDevice) {
  std::string log;
  for (int i = 0; i < 2000; ++i) log += "INFO step " + std::to_string(i) + " loss 0.42\n";
  log += kMessageOld;
  for (int i = 0; i < 2000; ++i) log += "INFO retry " + std::to_string(i) + "\n";
  log += kMessage22;
  std::ofstream(Path("train.log")) << log;
  const CliResult r = Run({"report", Path("train.log"), "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "OOM error message");
  EXPECT_EQ(j["kind"], "message");
  EXPECT_EQ(j["events"], 0);
  ASSERT_EQ(j["devices"].size(), 2u);  // GPU 3, then GPU 0
  const auto& gpu3 = j["devices"][0];
  EXPECT_EQ(gpu3["device"], 3);
  EXPECT_EQ(gpu3["kind"], "message");
  EXPECT_EQ(gpu3["name"], "GPU 3");
  ASSERT_EQ(gpu3["ooms"].size(), 1u);
  const auto& oom = gpu3["ooms"][0];
  EXPECT_EQ(oom["line"], 2001);
  EXPECT_EQ(oom["request"], 700ull << 20);
  EXPECT_EQ(oom["reserved"], static_cast<std::uint64_t>(10.10L * (1ull << 30) + 0.5L));
  EXPECT_EQ(oom["cause"], "capacity");  // F + U = 300 MiB + 307.2 MiB < R = 700 MiB
  EXPECT_FALSE(oom["arithmetic"].empty());
  EXPECT_FALSE(oom["explanation"].get<std::string>().empty());
  const auto& gpu0 = j["devices"][1]["ooms"][0];
  EXPECT_EQ(gpu0["cause"], "fragmentation");
  EXPECT_EQ(gpu0["wording"], "pytorch-caching");
  EXPECT_TRUE(gpu0.contains("process_total"));
  EXPECT_FALSE(gpu0.contains("rounded")) << "nothing the message does not give";
  // --device picks one; a device no message names is a usage error.
  const auto only = nlohmann::json::parse(Run({"report", Path("train.log"), "--json", "--device", "0"}).out);
  EXPECT_EQ(only["devices"].size(), 1u);
  const CliResult none = Run({"report", Path("train.log"), "--device", "5"});
  EXPECT_EQ(none.code, 2);
}

TEST_F(MessageReport, HostileNumbersAreUnknownWithAWarning) {
  std::ofstream(Path("huge.log")) << "CUDA out of memory. Tried to allocate 99999999999 GiB (GPU 0; 11.17 GiB total "
                                     "capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)\n";
  const CliResult r = Run({"report", Path("huge.log"), "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["devices"][0]["ooms"][0]["cause"], "unknown");
  EXPECT_FALSE(j["devices"][0]["ooms"][0].contains("request"));
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_NE(j["warnings"][0].get<std::string>().find("4 EiB"), std::string::npos);
}

// TensorFlow's "ran out of memory … this is not a failure" warnings alone: no OOM, exit 0, said in
// plain words; beside real failures, the failures are reported and the warnings named as no errors.
TEST_F(MessageReport, TensorflowNotAFailureWarningsAreNoFailure) {
  const std::string warning =
      "2021-03-01 10:00:00.000001: W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran "
      "out of memory trying to allocate 1.50GiB with freed_by_count=0. The caller indicates that this is not a "
      "failure, but may mean that there could be performance gains if more memory were available.\n";
  std::ofstream(Path("warnings.log")) << "Epoch 1/10\n" << warning << warning;
  const CliResult text = Run({"report", Path("warnings.log")});
  EXPECT_EQ(text.code, 0) << "no OOM: " << text.err;
  EXPECT_EQ(text.err, "");
  EXPECT_NE(text.out.find("no failure: TensorFlow reported no out-of-memory error. TensorFlow's GPU_0_bfc warned 2 "
                          "times that it \"ran out of memory trying to allocate\" (1.50GiB at line 2, 1.50GiB at line 3)"),
            std::string::npos)
      << text.out;
  const CliResult json = Run({"report", Path("warnings.log"), "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["kind"], "message");
  EXPECT_TRUE(j["devices"].empty());
  ASSERT_EQ(j["not_failures"].size(), 2u);
  EXPECT_EQ(j["not_failures"][0]["line"], 2);
  EXPECT_EQ(j["not_failures"][0]["request"], 1610612736u);

  std::ofstream(Path("mixed.log")) << warning
                                   << "2021-03-01 10:00:01.000000: E tensorflow/stream_executor/cuda/cuda_driver.cc:936] "
                                      "failed to allocate 3.00G (3221225472 bytes) from device: "
                                      "CUDA_ERROR_OUT_OF_MEMORY: out of memory\n";
  const CliResult mixed = Run({"report", Path("mixed.log"), "--json"});
  ASSERT_EQ(mixed.code, 1) << mixed.err;
  const auto m = nlohmann::json::parse(mixed.out);
  ASSERT_EQ(m["devices"].size(), 1u);
  EXPECT_EQ(m["devices"][0]["ooms"][0]["wording"], "tf-device-alloc");
  EXPECT_EQ(m["not_failures"].size(), 1u);
  EXPECT_NE(Run({"report", Path("mixed.log")}).out.find("these warnings are no errors"), std::string::npos);
}

// One failure printed three times (the exception, a wrapper's re-raise, a logger) is one entry that
// says so; a failure on another device stays its own.
TEST_F(MessageReport, OneFailurePrintedSeveralTimesIsOneEntryWithItsCount) {
  std::string log = kMessage22;
  log += "Traceback (most recent call last):\n  File \"run.py\", line 9, in main\n";
  log += kMessage22;
  log += kMessageOld;
  log += std::string("ERROR step 12: ") + kMessage22;
  std::ofstream(Path("repeats.log")) << log;
  const CliResult json = Run({"report", Path("repeats.log"), "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["devices"].size(), 2u);
  const auto& gpu0 = j["devices"][0]["ooms"];
  ASSERT_EQ(gpu0.size(), 1u);
  EXPECT_EQ(gpu0[0]["printed"], 3);
  EXPECT_EQ(gpu0[0]["repeat_lines"], nlohmann::json({4, 6}));
  EXPECT_EQ(gpu0[0]["cause"], "fragmentation");
  const auto& gpu3 = j["devices"][1]["ooms"];
  ASSERT_EQ(gpu3.size(), 1u);
  EXPECT_EQ(gpu3[0]["printed"], 1);
  EXPECT_FALSE(gpu3[0].contains("repeat_lines"));
  const CliResult text = Run({"report", Path("repeats.log")});
  EXPECT_NE(text.out.find("(OOM error message, 2 messages)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  printed 3 times (lines 1, 4 and 6): one failure, reported again\n"), std::string::npos)
      << text.out;
}

// A log saved by Windows PowerShell (UTF-16LE with a byte-order mark) reads as its UTF-8 text;
// bytes that are no UTF-16 are an error naming the file and the byte.
TEST_F(MessageReport, AUtf16LogIsReadAndBadUtf16IsAnError) {
  std::string utf16 = "\xFF\xFE";
  for (char c : std::string(kMessageOld)) {
    utf16 += c;
    utf16 += '\0';
  }
  std::ofstream(Path("powershell.log"), std::ios::binary) << utf16;
  const CliResult r = Run({"report", Path("powershell.log"), "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["devices"][0]["ooms"][0]["request"], 700ull << 20);
  EXPECT_EQ(j["devices"][0]["ooms"][0]["cause"], "capacity");
  std::ofstream(Path("cut.log"), std::ios::binary) << utf16 << 'x';
  const CliResult bad = Run({"report", Path("cut.log")});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("cut.log: at byte " + std::to_string(utf16.size()) + ": UTF-16LE text with an odd number of "
                         "bytes"), std::string::npos)
      << bad.err;
}

// PaddlePaddle's message in its own terms; the total it does not print is derived, never a key.
TEST_F(MessageReport, PaddleMessageInItsOwnTerms) {
  std::ofstream(Path("paddle.log"))
      << "Out of memory error on GPU 2. Cannot allocate 56.000000MB memory on GPU 2, 7.750000GB memory has been "
         "allocated and available memory is only 12.750000MB.\n";
  const CliResult text = Run({"report", Path("paddle.log")});
  ASSERT_EQ(text.code, 1) << text.err;
  EXPECT_NE(text.out.find("message 1 at line 1: PaddlePaddle on GPU 2 (paddle-gpu)"), std::string::npos) << text.out;
  const auto j = nlohmann::json::parse(Run({"report", Path("paddle.log"), "--json"}).out);
  const auto& oom = j["devices"][0]["ooms"][0];
  EXPECT_EQ(j["devices"][0]["device"], 2);
  EXPECT_EQ(oom["framework"], "paddle");
  EXPECT_EQ(oom["request"], 56ull << 20);
  EXPECT_EQ(oom["free"], static_cast<std::uint64_t>(12.75 * (1 << 20)));
  EXPECT_FALSE(oom.contains("total")) << "Paddle prints no total";
  EXPECT_FALSE(oom.contains("limit"));
  EXPECT_EQ(oom["cause"], "unknown");
}

// JAX on GPU: the BFC allocator's warning line (no dump after it) and then PJRT's error. The error is
// JAX's and says as much as the line: read as JAX's message, with JAX's settings in the advice.
TEST_F(MessageReport, JaxsErrorAfterAnAllocatorLineIsReadAsJaxs) {
  std::ofstream(Path("jax.log"))
      << "2024-05-02 11:02:33.512801: W external/xla/xla/tsl/framework/bfc_allocator.cc:291] Allocator (GPU_0_bfc) "
         "ran out of memory trying to allocate 3.00GiB (rounded to 3221225472)requested by op \n"
         "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 3.00GiB "
         "(3221225472B) on device ordinal 1\n";
  const CliResult r = Run({"report", Path("jax.log"), "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "TensorFlow BFC log") << "the reader that recognized the file";
  EXPECT_EQ(j["kind"], "message");
  ASSERT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["devices"][0]["device"], 1);
  const auto& oom = j["devices"][0]["ooms"][0];
  EXPECT_EQ(oom["framework"], "jax");
  EXPECT_EQ(oom["wording"], "xla-request");
  EXPECT_EQ(oom["request"], 3ull << 30);
  EXPECT_EQ(oom["cause"], "unknown");
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_NE(j["warnings"][0].get<std::string>().find("JAX's out-of-memory error"), std::string::npos) << j["warnings"];
  const CliResult text = Run({"report", Path("jax.log")});
  EXPECT_NE(text.out.find("XLA_PYTHON_CLIENT_MEM_FRACTION"), std::string::npos) << text.out;
  for (const char* tensorflow : {"Stats block", "tf.keras", "RunOptions", "TensorFlow prints"}) {
    EXPECT_EQ(text.out.find(tensorflow), std::string::npos) << tensorflow << " in:\n" << text.out;
  }
}

TEST_F(MessageReport, EveryCorpusFileReportsOneDevice) {
  const fs::path corpus = fs::path(FRAGSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "oom_messages";
  if (!fs::is_directory(corpus)) GTEST_SKIP() << "shared data not found: " << corpus;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (entry.path().extension() != ".log") continue;
    ++files;
    const CliResult r = Run({"report", entry.path().string(), "--json"});
    EXPECT_EQ(r.code, 1) << entry.path() << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << entry.path();
    EXPECT_EQ(j["devices"].size(), 1u) << entry.path();
  }
  EXPECT_EQ(files, 66);
}

}  // namespace
