// Text that is not UTF-8 — UTF-16LE with a byte-order mark as Windows PowerShell's redirection
// writes it, UTF-16BE, UTF-16 without a mark, UTF-8 with a mark — is decoded before the readers
// sniff it, from a file and from standard input alike; bytes that are no such text are an error
// naming the offset; binary formats are never taken for text.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "fragscope/evidence/evidence_input.hpp"
#include "fragscope/evidence/text_encoding.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::evidence {
namespace {

namespace fs = std::filesystem;

// `text` (ASCII and the two characters below) as UTF-16 code units, in either byte order.
std::string Utf16(const std::u16string& text, bool little_endian, bool mark) {
  std::string out;
  auto put = [&](char16_t c) {
    const char low = static_cast<char>(c & 0xFF), high = static_cast<char>(c >> 8);
    out += little_endian ? low : high;
    out += little_endian ? high : low;
  };
  if (mark) put(u'\uFEFF');
  for (char16_t c : text) put(c);
  return out;
}

// PyTorch ≥ 2.2's wording with this test's own numbers, then a line with "µ" and an emoji (a
// surrogate pair).
const std::u16string kLog =
    u"epoch 1 loss 0.5\r\n"
    u"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 7.79 GiB "
    u"of which 900.00 MiB is free. Including non-PyTorch memory, this process has 6.80 GiB memory in use. Of the "
    u"allocated memory 6.10 GiB is allocated by PyTorch, and 500.00 MiB is reserved by PyTorch but unallocated.\r\n"
    u"done in 3 \u00B5s \U0001F600\r\n";

const std::string kUtf8Tail = "done in 3 \xC2\xB5s \xF0\x9F\x98\x80\r\n";

class TextEncodingFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fragscope_text_encoding_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }
  fs::path dir_;
};

TEST(TextEncoding, MarksAndTextWithoutOne) {
  EXPECT_EQ(EncodingByMark(Utf16(u"ab", true, true)), TextEncoding::kUtf16Le);
  EXPECT_EQ(EncodingByMark(Utf16(u"ab", false, true)), TextEncoding::kUtf16Be);
  EXPECT_EQ(EncodingByMark("\xEF\xBB\xBFtext"), TextEncoding::kUtf8Bom);
  EXPECT_EQ(EncodingByMark("plain"), std::nullopt);
  EXPECT_EQ(Utf16WithoutMark(Utf16(u"RuntimeError: CUDA", true, false)), TextEncoding::kUtf16Le);
  EXPECT_EQ(Utf16WithoutMark(Utf16(u"RuntimeError: CUDA", false, false)), TextEncoding::kUtf16Be);
  EXPECT_EQ(Utf16WithoutMark("RuntimeError: CUDA out of memory"), std::nullopt) << "UTF-8 text";
  EXPECT_EQ(Utf16WithoutMark(std::string("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00", 10)), std::nullopt)
      << "binary data with runs of zero bytes";
  EXPECT_EQ(Utf16WithoutMark(Utf16(u"ab", true, false)), std::nullopt) << "too short to tell";
}

TEST(TextEncoding, DecodesBothByteOrdersAndSurrogatePairs) {
  const std::string want_tail = kUtf8Tail;
  for (bool le : {true, false}) {
    const std::string text =
        DecodeToUtf8(Utf16(kLog, le, true), le ? TextEncoding::kUtf16Le : TextEncoding::kUtf16Be, "log.txt");
    EXPECT_TRUE(text.starts_with("epoch 1 loss 0.5\r\n")) << "the mark is dropped";
    EXPECT_TRUE(text.ends_with(want_tail));
  }
  EXPECT_EQ(DecodeToUtf8("\xEF\xBB\xBFhello", TextEncoding::kUtf8Bom, "x"), "hello");
}

TEST(TextEncoding, BytesThatAreNoTextNameTheOffset) {
  // A lone high surrogate at byte 6 (after the mark and two characters).
  std::string lone = Utf16(u"ab", true, true);
  lone += std::string("\x00\xD8", 2);
  lone += Utf16(u"c", true, false);
  try {
    DecodeToUtf8(lone, TextEncoding::kUtf16Le, "lone.log");
    FAIL() << "a lone surrogate decoded";
  } catch (const traces::TraceError& e) {
    EXPECT_EQ(e.path(), "lone.log");
    EXPECT_EQ(e.offset(), 6u);
    EXPECT_NE(std::string(e.what()).find("lone surrogate 0xd800"), std::string::npos) << e.what();
  }
  // A low surrogate alone, big-endian.
  try {
    DecodeToUtf8(Utf16(u"a", false, true) + std::string("\xDC\x00", 2), TextEncoding::kUtf16Be, "be.log");
    FAIL();
  } catch (const traces::TraceError& e) {
    EXPECT_EQ(e.offset(), 4u);
  }
  // Cut in the middle of a code unit.
  try {
    DecodeToUtf8(Utf16(u"abc", true, true) + "x", TextEncoding::kUtf16Le, "cut.log");
    FAIL();
  } catch (const traces::TraceError& e) {
    EXPECT_EQ(e.offset(), 8u);
    EXPECT_NE(std::string(e.what()).find("odd number of bytes"), std::string::npos) << e.what();
  }
}

TEST_F(TextEncodingFiles, APowershellLogIsReadAsItsMessage) {
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"le.log", Utf16(kLog, true, true)},
                                    {"be.log", Utf16(kLog, false, true)},
                                    {"nomark.log", Utf16(kLog, true, false)},
                                    {"utf8bom.log", "\xEF\xBB\xBF" + std::string("RuntimeError: CUDA error: out of memory\n")}}) {
    SCOPED_TRACE(name);
    const auto input = EvidenceInput::Open(Write(name, bytes));
    EXPECT_EQ(input->format(), "OOM error message");
    ASSERT_EQ(input->messages().size(), 1u);
    const traces::OomMessage& m = input->messages()[0];
    EXPECT_EQ(m.line, 2u - (name == "utf8bom.log" ? 1u : 0u));
    if (name != "utf8bom.log") {
      ASSERT_TRUE(m.request);
      EXPECT_EQ(m.request->bytes, 1610612736u);
      ASSERT_TRUE(m.unallocated);
      EXPECT_EQ(m.unallocated->bytes, 500u << 20);
    }
  }
}

TEST_F(TextEncodingFiles, BadUtf16IsAnErrorNamingFileAndOffset) {
  const std::string path = Write("bad.log", Utf16(u"CUDA out of memory", true, true) + "z");
  try {
    EvidenceInput::Open(path);
    FAIL() << "bad UTF-16 opened";
  } catch (const traces::TraceError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(e.offset(), 38u);
  }
  // A BOM and nothing else: an empty text.
  EXPECT_THROW(EvidenceInput::Open(Write("empty.log", Utf16(u"", true, true))), traces::TraceError);
}

}  // namespace
}  // namespace fragscope::evidence
