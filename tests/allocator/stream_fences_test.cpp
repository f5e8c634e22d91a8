// StreamFences: which stream waits for which before memory freed on one is used on another
// (the PyTorch shim's cross-stream safety), checked against the orders it asks for.
#include "fragscope/allocator/stream_fences.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"

namespace {

using Pair = std::pair<std::uint64_t, std::uint64_t>;  // (waiting, freed_on)

std::vector<Pair> Use(fragscope::StreamFences& fences, std::uint64_t stream) {
  std::vector<Pair> orders;
  fences.BeforeUse(stream, [&](std::uint64_t waiting, std::uint64_t freed_on) {
    orders.emplace_back(waiting, freed_on);
    return true;
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
  EXPECT_THROW(fences.BeforeUse(2, [](std::uint64_t, std::uint64_t) -> bool { throw std::runtime_error("refused"); }),
               std::runtime_error);
  EXPECT_EQ(Use(fences, 2), (std::vector<Pair>{{2, 1}}));
}

TEST(StreamFences, ThreadsFreeingAndUsingNeverOrderAStreamAfterItself) {
  // Two threads free on their own stream and use memory on the other's, 10,000 times each (TSan
  // runs this too). No order ever makes a stream wait for itself, each thread's orders are all
  // (its use stream, the other's), and once both are done one more use each waits at most once
  // and then nothing is left to wait for.
  fragscope::StreamFences fences;
  std::vector<std::thread> threads;
  std::vector<int> bad(2, 0);
  for (std::uint64_t stream = 1; stream <= 2; ++stream) {
    threads.emplace_back([&fences, &bad, stream] {
      for (int i = 0; i < 10'000; ++i) {
        fences.Freed(stream);
        fences.BeforeUse(3 - stream, [&](std::uint64_t waiting, std::uint64_t freed_on) {
          if (waiting != 3 - stream || freed_on != stream) ++bad[stream - 1];
          return true;
        });
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(bad, (std::vector<int>{0, 0}));
  EXPECT_LE(Use(fences, 1).size(), 1u);
  EXPECT_LE(Use(fences, 2).size(), 1u);
  EXPECT_TRUE(Use(fences, 1).empty());
  EXPECT_TRUE(Use(fences, 2).empty());
}

TEST(StreamFences, AStreamThatIsGoneIsForgotten) {
  fragscope::StreamFences fences;
  fences.Freed(1);
  fences.Freed(2);
  std::vector<Pair> asked;
  fences.BeforeUse(3, [&](std::uint64_t waiting, std::uint64_t freed_on) {
    asked.emplace_back(waiting, freed_on);
    return freed_on != 1;  // stream 1 was destroyed: the device was waited for instead
  });
  EXPECT_EQ(asked, (std::vector<Pair>{{3, 1}, {3, 2}}));
  EXPECT_EQ(fences.freeing_streams(), 1u);  // only stream 2 is left
  EXPECT_EQ(Use(fences, 4), (std::vector<Pair>{{4, 2}}));  // stream 1 is asked for no more
  fences.Freed(1);  // a new stream at the same handle starts afresh
  EXPECT_EQ(Use(fences, 3), (std::vector<Pair>{{3, 1}}));
}

// A backing that orders streams as a GPU's does, and records what it was asked.
class OrderingBacking final : public fragscope::Backing {
 public:
  explicit OrderingBacking(std::unique_ptr<fragscope::Backing> inner) : inner_(std::move(inner)) {}
  const fragscope::BackingInfo& info() const override { return inner_->info(); }
  void* Reserve(std::uint64_t bytes, std::uint64_t stream) override { return inner_->Reserve(bytes, stream); }
  void Release(void* base, std::uint64_t bytes, std::uint64_t stream) override { inner_->Release(base, bytes, stream); }
  std::uint64_t held() const override { return inner_->held(); }
  fragscope::ExpandableBacking* expandable() override { return inner_->expandable(); }
  bool orders_streams() const override { return true; }
  bool OrderStreams(std::uint64_t waiting, std::uint64_t freed_on) override {
    orders.emplace_back(waiting, freed_on);
    if (refuse) throw fragscope::BackingError("refused");
    return true;
  }
  std::vector<Pair> orders;
  bool refuse = false;

 private:
  std::unique_ptr<fragscope::Backing> inner_;
};

// The calls the PyTorch shim makes: a block freed on stream 1 and handed to stream 2 makes stream 2
// wait for stream 1; one stream alone never waits; a refused order gives the block back.
TEST(StreamFences, StreamOrderedAllocateAndFreeOrderTheStreams) {
  const fragscope::AllocConf conf = fragscope::ParseAllocConf("backing=sim,limit=64MiB");
  auto owned = std::make_unique<OrderingBacking>(fragscope::MakeBacking(conf));
  OrderingBacking* backing = owned.get();
  auto system = fragscope::MemorySystem::Create(conf, std::move(owned));
  fragscope::DeviceAllocator& device = system->device(0);
  fragscope::StreamFences fences;
  fragscope::OomReport report;
  const auto allocate = [&](std::uint64_t stream) {
    fragscope::AllocOptions options;
    options.stream = stream;
    return fragscope::AllocateStreamOrdered(device, *backing, fences, 1 << 20, options, &report);
  };
  void* a = allocate(1);
  fragscope::FreeStreamOrdered(device, *backing, fences, a, 1);
  void* b = allocate(1);  // the same stream: no wait
  EXPECT_TRUE(backing->orders.empty());
  fragscope::FreeStreamOrdered(device, *backing, fences, b, 1);
  void* c = allocate(2);  // the block freed on stream 1, now for stream 2
  EXPECT_EQ(c, a);
  EXPECT_EQ(backing->orders, (std::vector<Pair>{{2, 1}}));
  backing->refuse = true;
  fragscope::FreeStreamOrdered(device, *backing, fences, c, 2);
  const std::uint64_t in_use = device.Stats().in_use;
  EXPECT_THROW(allocate(1), fragscope::BackingError);  // stream 1 must wait for stream 2, and cannot
  EXPECT_EQ(device.Stats().in_use, in_use);             // the block went back
}

TEST(StreamFences, OnlyGpuBackingsOrderStreams) {
  for (const char* conf : {"backing=sim", "backing=host"}) {
    const auto backing = fragscope::MakeBacking(fragscope::ParseAllocConf(conf));
    EXPECT_FALSE(backing->orders_streams()) << conf;
    EXPECT_TRUE(backing->OrderStreams(1, 2));  // a no-op, never a throw
  }
}

}  // namespace
