// The primitives of the .fst format (docs/trace-format.md): CRC-32C, varints, zigzag deltas,
// the tag table, and the exact bytes of the file header.
#include <zstd.h>

#include <thread>

#include <gtest/gtest.h>

#include "../../traces/src/bytes.hpp"
#include "../../traces/src/crc32c.hpp"
#include "fragscope/traces/tag_table.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "trace_test_support.hpp"

namespace fragscope::traces {
namespace {

TEST(Format, Crc32cKnownValues) {
  // Check values from RFC 3720 (iSCSI), appendix B.4, and the usual "123456789".
  EXPECT_EQ(detail::Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(detail::Crc32c("", 0), 0u);
  std::vector<std::uint8_t> zeros(32, 0), ones(32, 0xFF), up(32);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(detail::Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(detail::Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(detail::Crc32c(up.data(), up.size()), 0x46DD794Eu);
  // Continuation equals one pass, at every split point.
  const std::string text = "The quick brown fox jumps over the lazy dog, twice over the lazy dog.";
  const std::uint32_t whole = detail::Crc32c(text.data(), text.size());
  for (std::size_t split = 0; split <= text.size(); ++split) {
    EXPECT_EQ(detail::Crc32c(text.data() + split, text.size() - split, detail::Crc32c(text.data(), split)), whole);
  }
}

TEST(Format, VarintsAndZigzag) {
  const std::uint64_t values[] = {0, 1, 127, 128, 255, 16383, 16384, 1ull << 32, (1ull << 63) - 1, 1ull << 63,
                                  UINT64_MAX};
  detail::ByteBuffer buffer;
  for (std::uint64_t v : values) buffer.PutVarint(v);
  detail::ByteReader reader(buffer.data(), buffer.size());
  for (std::uint64_t v : values) EXPECT_EQ(reader.Varint("v"), v);
  EXPECT_TRUE(reader.empty());
  EXPECT_EQ(detail::VarintSize(127), 1u);
  EXPECT_EQ(detail::VarintSize(128), 2u);
  EXPECT_EQ(detail::VarintSize(UINT64_MAX), 10u);

  // Over-long and overflowing varints are errors, not wrap-arounds.
  const std::uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  detail::ByteReader r1(eleven, sizeof eleven);
  EXPECT_THROW(r1.Varint("v"), detail::DecodeError);
  const std::uint8_t overflow[] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02};
  detail::ByteReader r2(overflow, sizeof overflow);
  EXPECT_THROW(r2.Varint("v"), detail::DecodeError);
  const std::uint8_t cut[] = {0x80};
  detail::ByteReader r3(cut, sizeof cut);
  EXPECT_THROW(r3.Varint("v"), detail::DecodeError);

  EXPECT_EQ(detail::ZigZag(0), 0u);
  EXPECT_EQ(detail::ZigZag(-1), 1u);
  EXPECT_EQ(detail::ZigZag(1), 2u);
  EXPECT_EQ(detail::ZigZag(INT64_MIN), UINT64_MAX);
  for (std::uint64_t a : values) {
    for (std::uint64_t b : values) EXPECT_EQ(detail::Undelta(detail::Delta(a, b), b), a);
  }
  EXPECT_EQ(detail::RoundUp256(0), 0u);
  EXPECT_EQ(detail::RoundUp256(1), 256u);
  EXPECT_EQ(detail::RoundUp256(256), 256u);
  EXPECT_EQ(detail::RoundUp256(UINT64_MAX), 0u);  // modulo 2^64, as the format defines it
}

TEST(Format, TagTable) {
  TagTable table;
  EXPECT_EQ(table.Intern(""), kNoTag);
  EXPECT_EQ(table.Intern("a"), 1u);
  EXPECT_EQ(table.Intern("b"), 2u);
  EXPECT_EQ(table.Intern("a"), 1u);
  EXPECT_EQ(table.Name(2), "b");
  EXPECT_EQ(table.Name(kNoTag), "");
  EXPECT_EQ(table.Name(99), "");
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.Names(), (std::vector<std::string>{"a", "b"}));

  TagTable shared;
  std::vector<std::thread> threads;
  std::vector<std::vector<TagId>> ids(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) ids[static_cast<std::size_t>(t)].push_back(shared.Intern(std::to_string(i)));
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(shared.size(), 1000u);
  for (int t = 1; t < 4; ++t) EXPECT_EQ(ids[static_cast<std::size_t>(t)], ids[0]);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(shared.Name(ids[0][static_cast<std::size_t>(i)]), std::to_string(i));
}

TEST(Format, FileHeaderBytes) {
  testing::TempDir dir;
  const std::string path = dir.File("h.fst");
  TraceHeader header;
  header.producer = "p";
  { TraceWriter writer(path, header); }
  const auto bytes = testing::ReadBytes(path);
  const std::string json =
      R"({"producer":"p","source_format":"","alloc_conf":"","devices":[],"created_unix_ns":0,"metadata":[]})";
  ASSERT_GE(bytes.size(), 16 + json.size() + 4 + 48);
  const std::uint8_t magic[] = {0x89, 'F', 'S', 'T', 0x0D, 0x0A, 0x1A, 0x0A, 1, 0, 1, 0};  // version 1.1
  EXPECT_TRUE(std::equal(std::begin(magic), std::end(magic), bytes.begin()));
  EXPECT_EQ(detail::LoadLe32(bytes.data() + 12), json.size());
  EXPECT_EQ(std::string(bytes.begin() + 16, bytes.begin() + 16 + static_cast<std::ptrdiff_t>(json.size())), json);
  EXPECT_EQ(detail::LoadLe32(bytes.data() + 16 + json.size()), detail::Crc32c(bytes.data(), 16 + json.size()));
  // Then the end-of-trace block: sync marker, 48-byte header, flags 1.
  const std::uint8_t* end = bytes.data() + 16 + json.size() + 4;
  const std::uint8_t sync[] = {0xF5, 'B', 'L', 'K', 0x0D, 0x0A, 0x87, 0x1A};
  EXPECT_TRUE(std::equal(std::begin(sync), std::end(sync), end));
  EXPECT_EQ(detail::LoadLe16(end + 8), 48u);
  EXPECT_EQ(detail::LoadLe16(end + 10), 1u);
  EXPECT_EQ(detail::LoadLe32(end + 44), detail::Crc32c(end, 44));
}

// A block built by hand, as a later 1.x writer might: `extension` bytes of header fields this
// version does not know, the given columns (more than 15 allowed), the given flags.
std::vector<std::uint8_t> HandBlock(const std::vector<std::vector<std::uint8_t>>& columns,
                                    const std::vector<std::string>& names, std::uint32_t events,
                                    std::uint16_t flags = 0, std::size_t extension = 0) {
  detail::ByteBuffer raw;
  raw.PutVarint(names.size());
  for (const auto& name : names) raw.PutString(name);
  raw.PutVarint(columns.size());
  for (const auto& column : columns) raw.PutVarint(column.size());
  for (const auto& column : columns) raw.PutBytes(column.data(), column.size());
  std::vector<std::uint8_t> compressed(ZSTD_compressBound(raw.size()));
  compressed.resize(ZSTD_compress(compressed.data(), compressed.size(), raw.data(), raw.size(), 3));

  std::vector<std::uint8_t> block(48 + extension + compressed.size(), 0x5A);
  std::copy(compressed.begin(), compressed.end(), block.begin() + static_cast<std::ptrdiff_t>(48 + extension));
  const std::uint8_t sync[] = {0xF5, 'B', 'L', 'K', 0x0D, 0x0A, 0x87, 0x1A};
  std::copy(std::begin(sync), std::end(sync), block.begin());
  detail::StoreLe16(block.data() + 8, static_cast<std::uint16_t>(48 + extension));
  detail::StoreLe16(block.data() + 10, flags);
  detail::StoreLe32(block.data() + 12, static_cast<std::uint32_t>(compressed.size()));
  detail::StoreLe32(block.data() + 16, static_cast<std::uint32_t>(raw.size()));
  detail::StoreLe32(block.data() + 20, events);
  detail::StoreLe64(block.data() + 24, 100);  // first seq
  detail::StoreLe64(block.data() + 32, 5000);  // first time
  detail::StoreLe32(block.data() + 40, detail::Crc32c(block.data() + 48, block.size() - 48));
  detail::StoreLe32(block.data() + 44, detail::Crc32c(block.data(), 44));
  return block;
}

// The file header record of an empty trace, then `blocks`.
std::vector<std::uint8_t> HandFile(const std::vector<std::vector<std::uint8_t>>& blocks) {
  testing::TempDir dir;
  { TraceWriter writer(dir.File("empty.fst"), TraceHeader{}); }
  auto bytes = testing::ReadBytes(dir.File("empty.fst"));
  bytes.resize(16 + detail::LoadLe32(bytes.data() + 12) + 4);  // drop the end-of-trace block
  for (const auto& block : blocks) bytes.insert(bytes.end(), block.begin(), block.end());
  return bytes;
}

// One marker named "x" (kind 6), in the 15 columns of format 1.0.
std::vector<std::vector<std::uint8_t>> MarkerColumns(std::uint8_t kind = 6) {
  std::vector<std::vector<std::uint8_t>> columns(15);
  columns[0] = {kind};
  columns[1] = {0};  // seq: first seq + 0
  columns[2] = {4};  // time: zigzag 4 -> +2
  columns[3] = {3};  // device
  columns[4] = {9};  // thread
  columns[5] = {1};  // tag: first name of the block
  return columns;
}

TEST(Format, LaterMinorVersionAdditionsAreSkipped) {
  // Longer block headers and extra columns are what a 1.x writer may add; a 1.0 reader reads on.
  auto columns = MarkerColumns();
  columns.push_back({});               // the 16th: oom presence (1.1), empty without ooms
  columns.push_back({1, 2, 3, 4, 5});  // a 17th column
  const auto bytes = HandFile({HandBlock(columns, {"x"}, 1, 0, 24), HandBlock(MarkerColumns(), {"x"}, 1)});
  TraceReader reader(bytes, "later.fst");
  std::vector<Event> events;
  for (int block = 0; block < 2; ++block) {
    ASSERT_TRUE(reader.NextBlock(&events));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, EventType::kMarker);
    EXPECT_EQ(events[0].seq, 100u);
    EXPECT_EQ(events[0].time_ns, 5002u);
    EXPECT_EQ(events[0].device, 3u);
    EXPECT_EQ(events[0].thread, 9u);
    EXPECT_EQ(reader.TagName(events[0].tag), "x");
  }
  EXPECT_FALSE(reader.NextBlock(&events));
  ASSERT_EQ(reader.warnings().size(), 1u);
  EXPECT_NE(reader.warnings()[0].find("without an end-of-trace block"), std::string::npos);
}

TEST(Format, BlocksUsingUnknownFeaturesAreSkippedWithAWarning) {
  const auto bytes = HandFile({HandBlock(MarkerColumns(0x46), {"x"}, 1),       // reserved kind bit
                               HandBlock(MarkerColumns(), {"x"}, 1, 0x0004),  // unknown flag
                               HandBlock(MarkerColumns(), {"x"}, 1)});
  TraceReader reader(bytes, "newer.fst");
  std::vector<Event> events;
  ASSERT_TRUE(reader.NextBlock(&events));
  EXPECT_EQ(events.size(), 1u);
  EXPECT_FALSE(reader.NextBlock(&events));
  ASSERT_EQ(reader.warnings().size(), 3u);
  EXPECT_NE(reader.warnings()[0].find("encoding features of a newer format version"), std::string::npos)
      << reader.warnings()[0];
  EXPECT_NE(reader.warnings()[1].find("block with flags 0x0004 from a newer format version skipped"), std::string::npos)
      << reader.warnings()[1];
}

TEST(Format, InconsistentPayloadsAreDamagedBlocks) {
  // Blocks whose checksums match but whose contents do not add up are skipped, not trusted.
  struct Case {
    std::vector<std::vector<std::uint8_t>> columns;
    std::uint32_t events;
    const char* reason;
  };
  auto leftover = MarkerColumns();
  leftover[3].push_back(0);
  auto bad_tag = MarkerColumns();
  bad_tag[5] = {2};
  auto bad_ref = MarkerColumns(0x12);  // a matched free with no alloc before it
  bad_ref[12] = {1};
  const Case cases[] = {
      {MarkerColumns(), 2, "event count larger than the kind column"},
      {leftover, 1, "bytes left over in a column"},
      {bad_tag, 1, "tag index outside the block's name table"},
      {bad_ref, 1, "free refers outside its block"},
      {std::vector<std::vector<std::uint8_t>>(15), 0, nullptr},  // an empty block is fine
  };
  for (const Case& c : cases) {
    const auto bytes = HandFile({HandBlock(c.columns, {"x"}, c.events), HandBlock(MarkerColumns(), {"x"}, 1)});
    TraceReader reader(bytes, "odd.fst");
    std::vector<Event> events;
    ASSERT_TRUE(reader.NextBlock(&events));
    EXPECT_EQ(events.size(), 1u);
    if (c.reason != nullptr) {
      ASSERT_EQ(reader.warnings().size(), 1u);
      EXPECT_NE(reader.warnings()[0].find(c.reason), std::string::npos) << reader.warnings()[0];
    } else {
      EXPECT_TRUE(reader.warnings().empty());
    }
  }
}

}  // namespace
}  // namespace fragscope::traces
