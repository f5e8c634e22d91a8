// The diagnosis of out-of-memory messages (analysis::DiagnoseMessage): the cause of every message
// of ../shared/data/oom_messages against the conclusion SOURCES.md draws from the numbers alone
// (skipped when the corpus is absent), and each rule on synthetic messages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "fragscope/analysis/message_diagnosis.hpp"
#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "support/message_lines.hpp"
#include "support/shell.hpp"

namespace fragscope::analysis {
namespace {

using traces::OomCause;

const std::string kDataDir = FRAGSCOPE_SOURCE_DIR "/../shared/data/oom_messages/";

// The whole file (support/shell.hpp).
std::string ReadText(const std::string& path) { return fragscope::testing::Slurp(path); }


using fragscope::testing::PrintsANegativeFigure;
using fragscope::testing::DiagnoseText;
using fragscope::testing::Mentions;

enum Flag : unsigned {
  kNone = 0,
  kInconsistent = 1,    // SOURCES: "inconsistent" / "fits in free"
  kWddm = 2,            // SOURCES: "WDDM spill"
  kOutside = 4,         // SOURCES: another process / non-PyTorch memory named beside the cause
  kHost = 8,            // SOURCES: pinned host memory
};

struct Expected {
  const char* nn;
  OomCause cause;
  unsigned flags;
  const char* sources;  // SOURCES.md's conclusion, shortened
};

using C = OomCause;
// SOURCES.md's "Conclusion from the numbers alone", in fragscope's vocabulary: "another process /
// non-PyTorch memory" as the conclusion is backing; "capacity (a single request larger than the
// card / an impossible request)" is request-too-large, fragscope's name for that case of capacity;
// "X by the rule, but in practice Y" is X (the rule), with Y as a note.
const Expected kExpected[] = {
    {"01", C::kUnknown, kNone, "unknown (no sizes)"},
    {"02", C::kUnknown, kNone, "unknown; not capacity"},
    {"04", C::kFragmentation, kNone, "fragmentation by the rule, in practice capacity (97.6 % allocated)"},
    {"05", C::kFragmentation, kNone, "fragmentation (plus ~1 GiB non-PyTorch)"},
    {"07", C::kUnknown, kInconsistent, "unknown (the request fits in reported free)"},
    {"08", C::kFragmentation, kOutside, "fragmentation and another process / non-PyTorch 5.73 GiB"},
    {"10", C::kCapacity, kNone, "capacity"},
    {"11", C::kBacking, kOutside, "another process: 10.64 GiB"},
    {"13", C::kFragmentation, kNone, "fragmentation by the rule, in practice capacity"},
    {"14", C::kCapacity, kNone, "capacity"},
    {"16", C::kRequestTooLarge, kWddm, "capacity (a single request larger than the whole card; WDDM)"},
    {"17", C::kBacking, kOutside, "another process: 12.24 GiB; capacity vs fragmentation inconclusive"},
    {"19", C::kRequestTooLarge, kNone, "capacity (an impossible request)"},
    {"20", C::kFragmentation, kNone, "fragmentation"},
    {"22", C::kBacking, kOutside, "another process: 16.08 GiB"},
    {"23", C::kFragmentation, kNone, "fragmentation"},
    {"25", C::kUnknown, kInconsistent, "unknown (inconsistent: the request fits in free)"},
    {"26", C::kRequestTooLarge, kNone, "capacity (R > T)"},
    {"28", C::kUnknown, kInconsistent, "unknown (inconsistent)"},
    {"29", C::kRequestTooLarge, kWddm, "capacity (A > T shows WDDM spill)"},
    {"31", C::kBacking, kOutside, "another process: 15 sibling workers; fragmentation too by the rule"},
    {"32", C::kCapacity, kNone, "capacity (Process 2417585 = this process through a container PID)"},
    {"34", C::kUnknown, kInconsistent | kWddm, "inconsistent (WDDM spill)"},
    {"35", C::kUnknown, kInconsistent | kOutside, "another process 65 %; by the numbers unknown"},
    {"37", C::kFragmentation, kNone, "fragmentation (near capacity)"},
    {"38", C::kFragmentation, kOutside, "fragmentation, plus 6.95 GiB non-PyTorch memory in the process"},
    {"40", C::kRequestTooLarge, kNone, "capacity (R > T)"},
    {"41", C::kCapacity, kOutside, "capacity for what was left; 81.59 GiB held outside"},
    {"43", C::kBacking, kOutside, "another process or async-pool cache: 16.80 GiB"},
    {"44", C::kBacking, kOutside, "non-PyTorch memory / pool cache (3.80 GiB)"},
    {"46", C::kBacking, kOutside, "watermark capacity driven by non-PyTorch Metal memory (64 %)"},
    {"47", C::kCapacity, kNone, "capacity"},
    {"49", C::kBacking, kOutside, "non-PyTorch memory large (76 % of the limit)"},
    {"50", C::kCapacity, kNone, "capacity"},
    {"52", C::kUnknown, kNone, "unknown; not capacity"},
    {"53", C::kUnknown, kInconsistent, "unknown (inconsistent: fits in free)"},
    {"55", C::kRequestTooLarge, kNone, "capacity (R > T)"},
    {"56", C::kUnknown, kNone, "unknown; not capacity"},
    {"58", C::kRequestTooLarge, kNone, "capacity of what HIP reports (R > T)"},
    {"59", C::kUnknown, kInconsistent, "unknown (inconsistent: fits in free)"},
    {"61", C::kCapacity, kNone, "capacity of the allowed fraction"},
    {"62", C::kUnknown, kInconsistent, "unknown (nothing explains an OOM)"},
    {"64", C::kCapacity, kNone, "capacity: the executable needs 14.44 GiB"},
    {"65", C::kUnknown, kNone, "unknown / other holder: a 12 MiB program"},
    {"67", C::kRequestTooLarge, kNone, "capacity (an impossible 4 TiB request)"},
    {"68", C::kUnknown, kNone, "unknown"},
    {"70", C::kUnknown, kNone, "unknown"},
    {"71", C::kUnknown, kNone, "unknown"},
    {"73", C::kCapacity, kNone, "capacity (1.42x per-core HBM)"},
    {"74", C::kCapacity, kNone, "capacity (2.07x HBM)"},
    {"76", C::kUnknown, kNone, "unknown (no pool stats)"},
    {"77", C::kUnknown, kNone, "unknown"},
    {"79", C::kUnknown, kNone, "unknown"},
    {"80", C::kUnknown, kNone, "unknown"},
    {"82", C::kUnknown, kInconsistent, "unknown (inconsistent: TF's up-front reservation fits)"},
    {"83", C::kUnknown, kNone, "unknown"},
    {"85", C::kUnknown, kNone, "unknown"},
    {"86", C::kBacking, kHost, "not GPU memory: pinned host memory exhausted"},
    {"88", C::kUnknown, kNone, "unknown"},
    {"89", C::kUnknown, kNone, "unknown"},
    {"91", C::kUnknown, kNone, "unknown"},
    {"92", C::kUnknown, kNone, "unknown"},
    {"94", C::kUnknown, kNone, "unknown"},
    {"95", C::kUnknown, kNone, "unknown"},
    {"97", C::kUnknown, kNone, "unknown"},
    {"98", C::kUnknown, kNone, "unknown"},
};

std::string CorpusFile(const std::string& nn) {
  for (const auto& entry : std::filesystem::directory_iterator(kDataDir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(nn + "_", 0) == 0 && entry.path().extension() == ".log") return entry.path().string();
  }
  return "";
}

TEST(MessageDiagnosisCorpus, EveryCauseAsSourcesConcludes) {
  if (!std::filesystem::is_directory(kDataDir)) {
    GTEST_SKIP() << "shared data not found: " << kDataDir
                 << " (the OOM message corpus lives in ../shared/data next to the project)";
  }
  std::map<std::string, int> counts;
  int agree = 0;
  for (const Expected& e : kExpected) {
    const std::string path = CorpusFile(e.nn);
    ASSERT_FALSE(path.empty()) << e.nn;
    SCOPED_TRACE(path + " — SOURCES.md: " + e.sources);
    const MessageDiagnosis d = DiagnoseText(ReadText(path));
    ++counts[std::string(traces::ToString(d.cause))];
    EXPECT_EQ(d.cause, e.cause) << traces::ToString(d.cause) << ": " << d.explanation;
    EXPECT_FALSE(d.explanation.empty());
    EXPECT_FALSE(PrintsANegativeFigure(d)) << "a negative figure printed";
    EXPECT_EQ(d.inconsistent, (e.flags & kInconsistent) != 0);
    EXPECT_EQ(d.wddm_spill, (e.flags & kWddm) != 0);
    EXPECT_EQ(d.host_memory, (e.flags & kHost) != 0);
    if (e.flags & kOutside) {
      // The memory held outside is shown: in the cause, a note or the advice.
      EXPECT_TRUE(d.cause == OomCause::kBacking || Mentions(d.notes, "outside") || Mentions(d.notes, "neither free") ||
                  Mentions(d.notes, "held outside") || Mentions(d.advice, "not PyTorch's"))
          << d.explanation;
    }
    if (d.cause != OomCause::kUnknown || d.inconsistent) {
      EXPECT_FALSE(d.arithmetic.empty());
    }
    agree += d.cause == e.cause;
  }
  EXPECT_EQ(agree, static_cast<int>(std::size(kExpected)));
  // The totals docs/importers.md states.
  EXPECT_EQ(counts["unknown"], 31);
  EXPECT_EQ(counts["capacity"], 10);
  EXPECT_EQ(counts["backing"], 9);
  EXPECT_EQ(counts["fragmentation"], 8);
  EXPECT_EQ(counts["request-too-large"], 8);
}

TEST(MessageDiagnosisCorpus, ArithmeticAndAdviceInTheFrameworksTerms) {
  if (!std::filesystem::is_directory(kDataDir)) GTEST_SKIP() << "shared data not found: " << kDataDir;
  {  // 20: fragmentation, hint era: max_split_size_mb, with the numbers.
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("20")));
    EXPECT_TRUE(Mentions(d.arithmetic, "U = Rv − A = 39.59 GiB − 23.76 GiB = 15.83 GiB"));
    EXPECT_TRUE(Mentions(d.arithmetic, "F + U = 6.30 GiB + 15.83 GiB = 22.13 GiB ≥ R = 16.00 GiB"));
    EXPECT_TRUE(Mentions(d.advice, "max_split_size_mb"));
    ASSERT_FALSE(d.fragscope_advice.empty());
    EXPECT_EQ(d.fragscope_advice[0].rfind("with fragscope's allocator: ", 0), 0u);
  }
  {  // 16: A > T (Windows): T − F − Rv is below 0, said in words (no negative size is printed), and
     // "outside" is no number (not a 0).
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("16")));
    EXPECT_TRUE(Mentions(d.arithmetic, "< 0: PyTorch's reservation is 11.15 GiB more than the device's total less "
                                       "its free memory"));
    EXPECT_FALSE(Mentions(d.arithmetic, "−11.15"));
    EXPECT_EQ(d.outside, std::nullopt);
    for (const MessageNumber& n : d.numbers) EXPECT_NE(n.symbol, "outside");
  }
  {  // 55: request-too-large, and 2.58 GiB outside PyTorch (22 % of T) is still noted.
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("55")));
    EXPECT_EQ(d.cause, C::kRequestTooLarge);
    EXPECT_TRUE(Mentions(d.notes, "2.58 GiB of the device (22 %) is neither free nor PyTorch's"));
  }
  {  // 61: capacity under a memory fraction, with 10.28 GiB outside (over 1 GiB): noted.
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("61")));
    EXPECT_TRUE(Mentions(d.notes, "10.28 GiB of the device"));
  }
  {  // U in the message's own words: 2.1's "reserved by PyTorch but unallocated" (26), the old "cached" (04).
    const auto label_of_u = [](const MessageDiagnosis& d) {
      for (const MessageNumber& n : d.numbers) if (n.symbol == "U") return n.name;
      return std::string();
    };
    EXPECT_EQ(label_of_u(DiagnoseText(ReadText(CorpusFile("26")))), "reserved but unallocated");
    EXPECT_EQ(label_of_u(DiagnoseText(ReadText(CorpusFile("04")))), "cached (reserved but unallocated)");
  }
  {  // 46 (MPS): M + O + R exceeds W by less than the three figures' roundings together: "≈".
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("46")));
    EXPECT_TRUE(Mentions(d.arithmetic, "= 27.21 GiB ≈ W = 27.20 GiB"));
    EXPECT_EQ(d.cause, C::kBacking);
  }
  {  // 37: ≥ 2.2: expandable_segments.
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("37")));
    EXPECT_TRUE(Mentions(d.advice, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
  }
  {  // 31: the PIDs of the other processes.
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("31")));
    EXPECT_TRUE(Mentions(d.advice, "101553 (1.19 GiB)"));
    EXPECT_TRUE(Mentions(d.arithmetic, "O = 17.85 GiB in 15 other processes"));
  }
  {  // 32: the one listed process is this one (a container's PID).
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("32")));
    EXPECT_TRUE(Mentions(d.notes, "Process 2417585"));
    EXPECT_TRUE(Mentions(d.advice, "a smaller batch: at most about"));
  }
  {  // 61: the allowed fraction, in PyTorch's words.
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("61")));
    EXPECT_TRUE(Mentions(d.advice, "set_per_process_memory_fraction"));
  }
  {  // 49: the printed limit shows the watermark hint was not in effect.
    const MessageDiagnosis d = DiagnoseText(ReadText(CorpusFile("49")));
    EXPECT_TRUE(Mentions(d.notes, "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 was not in effect"));
  }
  {  // JAX and TensorFlow advice.
    EXPECT_TRUE(Mentions(DiagnoseText(ReadText(CorpusFile("70"))).advice, "XLA_PYTHON_CLIENT_PREALLOCATE=false"));
    EXPECT_TRUE(Mentions(DiagnoseText(ReadText(CorpusFile("70"))).advice, "XLA_PYTHON_CLIENT_ALLOCATOR=platform"));
    EXPECT_TRUE(Mentions(DiagnoseText(ReadText(CorpusFile("82"))).advice, "set_memory_growth"));
    EXPECT_TRUE(Mentions(DiagnoseText(ReadText(CorpusFile("82"))).advice, "memory_limit"));
    EXPECT_TRUE(Mentions(DiagnoseText(ReadText(CorpusFile("86"))).advice, "TF_CUDA_HOST_MEM_LIMIT_IN_MB"));
    const MessageDiagnosis tensor = DiagnoseText(ReadText(CorpusFile("76")));
    EXPECT_TRUE(Mentions(tensor.arithmetic, "25088 × 4096 elements × 4 B (float) = 411041792 bytes"));
    EXPECT_FALSE(Mentions(tensor.advice, "report_tensor_allocations_upon_oom"));  // the message already says it
  }
}

