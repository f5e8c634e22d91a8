// Every event type and every field survives a trip through a .fst file: random seeded events with
// extreme values, allocator-like streams, several blocks, headers, tag ids, and the writer's
// background and foreground modes.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "trace_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::Describe;
using testing::TempDir;

TraceHeader RichHeader() {
  TraceHeader h;
  h.producer = "fragscope-train 0.1.0";
  h.source_format = "fragscope";
  h.alloc_conf = "backing=sim,growth=on,limit=6GiB";
  h.devices = {{0, "NVIDIA H200", "cuda", 150'000'000'000ull, 6ull << 30},
               {1, "simulated device", "sim", 0, 0},
               {4294967295u, "héllo wörld ✓", "vmm", UINT64_MAX, UINT64_MAX}};
  h.created_unix_ns = 1'700'000'000'123'456'789ull;
  h.metadata = {{"git", "abc123"}, {"host", "node-7"}, {"git", "repeated key"}, {"", ""}, {"ключ", "значение"}};
  return h;
}

TEST(RoundTrip, EveryTypeEveryFieldRandom) {
  TempDir dir;
  for (const bool wellformed : {true, false}) {
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(fmt::format("wellformed={} seed={}", wellformed, seed));
      Trace trace = testing::RandomTrace(seed, 3000, wellformed);
      trace.header = RichHeader();
      const std::string path = dir.File("random.fst");
      WriteTrace(trace, path, {.block_events = 700});
      const Trace back = ReadTrace(path);
      EXPECT_TRUE(back.warnings.empty()) << back.warnings.front();
      EXPECT_EQ(back.header, trace.header);
      EXPECT_EQ(back.tags, trace.tags);
      EXPECT_EQ(Describe(back), Describe(trace));
    }
  }
}

