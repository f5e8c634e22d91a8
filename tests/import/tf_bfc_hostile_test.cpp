// The TensorFlow BFC log reader on hostile numbers (issue 13): every size it takes is checked where
// it is parsed; what would make the state meaningless is an error naming the line, what can be left
// out a warning naming the line.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"
#include "traces/trace_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::Count;
using testing::Counts;
using testing::FindOom;
using testing::HasWarning;

// Hostile numbers (issue 13): every size the reader takes is checked where it is parsed. A small
// TF 2.x dump, every line numbered, that reads without a warning; each test changes one line.
//   capacity: in use 1536 + the 1024-byte request > the 2048-byte limit.
std::vector<std::string> HostileBase() {
  return {
      /* 1 */ "2021-03-15 17:16:57.000001: W bfc_allocator.cc:456] Allocator (GPU_0_bfc) ran out of memory "
              "trying to allocate 1.00KiB (rounded to 1024)requested by op MatMul",
      /* 2 */ "I bfc_allocator.cc:998] Bin (512): \tTotal Chunks: 3, Chunks in use: 2. 2.00KiB allocated for "
              "chunks. 1.50KiB in use in bin. 1.50KiB client-requested in use in bin.",
      /* 3 */ "I bfc_allocator.cc:1011] Next region of size 2048",
      /* 4 */ "I bfc_allocator.cc:1031] InUse at 0x7f0000000000 of size 768 next 1",
      /* 5 */ "I bfc_allocator.cc:1031] Free  at 0x7f0000000300 of size 512 next 2",
      /* 6 */ "I bfc_allocator.cc:1031] InUse at 0x7f0000000500 of size 768 next 3",
      /* 7 */ "I bfc_allocator.cc:1046] total_region_allocated_bytes_: 2048 memory_limit_: 2048 available bytes: 0",
      /* 8 */ "I bfc_allocator.cc:1052] Stats: ",
      /* 9 */ "Limit:                        2048",
      /* 10 */ "InUse:                        1536",
      /* 11 */ "MaxInUse:                     1536",
      /* 12 */ "NumAllocs:                       2",
      /* 13 */ "MaxAllocSize:                  768",
      /* 14 */ "Reserved:                     2048",
      /* 15 */ "PeakReserved:                 2048",
      /* 16 */ "LargestFreeBlock:              512",
      /* 17 */ "W bfc_allocator.cc:467] ***************************************************************************_________________________",
      /* 18 */ "W op_kernel.cc:1763] OP_REQUIRES failed : Resource exhausted: OOM when allocating tensor with "
               "shape[256] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
  };
}