// ---- the rules on synthetic messages ---------------------------------------------------------

std::string New(const std::string& r, const std::string& t, const std::string& f, const std::string& a,
                const std::string& u, const std::string& extra = "") {
  return "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " + r + ". GPU 0 has a total capacity of " + t +
         " of which " + f + " is free. " + extra + "Of the allocated memory " + a +
         " is allocated by PyTorch, and " + u + " is reserved by PyTorch but unallocated.";
}

TEST(MessageDiagnosisRules, PytorchCachingOrder) {
  EXPECT_EQ(DiagnoseText(New("20.00 GiB", "16.00 GiB", "8.00 GiB", "1.00 GiB", "0 bytes")).cause, C::kRequestTooLarge);
  // A request a few percent over the device reads as such, not as "1.0×".
  EXPECT_TRUE(Mentions(DiagnoseText(New("16.80 GiB", "16.00 GiB", "8.00 GiB", "1.00 GiB", "0 bytes")).arithmetic,
                       "the request alone is 1.05× the device"));
  EXPECT_EQ(DiagnoseText(New("100.00 MiB", "16.00 GiB", "50.00 MiB", "14.00 GiB", "60.00 MiB")).cause, C::kFragmentation);
  EXPECT_EQ(DiagnoseText(New("100.00 MiB", "16.00 GiB", "50.00 MiB", "15.80 GiB", "20.00 MiB")).cause, C::kCapacity);
  EXPECT_TRUE(DiagnoseText(New("100.00 MiB", "16.00 GiB", "150.00 MiB", "15.00 GiB", "0 bytes")).inconsistent);
  // 8 GiB held by others on a 16 GiB card: backing, whatever the rest says.
  EXPECT_EQ(DiagnoseText(New("100.00 MiB", "16.00 GiB", "50.00 MiB", "7.80 GiB", "20.00 MiB")).cause, C::kBacking);
  // A margin inside the printed rounding decides nothing: R = F + U within 0.005 GiB.
  const MessageDiagnosis close = DiagnoseText(New("1.50 GiB", "16.00 GiB", "1.00 GiB", "14.00 GiB", "512.00 MiB"));
  EXPECT_EQ(close.cause, C::kUnknown);
  EXPECT_NE(close.explanation.find("rounding"), std::string::npos);
  // A memory fraction.
  EXPECT_EQ(DiagnoseText(New("2.00 MiB", "80.00 GiB", "70.00 GiB", "1.00 GiB", "0 bytes", "1.00 GiB allowed; ")).cause,
            C::kCapacity);
}