TEST(RoundTrip, AllocatorLikeStreamWithMatchedFrees) {
  TempDir dir;
  const Trace trace = testing::AllocatorLikeTrace(7, 50'000, 3);
  const std::string path = dir.File("alloc.fst");
  WriteTrace(trace, path, {.block_events = 4096});
  const Trace back = ReadTrace(path);
  EXPECT_TRUE(back.warnings.empty());
  EXPECT_EQ(Describe(back), Describe(trace));
}

TEST(RoundTrip, FreesThatAlmostMatchTheirAlloc) {
  // A free that differs from the alloc at its address in one field must not be taken as a copy.
  TempDir dir;
  Trace trace;
  trace.tags = {"a", "b"};
  Event alloc;
  alloc.type = EventType::kAlloc;
  alloc.address = 0x1000;
  alloc.size = 100;
  alloc.rounded = 256;
  alloc.region = 0x1000;
  alloc.alloc_id = 5;
  alloc.stream = 2;
  alloc.tag = 1;
  std::uint64_t seq = 0;
  auto add = [&](Event e) {
    e.seq = seq++;
    trace.events.push_back(e);
  };
  add(alloc);
  Event free = alloc;
  free.type = EventType::kFree;
  for (int field = 0; field < 7; ++field) {
    Event f = free;
    switch (field) {
      case 0: f.size += 1; break;
      case 1: f.rounded += 256; break;
      case 2: f.region = 0; break;
      case 3: f.alloc_id = 6; break;
      case 4: f.stream = 0; break;
      case 5: f.tag = 2; break;
      case 6: f.device = 1; break;
    }
    add(f);
  }
  add(free);  // the exact match
  add(free);  // a double free matches too
  const std::string path = dir.File("almost.fst");
  WriteTrace(trace, path);
  EXPECT_EQ(Describe(ReadTrace(path)), Describe(trace));
}

TEST(RoundTrip, SeveralBlocksAndBlockBoundaries) {
  TempDir dir;
  const Trace trace = testing::RandomTrace(11, 1000, true, 4);
  for (const std::uint32_t block : {1u, 2u, 3u, 7u, 999u, 1000u, 1001u, 65536u}) {
    SCOPED_TRACE(block);
    const std::string path = dir.File("blocks.fst");
    WriteTrace(trace, path, {.block_events = block});
    TraceReader reader(path);
    std::vector<Event> events;
    std::size_t blocks = 0;
    std::size_t total = 0;
    while (reader.NextBlock(&events)) {
      ++blocks;
      EXPECT_LE(events.size(), block);
      for (std::size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq, total + i);
      total += events.size();
    }
    EXPECT_EQ(total, trace.events.size());
    EXPECT_EQ(blocks, (trace.events.size() + block - 1) / block);
    EXPECT_TRUE(reader.warnings().empty());
    EXPECT_EQ(reader.offset(), reader.file_size());
  }
}

TEST(RoundTrip, HeaderOnlyAndEmptyTraces) {
  TempDir dir;
  const std::string path = dir.File("empty.fst");
  {
    TraceWriter writer(path, RichHeader());
  }
  const Trace back = ReadTrace(path);
  EXPECT_EQ(back.header, RichHeader());
  EXPECT_TRUE(back.events.empty());
  EXPECT_TRUE(back.tags.empty());
  EXPECT_TRUE(back.warnings.empty());

  TraceWriter writer(dir.File("default.fst"), TraceHeader{});
  writer.Close();
  EXPECT_EQ(ReadTrace(dir.File("default.fst")).header, TraceHeader{});
}

TEST(RoundTrip, TagIdsAreTheWritersIds) {
  // Names interned before use, never used, or used out of order keep the writer's ids.
  TempDir dir;
  const std::string path = dir.File("tags.fst");
  TraceWriter writer(path, TraceHeader{}, {.block_events = 3});
  std::vector<TagId> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(writer.Intern(fmt::format("tag {}", i)));
  EXPECT_EQ(writer.Intern("tag 3"), ids[3]);
  EXPECT_EQ(writer.Intern(""), kNoTag);
  for (int i = 19; i >= 0; i -= 3) {
    Event e;
    e.type = EventType::kMarker;
    e.tag = ids[static_cast<std::size_t>(i)];
    writer.Record(e);
  }
  writer.Flush();
  const TagId late = writer.Intern("interned after a flush, never used");
  writer.Close();
  const Trace back = ReadTrace(path);
  ASSERT_EQ(back.tags.size(), 21u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(back.tags[ids[static_cast<std::size_t>(i)] - 1], fmt::format("tag {}", i));
  EXPECT_EQ(back.tags[late - 1], "interned after a flush, never used");
  for (const Event& e : back.events) EXPECT_EQ(back.TagName(e.tag).substr(0, 4), "tag ");
}

TEST(RoundTrip, RecordAssignsSequenceNumbers) {
  TempDir dir;
  const std::string path = dir.File("seq.fst");
  TraceWriter writer(path, TraceHeader{}, {.block_events = 10});
  for (int i = 0; i < 95; ++i) {
    Event e;
    e.type = EventType::kMarker;
    e.seq = 12345;  // overwritten
    writer.Record(e);
    EXPECT_EQ(e.seq, static_cast<std::uint64_t>(i));
  }
  writer.Flush();
  EXPECT_EQ(writer.events_written(), 95u);
  writer.Close();
  EXPECT_EQ(writer.bytes_written(), std::filesystem::file_size(path));
  const Trace back = ReadTrace(path);
  ASSERT_EQ(back.events.size(), 95u);
  EXPECT_EQ(back.events.back().seq, 94u);
}

TEST(RoundTrip, AppendKeepsSequenceGaps) {
  TempDir dir;
  Trace trace = testing::RandomTrace(5, 200, true);
  std::mt19937_64 rng(5);
  std::uint64_t seq = UINT64_MAX - 100'000;
  for (Event& e : trace.events) e.seq = seq += 1 + rng() % 1000;  // gaps, and wrapping past 2^64
  const std::string path = dir.File("gaps.fst");
  WriteTrace(trace, path, {.block_events = 16});
  EXPECT_EQ(Describe(ReadTrace(path)), Describe(trace));
}

TEST(RoundTrip, UnknownEventTypesAreSkippedWithAWarning) {
  TempDir dir;
  Trace trace = testing::RandomTrace(9, 100, true);
  trace.events[10].type = static_cast<EventType>(0);
  trace.events[20].type = static_cast<EventType>(13);  // 11-15: unknown to format 1.1
  trace.events[30].type = static_cast<EventType>(200);
  const std::string path = dir.File("unknown.fst");
  WriteTrace(trace, path);
  const Trace back = ReadTrace(path);
  EXPECT_EQ(back.events.size(), 97u);
  ASSERT_EQ(back.warnings.size(), 1u);
  EXPECT_NE(back.warnings[0].find("3 events of types this version does not know"), std::string::npos)
      << back.warnings[0];
}

TEST(RoundTrip, LongNamesAndManyNamesSplitBlocks) {
  // 200 names of 60 KiB (12 MB) pass a block's name budget: names travel in blocks of their own.
  // Names over 64 KiB are cut to 64 KiB.
  TempDir dir;
  Trace trace;
  for (int i = 0; i < 200; ++i) trace.tags.push_back(fmt::format("{:05}", i) + std::string(60 << 10, 'n'));
  trace.tags.push_back(std::string(100 << 10, 'L'));
  for (std::uint32_t i = 0; i < 400; ++i) {
    Event e;
    e.type = EventType::kMarker;
    e.seq = i;
    e.tag = 1 + i % static_cast<std::uint32_t>(trace.tags.size());
    trace.events.push_back(e);
  }
  const std::string path = dir.File("names.fst");
  WriteTrace(trace, path, {.block_events = 1000});
  const Trace back = ReadTrace(path);
  EXPECT_TRUE(back.warnings.empty());
  ASSERT_EQ(back.tags.size(), trace.tags.size());
  for (std::size_t i = 0; i + 1 < trace.tags.size(); ++i) EXPECT_EQ(back.tags[i], trace.tags[i]);
  EXPECT_EQ(back.tags.back(), std::string(64 << 10, 'L'));
  ASSERT_EQ(back.events.size(), trace.events.size());
  for (std::size_t i = 0; i < back.events.size(); ++i) EXPECT_EQ(back.events[i].tag, trace.events[i].tag);
}

TEST(RoundTrip, LargeBlocksSplitByPayloadSize) {
  // Random 64-bit fields take ~80 raw bytes per event: 150k events in one "block" pass the
  // 8 MiB raw budget and are written as several blocks.
  TempDir dir;
  const Trace trace = testing::RandomTrace(21, 150'000, false);
  const std::string path = dir.File("large.fst");
  WriteTrace(trace, path, {.block_events = 1u << 20, .compression_level = 1});
  TraceReader reader(path);
  std::vector<Event> events;
  std::size_t blocks = 0;
  std::vector<Event> all;
  while (reader.NextBlock(&events)) {
    ++blocks;
    all.insert(all.end(), events.begin(), events.end());
  }
  EXPECT_GT(blocks, 1u);
  EXPECT_TRUE(reader.warnings().empty());
  EXPECT_EQ(Describe(all, reader.tags()), Describe(trace));
}

TEST(RoundTrip, BackgroundAndForegroundWritersProduceIdenticalFiles) {
  TempDir dir;
  const Trace trace = testing::AllocatorLikeTrace(3, 20'000);
  auto write = [&](const std::string& path, bool background) {
    TraceWriter writer(path, RichHeader(), {.block_events = 1000, .compression_level = 3, .background = background});
    std::size_t tags = 0;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
      // Interning interleaved with recording, and flushes at odd moments.
      if (i % 400 == 0 && tags < trace.tags.size()) writer.Intern(trace.tags[tags++]);
      if (i % 3333 == 0) writer.Flush();
      Event e = trace.events[i];
      e.tag = e.tag <= tags ? e.tag : kNoTag;
      writer.Record(e);
    }
    writer.Close();
  };
  write(dir.File("background.fst"), true);
  write(dir.File("foreground.fst"), false);
  const auto a = testing::ReadBytes(dir.File("background.fst"));
  const auto b = testing::ReadBytes(dir.File("foreground.fst"));
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "background " << a.size() << " bytes, foreground " << b.size() << " bytes";
}

TEST(RoundTrip, CompressionLevelsAllReadBack) {
  TempDir dir;
  const Trace trace = testing::AllocatorLikeTrace(4, 5000);
  for (const int level : {-5, 1, 3, 9, 19, 1000}) {
    SCOPED_TRACE(level);
    WriteTrace(trace, dir.File("level.fst"), {.block_events = 2000, .compression_level = level});
    EXPECT_EQ(Describe(ReadTrace(dir.File("level.fst"))), Describe(trace));
  }
}

TEST(RoundTrip, CloseIsIdempotentAndLaterRecordsAreIgnored) {
  TempDir dir;
  const std::string path = dir.File("closed.fst");
  TraceWriter writer(path, TraceHeader{});
  Event e;
  writer.Record(e);
  writer.Close();
  writer.Close();
  writer.Record(e);
  writer.Flush();
  EXPECT_EQ(ReadTrace(path).events.size(), 1u);
  EXPECT_TRUE(ReadTrace(path).warnings.empty());
}

TEST(RoundTrip, WriterReportsFilesItCannotCreate) {
  try {
    TraceWriter writer("/nonexistent-dir/x.fst", TraceHeader{});
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.path(), "/nonexistent-dir/x.fst");
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.fst"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(RoundTrip, WriteErrorsSurfaceAtFlushAndClose) {
  // /dev/full accepts the open and fails every write with ENOSPC.
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  try {
    TraceWriter writer("/dev/full", TraceHeader{});
    FAIL() << "the header write should fail";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fragscope::traces