// The base with line `line` (1-based) replaced by `text`.
std::string Hostile(std::size_t line, const std::string& text) {
  std::vector<std::string> lines = HostileBase();
  if (line > 0) lines.at(line - 1) = text;
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

std::string JoinWarnings(const std::vector<std::string>& warnings) {
  std::string out;
  for (const std::string& w : warnings) out += w + "\n";
  return out;
}

// Every event a trace holds can be replayed (the check every reader makes, event.hpp).
void ExpectEventsRepresentable(const Trace& t) {
  for (const Event& e : t.events) EXPECT_EQ(EventSizeProblem(e), nullptr) << e.size << " at " << e.address;
}

TEST(TfBfcLogHostile, TheBaseReadsCleanly) {
  const auto dumps = ParseTfBfcLog(Hostile(0, ""), "h.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  EXPECT_TRUE(d.warnings.empty()) << JoinWarnings(d.warnings);
  EXPECT_EQ(d.reserved, 2048u);
  EXPECT_EQ(d.in_use, 1536u);
  EXPECT_EQ(d.limit, 2048u);
  EXPECT_EQ(d.request, 1024u);
  EXPECT_TRUE(d.request_exact);
  EXPECT_EQ(d.cause, OomCause::kCapacity);
  EXPECT_NO_THROW(ParseTfBfcLogToTrace(Hostile(0, ""), "h.log"));
}

struct HostileCase {
  std::size_t line;
  std::string text;
  std::string error;  // what the error says after "line N: "
};

// Sizes of 2^63..2^64, 4 EiB + 1, 2^64 and more, negative sizes and pointers of more than 64 bits
// where the state is built from them (chunks, regions, Stats, the region totals): an error that
// names the file and the line, never a size that ends in replay, never a line dropped silently.
TEST(TfBfcLogHostile, ImpossibleSizesOfTheStateAreErrorsNamingTheLine) {
  const std::vector<HostileCase> cases = {
      {3, "I] Next region of size 9223372036854775808",
       "region size (\"Next region of size\"): 9223372036854775808 bytes is more than 4 EiB "
       "(4611686018427387904 bytes), the largest size fragscope represents"},
      // Item 3: the chunks of a region of 2^64-1 bytes were dropped silently.
      {3, "I] Next region of size 18446744073709551615",
       "region size (\"Next region of size\"): 18446744073709551615 bytes is more than 4 EiB"},
      {3, "I] Next region of size 18446744073709551616",
       "region size (\"Next region of size\"): 18446744073709551616 does not fit in 64 bits"},
      {3, "I] Next region of size -2048", "region size (\"Next region of size\"): -2048 is negative, not a size"},
      {4, "I] InUse at 0x7f0000000000 of size 9223372036854775808 next 1",
       "the size of the chunk at 0x7f0000000000: 9223372036854775808 bytes is more than 4 EiB"},
      {4, "I] InUse at 0x7f0000000000 of size 4611686018427387905 next 1",
       "the size of the chunk at 0x7f0000000000: 4611686018427387905 bytes is more than 4 EiB"},
      {5, "I] Free  at 0x7f0000000300 of size 99999999999999999999 next 2",
       "the size of the chunk at 0x7f0000000300: 99999999999999999999 does not fit in 64 bits"},
      {6, "I] InUse at 0x7f0000000500 of size -768 next 3",
       "the size of the chunk at 0x7f0000000500: -768 is negative, not a size"},
      // Item 2: a pointer of 19 hex digits was dropped silently.
      {4, "I] InUse at 0x1234567890123456789 of size 768 next 1",
       "chunk address 0x1234567890123456789 does not fit in 64 bits"},
      {6, "I] InUse at FFFFFFFFFFFFFF00 of size 768 next 3",
       "the chunk at FFFFFFFFFFFFFF00 of 768 bytes runs past the end of the 64-bit address space"},
      {7, "I] total_region_allocated_bytes_: 9223372036854775808 memory_limit_: 2048",
       "total_region_allocated_bytes_: 9223372036854775808 bytes is more than 4 EiB"},
      {7, "I] total_region_allocated_bytes_: 2048 memory_limit_: 18446744073709551615",
       "memory_limit_: 18446744073709551615 bytes is more than 4 EiB"},
      // Item 4: "Limit: -5" was accepted or dropped silently.
      {9, "Limit:                        -5", "Stats Limit: -5 is negative, not a size"},
      {9, "Limit:                        9223372036854775808", "Stats Limit: 9223372036854775808 bytes is more than 4 EiB"},
      {10, "InUse:                        18446744073709551615", "Stats InUse: 18446744073709551615 bytes is more than 4 EiB"},
      {11, "MaxInUse:                     -1", "Stats MaxInUse: -1 is negative, not a size"},
      {12, "NumAllocs:                    -2", "Stats NumAllocs: -2 is negative, not a count"},
      {12, "NumAllocs:                    18446744073709551616", "Stats NumAllocs: 18446744073709551616 does not fit in 64 bits"},
      {13, "MaxAllocSize:                 9223372036854775808", "Stats MaxAllocSize: 9223372036854775808 bytes is more than 4 EiB"},
      {14, "Reserved:                     9223372036854775808", "Stats Reserved: 9223372036854775808 bytes is more than 4 EiB"},
      {15, "PeakReserved:                 4611686018427387905", "Stats PeakReserved: 4611686018427387905 bytes is more than 4 EiB"},
      {16, "LargestFreeBlock:             -512", "Stats LargestFreeBlock: -512 is negative, not a size"},
  };
  testing::TempDir dir;
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string text = Hostile(c.line, c.text);
    const auto dumps = ParseTfBfcLog(text, "h.log");
    ASSERT_EQ(dumps.size(), 1u);
    ASSERT_EQ(dumps[0].errors.size(), 1u);
    EXPECT_EQ(dumps[0].errors[0].line, c.line);
    EXPECT_NE(dumps[0].errors[0].message.find(c.error), std::string::npos) << dumps[0].errors[0].message;
    // What the dump keeps never holds the impossible number.
    const Trace kept = TfBfcDumpsToTrace(dumps, "h.log");
    ExpectEventsRepresentable(kept);
    EXPECT_TRUE(HasWarning(kept.warnings, fmt::format("h.log:{}: error: {}", c.line, c.error)));
    // The readers refuse the log, naming the file and the line.
    try {
      ParseTfBfcLogToTrace(text, "h.log");
      ADD_FAILURE() << "no error";
    } catch (const TraceError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("h.log: ", 0), 0u) << what;
      EXPECT_NE(what.find(fmt::format("line {}: {}", c.line, c.error)), std::string::npos) << what;
    }
  }
  // From a file: the path, the byte offset of the line, the line.
  const std::string path = dir.File("limit.log");
  std::ofstream(path) << Hostile(9, "Limit: -5");
  std::size_t offset = 0;
  for (std::size_t i = 0; i < 8; ++i) offset += HostileBase()[i].size() + 1;
  try {
    ReadTfBfcLog(path);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.offset(), offset);
    EXPECT_EQ(std::string(e.what()), fmt::format("{}: at byte {}: line 9: Stats Limit: -5 is negative, not a size",
                                                 path, offset));
  }
}

