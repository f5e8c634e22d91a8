// PrefetchedBlocks hands out upstream's blocks in order, from one other thread, rethrows what
// upstream threw after the blocks before it, and stops cleanly when its user stops early.
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/prefetched_blocks.hpp"

namespace fragscope::traces {
namespace {

// Blocks 0..count-1; block b holds b % 7 + 1 events whose seq numbers count on across blocks.
struct CountingSource {
  explicit CountingSource(std::uint64_t blocks, std::uint64_t throw_at_block = UINT64_MAX)
      : count(blocks), throw_at(throw_at_block) {}
  std::uint64_t count;
  std::uint64_t throw_at;  // throws instead of giving this block
  std::uint64_t calls = 0;
  std::uint64_t next_seq = 0;
  std::thread::id caller;
  bool one_caller = true;

  bool operator()(std::vector<Event>* events) {
    if (calls == 0) caller = std::this_thread::get_id();
    one_caller = one_caller && caller == std::this_thread::get_id();
    const std::uint64_t b = calls++;
    if (b == throw_at) throw std::runtime_error("damaged block " + std::to_string(b));
    if (b >= count) return false;
    events->clear();
    for (std::uint64_t i = 0; i < b % 7 + 1; ++i) {
      Event e;
      e.seq = next_seq++;
      e.size = b;
      events->push_back(e);
    }
    return true;
  }
};

TEST(PrefetchedBlocks, SameBlocksInTheSameOrderFromOneOtherThread) {
  CountingSource source(1000);
  std::uint64_t blocks = 0;
  std::uint64_t seq = 0;
  {
    PrefetchedBlocks prefetched([&](std::vector<Event>* e) { return source(e); }, 2);
    std::vector<Event> block;
    while (prefetched.Next(&block)) {
      ASSERT_EQ(block.size(), blocks % 7 + 1) << "block " << blocks;
      for (const Event& e : block) {
        EXPECT_EQ(e.seq, seq++);
        EXPECT_EQ(e.size, blocks);
      }
      ++blocks;
    }
    EXPECT_FALSE(prefetched.Next(&block));  // the end stays the end
  }
  EXPECT_EQ(blocks, 1000u);
  EXPECT_EQ(source.calls, 1001u);  // never called again after it said "no more"
  EXPECT_TRUE(source.one_caller);
  EXPECT_NE(source.caller, std::this_thread::get_id());
}

TEST(PrefetchedBlocks, ErrorComesAfterTheBlocksReadBeforeIt) {
  CountingSource source(100, 10);
  PrefetchedBlocks prefetched([&](std::vector<Event>* e) { return source(e); }, 4);
  std::vector<Event> block;
  for (int b = 0; b < 10; ++b) ASSERT_TRUE(prefetched.Next(&block)) << b;
  try {
    prefetched.Next(&block);
    FAIL() << "expected the upstream's error";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "damaged block 10");
  }
  EXPECT_EQ(source.calls, 11u);
}

TEST(PrefetchedBlocks, StoppingEarlyReadsAtMostDepthAhead) {
  CountingSource source(1'000'000);
  {
    PrefetchedBlocks prefetched([&](std::vector<Event>* e) { return source(e); }, 3);
    std::vector<Event> block;
    for (int b = 0; b < 5; ++b) ASSERT_TRUE(prefetched.Next(&block));
  }  // joins here instead of reading the million blocks
  // 5 handed out, at most 3 waiting, and one more may have been in upstream's hands.
  EXPECT_GE(source.calls, 5u);
  EXPECT_LE(source.calls, 5u + 3u + 1u);
}

TEST(PrefetchedBlocks, NeverStartedNeverCalls) {
  CountingSource source(10);
  { PrefetchedBlocks prefetched([&](std::vector<Event>* e) { return source(e); }); }
  EXPECT_EQ(source.calls, 0u);
}

}  // namespace
}  // namespace fragscope::traces
