// Damaged files: truncation at every byte, a flipped byte anywhere in any block, garbage, empty
// files, wrong magic, newer versions. The reader yields every intact block, names the file and
// the offset, and never crashes.
#include <cstring>

#include <gtest/gtest.h>

#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "trace_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::Describe;
using testing::TempDir;

struct Layout {
  std::vector<std::uint8_t> bytes;
  std::uint64_t header_end = 0;                     // first byte after the header record
  std::vector<std::uint64_t> block_begin;           // data blocks
  std::vector<std::uint64_t> block_end;
  std::vector<std::vector<std::string>> block_events;  // described
  std::uint64_t end_block = 0;                      // offset of the end-of-trace block
};

// A small trace in several blocks, and where its blocks are.
Layout SmallTrace(const TempDir& dir, std::uint32_t block_events = 5) {
  Trace trace = testing::RandomTrace(42, 23, true, 3);
  trace.header.alloc_conf = "backing=sim";
  const std::string path = dir.File("small.fst");
  WriteTrace(trace, path, {.block_events = block_events});
  Layout layout;
  layout.bytes = testing::ReadBytes(path);
  TraceReader reader(path);
  std::uint64_t begin = reader.offset();
  layout.header_end = begin;
  std::vector<Event> events;
  while (reader.NextBlock(&events)) {
    layout.block_begin.push_back(begin);
    layout.block_end.push_back(reader.offset());
    layout.block_events.push_back(Describe(events, reader.tags()));
    begin = reader.offset();
  }
  EXPECT_TRUE(reader.warnings().empty());
  layout.end_block = layout.block_end.back();
  return layout;
}

std::vector<std::string> ReadAllDescribed(TraceReader& reader, std::size_t* blocks = nullptr) {
  std::vector<std::string> out;
  std::vector<Event> events;
  while (reader.NextBlock(&events)) {
    auto d = Describe(events, reader.tags());
    out.insert(out.end(), d.begin(), d.end());
    if (blocks != nullptr) ++*blocks;
  }
  return out;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Damage, TruncatedAtEveryByte) {
  TempDir dir;
  const Layout layout = SmallTrace(dir);
  ASSERT_GE(layout.block_begin.size(), 4u);
  for (std::size_t cut = 0; cut < layout.bytes.size(); ++cut) {
    SCOPED_TRACE(fmt::format("cut at {} of {}", cut, layout.bytes.size()));
    const std::span<const std::uint8_t> prefix(layout.bytes.data(), cut);
    if (cut < layout.header_end) {
      try {
        TraceReader reader(prefix, "cut.fst");
        FAIL() << "a file cut in its header record must be refused";
      } catch (const TraceError& e) {
        EXPECT_TRUE(Contains(e.what(), "cut.fst")) << e.what();
        EXPECT_TRUE(Contains(e.what(), "at byte")) << e.what();
      }
      continue;
    }
    TraceReader reader(prefix, "cut.fst");
    std::vector<std::string> expected;
    std::size_t complete = 0;
    for (std::size_t b = 0; b < layout.block_begin.size(); ++b) {
      if (layout.block_end[b] > cut) break;
      expected.insert(expected.end(), layout.block_events[b].begin(), layout.block_events[b].end());
      ++complete;
    }
    std::size_t blocks = 0;
    EXPECT_EQ(ReadAllDescribed(reader, &blocks), expected);
    EXPECT_EQ(blocks, complete);
    ASSERT_EQ(reader.warnings().size(), 1u);
    const std::string& warning = reader.warnings()[0];
    EXPECT_TRUE(Contains(warning, "cut.fst")) << warning;
    const std::uint64_t boundary = complete == 0 ? layout.header_end : layout.block_end[complete - 1];
    if (cut == boundary) {
      EXPECT_TRUE(Contains(warning, fmt::format("ends at byte {} without an end-of-trace block", cut))) << warning;
    } else {
      EXPECT_TRUE(Contains(warning, fmt::format("truncated at byte {}: {} complete blocks read", boundary, complete)))
          << warning;
    }
  }
}

TEST(Damage, TruncatedFileOnDisk) {
  TempDir dir;
  const Layout layout = SmallTrace(dir);
  const std::string path = dir.File("cut.fst");
  const std::uint64_t cut = layout.block_begin[2] + 30;
  testing::WriteBytes(path, layout.bytes, cut);
  const Trace trace = ReadTrace(path);
  EXPECT_EQ(trace.events.size(), layout.block_events[0].size() + layout.block_events[1].size());
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0], fmt::format("{}: truncated at byte {}: 2 complete blocks read, the rest (30 bytes) lost",
                                           path, layout.block_begin[2]));
}