TEST(TfBfcLogHostile, SumsOfChunksAboveFourEiBAreErrors) {
  // A printed region whose chunks (overlapping, inside its 2^62 bytes) add up to more than 2^62:
  // each chunk is representable, their sum is not.
  {
    const std::string text =
        "Next region of size 4611686018427387904\n"
        "InUse at 0x0 of size 4611686018427387904 next 1\n"
        "InUse at 0x100 of size 4611686018427387648 next 2\n";
    const auto dumps = ParseTfBfcLog(text, "sum.log");
    ASSERT_EQ(dumps.size(), 1u);
    ASSERT_FALSE(dumps[0].errors.empty());
    EXPECT_EQ(dumps[0].errors[0].line, 2u);
    EXPECT_EQ(dumps[0].errors[0].message,
              "the chunks listed for the region at 0x0 (line 1) add up to 9223372036854775552 bytes: more "
              "than 4 EiB (4611686018427387904 bytes), the largest size fragscope represents");
    ExpectEventsRepresentable(TfBfcDumpsToTrace(dumps, "sum.log"));
    EXPECT_THROW(ParseTfBfcLogToTrace(text, "sum.log"), TraceError);
  }
  // A chunk past the printed region is outside it (its own region's line is not in the log): the
  // in-use chunks then add up to 2^63, more than 4 EiB.
  {
    const std::string text =
        "Next region of size 4611686018427387904\n"
        "InUse at 0x0 of size 4611686018427387904 next 1\n"
        "InUse at 0x4000000000000000 of size 4611686018427387904 next 2\n";
    const auto dumps = ParseTfBfcLog(text, "sum.log");
    ASSERT_EQ(dumps.size(), 1u);
    ASSERT_FALSE(dumps[0].errors.empty());
    EXPECT_NE(dumps[0].errors[0].message.find("the in-use chunks (9223372036854775808 bytes) of the dump add up to more "
                                              "than 4 EiB"),
              std::string::npos)
        << dumps[0].errors[0].message;
    ExpectEventsRepresentable(TfBfcDumpsToTrace(dumps, "sum.log"));
    EXPECT_THROW(ParseTfBfcLogToTrace(text, "sum.log"), TraceError);
  }
  // The same chunks without region lines: touching, they form one inferred region of 2^63.
  {
    const std::string text =
        "InUse at 0x0 of size 4611686018427387904 next 1\n"
        "InUse at 0x4000000000000000 of size 4611686018427387904 next 2\n";
    const auto dumps = ParseTfBfcLog(text, "sum.log");
    ASSERT_EQ(dumps.size(), 1u);
    ASSERT_FALSE(dumps[0].errors.empty());
    EXPECT_EQ(dumps[0].errors[0].line, 1u);
    EXPECT_NE(dumps[0].errors[0].message.find("the chunks that touch from the one at 0x0: 9223372036854775808 "
                                              "bytes is more than 4 EiB"),
              std::string::npos)
        << dumps[0].errors[0].message;
    ExpectEventsRepresentable(TfBfcDumpsToTrace(dumps, "sum.log"));
  }
  // Exactly 4 EiB is representable: read, with the right totals.
  {
    const std::string text = "InUse at 0x0 of size 4611686018427387904 next 1\n";
    const Trace t = ParseTfBfcLogToTrace(text, "max.log");
    const auto dumps = ParseTfBfcLog(text, "max.log");
    EXPECT_EQ(dumps[0].in_use, kMaxBytes);
    EXPECT_EQ(dumps[0].reserved, kMaxBytes);
    EXPECT_EQ(Count(t).alloc, 1u);
    ExpectEventsRepresentable(t);
  }
}