TEST(MessageDiagnosisRules, SegmentSize) {
  EXPECT_EQ(PytorchSegmentSize(512), 2u << 20);
  EXPECT_EQ(PytorchSegmentSize(1u << 20), 2u << 20);
  EXPECT_EQ(PytorchSegmentSize((1u << 20) + 1), 20u << 20);
  EXPECT_EQ(PytorchSegmentSize((10u << 20) - 1), 20u << 20);
  EXPECT_EQ(PytorchSegmentSize(10u << 20), 10u << 20);
  EXPECT_EQ(PytorchSegmentSize((10u << 20) + 1), 12u << 20);
  EXPECT_EQ(PytorchSegmentSize(traces::kMaxBytes), traces::kMaxBytes);
}

TEST(MessageDiagnosisRules, HostileNumbersAreUnknownNeverACrash) {
  const MessageDiagnosis huge = DiagnoseText(
      "RuntimeError: CUDA out of memory. Tried to allocate 99999999999 GiB (GPU 0; 11.17 GiB total capacity; "
      "10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)");
  EXPECT_EQ(huge.cause, C::kUnknown);
  EXPECT_NE(huge.explanation.find("4 EiB"), std::string::npos) << huge.explanation;
  // The largest representable sizes everywhere: arithmetic in range, no crash.
  const MessageDiagnosis big = DiagnoseText(New("4.00 EiB", "4.00 EiB", "4.00 EiB", "4.00 EiB", "4.00 EiB",
                                                "Process 1 has 4.00 EiB memory in use. "));
  EXPECT_FALSE(big.explanation.empty());
  for (const char* text : {"CUDA out of memory. Tried to allocate", "MPS backend out of memory (MPS allocated: 1 GiB",
                           "Allocation on device 0 would exceed allowed memory.", "Ran out of memory in memory space hbm.",
                           "OOM when allocating tensor with shape[] and type quux",
                           "failed to allocate 0 bytes (0 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"}) {
    const auto messages = traces::FindOomMessages(text);
    ASSERT_EQ(messages.size(), 1u) << text;
    const MessageDiagnosis d = DiagnoseMessage(messages[0]);
    EXPECT_FALSE(d.explanation.empty()) << text;
  }
}

}  // namespace
}  // namespace fragscope::analysis