TEST(Damage, FlippedByteInEveryPositionOfEveryBlock) {
  TempDir dir;
  const Layout layout = SmallTrace(dir);
  for (std::size_t b = 0; b < layout.block_begin.size(); ++b) {
    std::vector<std::string> expected;
    for (std::size_t k = 0; k < layout.block_begin.size(); ++k) {
      if (k != b) expected.insert(expected.end(), layout.block_events[k].begin(), layout.block_events[k].end());
    }
    for (std::uint64_t at = layout.block_begin[b]; at < layout.block_end[b]; ++at) {
      for (const unsigned mask : {0x01u, 0x80u, 0xFFu}) {
        SCOPED_TRACE(fmt::format("block {} at byte {} mask {:#x}", b, at, mask));
        std::vector<std::uint8_t> bytes = layout.bytes;
        bytes[at] = static_cast<std::uint8_t>(bytes[at] ^ mask);
        TraceReader reader(bytes, "flip.fst");
        EXPECT_EQ(ReadAllDescribed(reader), expected);
        ASSERT_GE(reader.warnings().size(), 1u);
        EXPECT_TRUE(Contains(reader.warnings()[0], fmt::format("flip.fst: at byte {}: damaged block",
                                                               layout.block_begin[b])))
            << reader.warnings()[0];
      }
    }
  }
}

TEST(Damage, FlippedByteInTheEndBlockLosesNoEvents) {
  TempDir dir;
  const Layout layout = SmallTrace(dir);
  std::vector<std::string> all;
  for (const auto& block : layout.block_events) all.insert(all.end(), block.begin(), block.end());
  for (std::uint64_t at = layout.end_block; at < layout.bytes.size(); ++at) {
    std::vector<std::uint8_t> bytes = layout.bytes;
    bytes[at] ^= 0x10;
    TraceReader reader(bytes, "end.fst");
    EXPECT_EQ(ReadAllDescribed(reader), all);
    // The damage, and (when the block's payload was hit) that the trace's end is not confirmed.
    ASSERT_GE(reader.warnings().size(), 1u);
    EXPECT_TRUE(Contains(reader.warnings()[0], fmt::format("at byte {}: damaged block", layout.end_block)))
        << reader.warnings()[0];
  }
}

TEST(Damage, GarbageBetweenBlocksIsSkipped) {
  TempDir dir;
  const Layout layout = SmallTrace(dir);
  std::vector<std::uint8_t> bytes(layout.bytes.begin(), layout.bytes.begin() + static_cast<std::ptrdiff_t>(layout.block_end[1]));
  const std::size_t garbage = 1000;
  for (std::size_t i = 0; i < garbage; ++i) bytes.push_back(static_cast<std::uint8_t>(i * 7919 + 13));
  bytes.insert(bytes.end(), layout.bytes.begin() + static_cast<std::ptrdiff_t>(layout.block_end[1]), layout.bytes.end());
  TraceReader reader(bytes, "garbage.fst");
  std::vector<std::string> all;
  for (const auto& block : layout.block_events) all.insert(all.end(), block.begin(), block.end());
  EXPECT_EQ(ReadAllDescribed(reader), all);
  ASSERT_EQ(reader.warnings().size(), 1u);
  EXPECT_EQ(reader.warnings()[0],
            fmt::format("garbage.fst: at byte {}: damaged block (no block marker); skipped {} bytes, reading resumes "
                        "at byte {}",
                        layout.block_end[1], garbage, layout.block_end[1] + garbage));
}

TEST(Damage, DamagedHeaderRecordKeepsTheBlocks) {
  TempDir dir;
  const Layout layout = SmallTrace(dir);
  std::vector<std::string> all;
  for (const auto& block : layout.block_events) all.insert(all.end(), block.begin(), block.end());
  for (const std::uint64_t at : {std::uint64_t{12}, std::uint64_t{15}, std::uint64_t{20}, layout.header_end - 1}) {
    std::vector<std::uint8_t> bytes = layout.bytes;
    bytes[at] ^= 0x40;
    TraceReader reader(bytes, "header.fst");
    EXPECT_EQ(reader.header(), TraceHeader{});
    EXPECT_EQ(ReadAllDescribed(reader), all);
    ASSERT_EQ(reader.warnings().size(), 1u);
    EXPECT_TRUE(Contains(reader.warnings()[0], "the header record is damaged")) << reader.warnings()[0];
  }
}

TEST(Damage, TrailingBytesAfterTheEndBlock) {
  TempDir dir;
  Layout layout = SmallTrace(dir);
  const std::size_t size = layout.bytes.size();
  layout.bytes.resize(size + 10, 0xAB);
  TraceReader reader(layout.bytes, "tail.fst");
  ReadAllDescribed(reader);
  ASSERT_EQ(reader.warnings().size(), 1u);
  EXPECT_EQ(reader.warnings()[0], fmt::format("tail.fst: at byte {}: 10 bytes after the end-of-trace block ignored", size));
}