TEST(TfBfcLogHostile, PointersOf64BitsWithLeadingZerosAreRead) {
  // 19 digits, 64 bits of value: an address like any other.
  const auto dumps = ParseTfBfcLog(Hostile(4, "I] InUse at 0x00000007f0000000000 of size 768 next 1"), "h.log");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_TRUE(dumps[0].errors.empty());
  EXPECT_TRUE(dumps[0].warnings.empty()) << JoinWarnings(dumps[0].warnings);
  EXPECT_EQ(dumps[0].chunks.front().address, 0x7f0000000000u);
  EXPECT_EQ(dumps[0].in_use, 1536u);
}

// Item 5 and the header: a rounded size or request that is no size is a warning naming the line;
// the rest of the dump stands.
TEST(TfBfcLogHostile, HeaderSizesThatAreNoSizesAreWarnings) {
  {
    const auto dumps = ParseTfBfcLog(
        Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00KiB (rounded to -1024)"),
        "h.log");
    ASSERT_EQ(dumps.size(), 1u);
    const TfBfcDump& d = dumps[0];
    EXPECT_TRUE(d.errors.empty());
    EXPECT_TRUE(HasWarning(d.warnings, "h.log:1: the rounded size (\"rounded to\"): -1024 is negative, not a "
                                       "size: left out (the request rounded up to 256 B stands for it)"))
        << JoinWarnings(d.warnings);
    // The shape line gives the exact request; rounded from it.
    EXPECT_EQ(d.request, 1024u);
    EXPECT_TRUE(d.request_exact);
    EXPECT_EQ(d.rounded, 1024u);
    EXPECT_EQ(d.cause, OomCause::kCapacity);
  }
  {
    const auto dumps = ParseTfBfcLog(
        Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00KiB (rounded to "
                   "99999999999999999999)"),
        "h.log");
    EXPECT_TRUE(HasWarning(dumps[0].warnings, "h.log:1: the rounded size (\"rounded to\"): 99999999999999999999 "
                                              "does not fit in 64 bits: left out"))
        << JoinWarnings(dumps[0].warnings);
    EXPECT_EQ(dumps[0].rounded, 1024u);
  }
  {
    const auto dumps = ParseTfBfcLog(
        Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate -1.00KiB (rounded to 1024)"),
        "h.log");
    const TfBfcDump& d = dumps[0];
    EXPECT_TRUE(HasWarning(d.warnings, "h.log:1: the request after \"trying to allocate\" is -1.00KiB, "
                                       "negative, not a size: the request is unknown"))
        << JoinWarnings(d.warnings);
    EXPECT_EQ(d.request, 1024u);  // from the shape line
    EXPECT_EQ(d.rounded, 1024u);
  }
}

// A request above 4 EiB is what TF prints for a negative or overflowed size: the OOM is kept,
// with a warning, as request-too-large (no device holds it), even where the limit is unknown.
TEST(TfBfcLogHostile, RequestsAboveFourEiBAreRequestTooLarge) {
  {
    // Without the shape line (its 1024 bytes would disagree with the header).
    std::string no_shape = Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate 16.00EiB "
                                      "(rounded to 18446744073709551360)requested by op Fill");
    no_shape.resize(no_shape.find("W op_kernel.cc"));
    const auto d = ParseTfBfcLog(no_shape, "h.log");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_TRUE(d[0].errors.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:1: the request (16.00EiB, which does not fit in 64 bits, rounded to "
                                          "18446744073709551360) is more than 4 EiB"))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].request, 18446744073709551360u);
    EXPECT_EQ(d[0].rounded, 18446744073709551360u);
    EXPECT_EQ(d[0].cause, OomCause::kRequestTooLarge);
    EXPECT_EQ(d[0].in_use, 1536u);
    const Trace t = ParseTfBfcLogToTrace(no_shape, "h.log");
    const Event* oom = FindOom(t);
    ASSERT_NE(oom, nullptr);
    EXPECT_EQ(oom->oom.cause, OomCause::kRequestTooLarge);
    EXPECT_EQ(oom->oom.request, 18446744073709551360u);
    ExpectEventsRepresentable(t);
  }
  {
    // A header only, no limit: still request-too-large.
    const std::string text =
        "E0528 12:00:00.000000 1 bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to "
        "allocate 8.00EiB (rounded to 9223372036854775808).\n";
    const auto d = ParseTfBfcLog(text, "jax.log");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_TRUE(HasWarning(d[0].warnings, "jax.log:1: the request (8.00EiB, rounded to 9223372036854775808) "
                                          "is more than 4 EiB"))
        << JoinWarnings(d[0].warnings);
    EXPECT_TRUE(d[0].cause_known);
    EXPECT_EQ(d[0].cause, OomCause::kRequestTooLarge);
    EXPECT_EQ(d[0].request, 9223372036854775808u);
  }
}

