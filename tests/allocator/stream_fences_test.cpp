// StreamFences: which stream waits for which before memory freed on one is used on another
// (the PyTorch shim's cross-stream safety), checked against the orders it asks for.
#include "fragscope/allocator/stream_fences.hpp"

#include <cstdint>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"

namespace {

using Pair = std::pair<std::uint64_t, std::uint64_t>;  // (waiting, freed_on)

std::vector<Pair> Use(fragscope::StreamFences& fences, std::uint64_t stream) {
  std::vector<Pair> orders;
  fences.BeforeUse(stream, [&](std::uint64_t waiting, std::uint64_t freed_on) {
    orders.emplace_back(waiting, freed_on);
  });
  return orders;
}

TEST(StreamFences, OneStreamNeverWaits) {
  fragscope::StreamFences fences;
  for (int i = 0; i < 100; ++i) {
    fences.Freed(7);
    EXPECT_TRUE(Use(fences, 7).empty());
  }
}

TEST(StreamFences, AStreamWaitsOnceForEachRunOfAnotherStreamsFrees) {
  fragscope::StreamFences fences;
  EXPECT_TRUE(Use(fences, 2).empty());  // nothing freed yet
  fences.Freed(1);
  fences.Freed(1);
  EXPECT_EQ(Use(fences, 2), (std::vector<Pair>{{2, 1}}));
  EXPECT_TRUE(Use(fences, 2).empty());  // already waited for both frees
  EXPECT_TRUE(Use(fences, 1).empty());  // its own frees need no wait
  fences.Freed(1);
  EXPECT_EQ(Use(fences, 2), (std::vector<Pair>{{2, 1}}));  // a new free: wait again
  // A third stream has waited for nothing yet.
  EXPECT_EQ(Use(fences, 3), (std::vector<Pair>{{3, 1}}));
  // Frees on two streams: a stream waits for each other one, once.
  fences.Freed(2);
  fences.Freed(3);
  EXPECT_EQ(Use(fences, 1), (std::vector<Pair>{{1, 2}, {1, 3}}));
  EXPECT_EQ(Use(fences, 2), (std::vector<Pair>{{2, 3}}));
  EXPECT_TRUE(Use(fences, 1).empty());
}

TEST(StreamFences, AnOrderThatThrowsIsAskedAgain) {
  fragscope::StreamFences fences;
  fences.Freed(1);
  EXPECT_THROW(fences.BeforeUse(2, [](std::uint64_t, std::uint64_t) { throw std::runtime_error("refused"); }),
               std::runtime_error);
  EXPECT_EQ(Use(fences, 2), (std::vector<Pair>{{2, 1}}));
}

TEST(StreamFences, ThreadsFreeingAndUsingNeverLoseAFree) {
  // Two threads free on their own stream and use memory on the other's, 10,000 times each; the
  // last wait of each stream must cover every free of the other.
  fragscope::StreamFences fences;
  std::vector<std::thread> threads;
  for (std::uint64_t stream = 1; stream <= 2; ++stream) {
    threads.emplace_back([&fences, stream] {
      for (int i = 0; i < 10'000; ++i) {
        fences.Freed(stream);
        fences.BeforeUse(3 - stream, [](std::uint64_t, std::uint64_t) {});
      }
    });
  }
  for (auto& thread : threads) thread.join();
  // Nothing left to wait for once both are done and each stream has waited after the last free.
  Use(fences, 1);
  Use(fences, 2);
  EXPECT_TRUE(Use(fences, 1).empty());
  EXPECT_TRUE(Use(fences, 2).empty());
  fences.Freed(1);
  EXPECT_EQ(Use(fences, 2), (std::vector<Pair>{{2, 1}}));
}

TEST(StreamFences, OnlyGpuBackingsOrderStreams) {
  for (const char* conf : {"backing=sim", "backing=host"}) {
    const auto backing = fragscope::MakeBacking(fragscope::ParseAllocConf(conf));
    EXPECT_FALSE(backing->orders_streams()) << conf;
    backing->OrderStreams(1, 2);  // a no-op, never a throw
  }
}

}  // namespace