void ExpectRefused(const std::string& path, const std::string& expected_part, std::uint64_t offset) {
  try {
    TraceReader reader(path);
    FAIL() << "expected a TraceError for " << path;
  } catch (const TraceError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_EQ(e.offset(), offset);
    EXPECT_TRUE(Contains(e.what(), path)) << e.what();
    EXPECT_TRUE(Contains(e.what(), fmt::format("at byte {}", offset))) << e.what();
    EXPECT_TRUE(Contains(e.what(), expected_part)) << e.what();
  }
}

TEST(Damage, FilesThatAreNotTracesAreRefused) {
  TempDir dir;
  const std::string empty = dir.File("empty.fst");
  testing::WriteBytes(empty, {}, 0);
  ExpectRefused(empty, "empty file", 0);

  const std::string text = dir.File("text.fst");
  const std::string words = "this is not a trace, just some text\n";
  testing::WriteBytes(text, std::vector<std::uint8_t>(words.begin(), words.end()), words.size());
  ExpectRefused(text, "not a fragscope trace: it starts with 74 68 69 73", 0);

  const std::string garbage = dir.File("garbage.fst");
  std::vector<std::uint8_t> bytes(5000);
  std::mt19937_64 rng(1);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  testing::WriteBytes(garbage, bytes, bytes.size());
  ExpectRefused(garbage, "not a fragscope trace", 0);

  const Layout layout = SmallTrace(dir);
  const std::string magic = dir.File("magic.fst");
  std::vector<std::uint8_t> wrong = layout.bytes;
  wrong[3] = 'X';
  testing::WriteBytes(magic, wrong, wrong.size());
  ExpectRefused(magic, "not a fragscope trace", 0);

  const std::string short_magic = dir.File("short.fst");
  testing::WriteBytes(short_magic, layout.bytes, 5);
  ExpectRefused(short_magic, "truncated in the file header", 5);

  ExpectRefused(dir.File("missing.fst"), "cannot open: No such file or directory", 0);
  ExpectRefused(::testing::TempDir(), "not a regular file", 0);
}

TEST(Damage, NewerMajorVersionIsRefusedOlderMinorIsRead) {
  TempDir dir;
  const Layout layout = SmallTrace(dir);
  const std::string newer = dir.File("newer.fst");
  std::vector<std::uint8_t> bytes = layout.bytes;
  bytes[8] = 2;  // major 2
  bytes[10] = 7;  // minor 7
  testing::WriteBytes(newer, bytes, bytes.size());
  ExpectRefused(newer, newer + " was written by a newer fragscope (trace format 2.7); this build reads format 1.x", 8);

  // A newer minor version of format 1 is read (its additions are skippable by design); the header
  // CRC covers the version, so patch it as a newer writer would have written it.
  bytes = layout.bytes;
  bytes[10] = 9;
  const std::uint32_t length = bytes[12] | bytes[13] << 8 | bytes[14] << 16 | static_cast<std::uint32_t>(bytes[15]) << 24;
  const std::size_t crc_at = 16 + length;
  // Recompute CRC-32C bit by bit (independently of the library's table-driven one).
  std::uint32_t crc = 0xFFFFFFFF;
  for (std::size_t i = 0; i < crc_at; ++i) {
    crc ^= bytes[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  crc = ~crc;
  for (int k = 0; k < 4; ++k) bytes[crc_at + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(crc >> (8 * k));
  TraceReader reader(bytes, "minor.fst");
  EXPECT_EQ(reader.version_major(), 1u);
  EXPECT_EQ(reader.version_minor(), 9u);
  std::vector<std::string> all;
  for (const auto& block : layout.block_events) all.insert(all.end(), block.begin(), block.end());
  EXPECT_EQ(ReadAllDescribed(reader), all);
  EXPECT_TRUE(reader.warnings().empty());
}

TEST(Damage, RandomCorruptionNeverCrashes) {
  // Many random edits of a real trace (flips, cuts, duplicated ranges) all read without a crash:
  // each gives either a TraceError or some events with warnings.
  TempDir dir;
  const Layout layout = SmallTrace(dir, 3);
  std::mt19937_64 rng(99);
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::uint8_t> bytes = layout.bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      switch (rng() % 3) {
        case 0: bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255); break;
        case 1: bytes.resize(rng() % (bytes.size() + 1)); break;
        default: {
          const std::size_t from = rng() % bytes.size();
          const std::size_t n = std::min<std::size_t>(rng() % 200, bytes.size() - from);
          const std::vector<std::uint8_t> copy(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                                               bytes.begin() + static_cast<std::ptrdiff_t>(from + n));
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(rng() % bytes.size()), copy.begin(), copy.end());
        }
      }
      if (bytes.empty()) break;
    }
    try {
      TraceReader reader(bytes, "random.fst");
      ReadAllDescribed(reader);
    } catch (const TraceError& e) {
      EXPECT_TRUE(Contains(e.what(), "random.fst")) << e.what();
    }
  }
}

}  // namespace
}  // namespace fragscope::traces