// Item 6: tensor shapes that give no size are warnings naming the line; the header's request stands.
TEST(TfBfcLogHostile, TensorShapesThatGiveNoSizeAreWarnings) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"shape[-1,3] and type float", "the tensor shape [-1,3] of type float: a negative dimension (-1): not "
                                     "taken as the request"},
      {"shape[4294967296,4294967296,2] and type float",
       "the tensor shape [4294967296,4294967296,2] of type float: more than 2^64 bytes: not taken"},
      {"shape[4611686018427387904] and type float",
       "the tensor shape [4611686018427387904] of type float: more than 2^64 bytes: not taken"},
      {"shape[1152921504606846977] and type float",
       "the tensor shape [1152921504606846977] of type float: 4611686018427387908 bytes is more than 4 EiB"},
      {"shape[99999999999999999999,1] and type half",
       "the tensor shape [99999999999999999999,1] of type half: a dimension of more than 64 bits "
       "(99999999999999999999): not taken"},
      {"shape[256,?] and type float", "the tensor shape [256,?] of type float: a dimension that is not a number"},
      {"shape[256] and type int4", "the tensor shape [256] of type int4: no known element size for the type"},
  };
  for (const auto& [shape, warning] : cases) {
    SCOPED_TRACE(shape);
    const auto dumps = ParseTfBfcLog(
        Hostile(18, "W] OP_REQUIRES failed : Resource exhausted: OOM when allocating tensor with " + shape +
                        " on /job:localhost/replica:0/task:0/device:GPU:0"),
        "h.log");
    ASSERT_EQ(dumps.size(), 1u);
    const TfBfcDump& d = dumps[0];
    EXPECT_TRUE(d.errors.empty());
    EXPECT_TRUE(HasWarning(d.warnings, "h.log:18: " + warning)) << JoinWarnings(d.warnings);
    // The header's numbers: "1.00KiB (rounded to 1024)".
    EXPECT_EQ(d.request, 1024u);
    EXPECT_FALSE(d.request_exact);
    EXPECT_EQ(d.rounded, 1024u);
    EXPECT_EQ(d.cause, OomCause::kCapacity);
  }
  // TF <= 1.4 prints no type: one warning that says so (not "of type ?"), although the op's line
  // and the traceback both print the shape; the tag has no trailing blank.
  {
    std::string text = Hostile(18, "W] Resource exhausted: OOM when allocating tensor with shape[16,16]");
    text += "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
            "shape[16,16]\n";
    const auto d = ParseTfBfcLog(text, "h.log");
    ASSERT_EQ(d.size(), 1u);
    std::size_t warned = 0;
    for (const std::string& w : d[0].warnings) warned += w.find("the tensor shape [16,16]") != std::string::npos;
    EXPECT_EQ(warned, 1u) << JoinWarnings(d[0].warnings);
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:18: the tensor shape [16,16] (no element type printed): its size in "
                                          "bytes is unknown: not taken as the request"))
        << JoinWarnings(d[0].warnings);
    EXPECT_FALSE(HasWarning(d[0].warnings, "of type ?")) << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].op, "MatMul");  // the header's op stands
    const auto bare = ParseTfBfcLog("W] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00KiB.\n"
                                    "W] OOM when allocating tensor with shape[16,16]\n",
                                    "b.log");
    ASSERT_EQ(bare.size(), 1u);
    EXPECT_EQ(bare[0].op, "shape[16,16]");
  }
  // A zero dimension makes an overflowing product empty; a scalar is one element.
  {
    const auto d = ParseTfBfcLog(
        Hostile(18, "W] OOM when allocating tensor with shape[4294967296,4294967296,0] and type float"), "h.log");
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:18: the tensor shape of the OOM line gives 0 bytes, which "
                                          "disagrees with the header"))
        << JoinWarnings(d[0].warnings);
  }
  // XLA's byte count.
  for (const auto& [bytes, warning] :
       std::vector<std::pair<std::string, std::string>>{
           {"-1024", "-1024 is negative, not a size: not taken as the request"},
           {"9223372036854775808", "9223372036854775808 bytes is more than 4 EiB"},
           {"18446744073709551616", "18446744073709551616 does not fit in 64 bits: not taken"}}) {
    const auto d = ParseTfBfcLog(
        Hostile(18, "jax.errors.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate " +
                        bytes + " bytes."),
        "h.log");
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:18: XLA's \"Out of memory while trying to allocate N "
                                          "bytes\": " + warning))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].request, 1024u);
    EXPECT_FALSE(d[0].request_exact);
  }
}

// Bin lines and requested sizes are cross-checks: a number that is no size leaves them out, with
// a warning naming the line.
TEST(TfBfcLogHostile, BinLinesAndRequestedSizesThatAreNoSizesAreWarnings) {
  {
    const auto d = ParseTfBfcLog(
        Hostile(2, "I] Bin (-512): \tTotal Chunks: 3, Chunks in use: 2. 2.00KiB allocated for chunks."), "h.log");
    EXPECT_TRUE(d[0].errors.empty());
    EXPECT_TRUE(d[0].bins.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:2: bin line: bin size -512 is negative, not a size: left out"))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].in_use, 1536u);
  }
  {
    const auto d = ParseTfBfcLog(
        Hostile(2, "I] Bin (512): \tTotal Chunks: 3, Chunks in use: -2. 2.00KiB allocated for chunks."), "h.log");
    EXPECT_TRUE(d[0].bins.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:2: bin line: Chunks in use -2 is negative, not a count: left out"))
        << JoinWarnings(d[0].warnings);
  }
  {
    const auto d = ParseTfBfcLog(
        Hostile(2, "I] Bin (512): \tTotal Chunks: 3, Chunks in use: 2. 16.00EiB allocated for chunks."), "h.log");
    EXPECT_TRUE(d[0].bins.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:2: bin line: bytes allocated for chunks: 16.00EiB does not fit "
                                          "in 64 bits: left out"))
        << JoinWarnings(d[0].warnings);
  }
  {
    const auto d = ParseTfBfcLog(
        Hostile(4, "I] InUse at 0x7f0000000000 of size 768 requested size 4096 next 1"), "h.log");
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:4: the requested size of the chunk at 0x7f0000000000: 4096 is "
                                          "more than the chunk's 768 bytes: left out"))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].live_requested, 1536u);
  }
  {
    // A chunk or region line whose number is missing: a warning, the rest stands.
    const auto d = ParseTfBfcLog(Hostile(4, "I] InUse at 0xZZ of size 768 next 1"), "h.log");
    EXPECT_TRUE(d[0].errors.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:4: a chunk line whose address is not hexadecimal: left out"))
        << JoinWarnings(d[0].warnings);
    // The chunk list now holds one in-use chunk of two: the Stats block is the truth.
    EXPECT_EQ(d[0].listed_in_use, 768u);
    EXPECT_EQ(d[0].in_use, 1536u);
    EXPECT_TRUE(d[0].from_stats);
    EXPECT_TRUE(HasWarning(d[0].warnings, "the chunk list is incomplete")) << JoinWarnings(d[0].warnings);
    const auto r = ParseTfBfcLog(Hostile(3, "I] Next region of size many"), "h.log");
    EXPECT_TRUE(HasWarning(r[0].warnings, "h.log:3: region size (\"Next region of size\") is not followed by a "
                                          "number: left out"))
        << JoinWarnings(r[0].warnings);
    EXPECT_EQ(r[0].reserved, 2048u);  // inferred from the chunks
  }
  {
    const auto d = ParseTfBfcLog(Hostile(4, "I] InUse at 0x7f0000000000 of size 768 requested size 700 next 1"), "h.log");
    EXPECT_TRUE(d[0].warnings.empty()) << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].live_requested, 700u + 768u);
  }
}

}  // namespace
}  // namespace fragscope::traces
