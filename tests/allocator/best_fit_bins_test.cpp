// BestFitBins (allocator/src/best_fit_bins.hpp, internal) against a brute-force model: seeded random
// inserts and erases of chunks with many equal sizes (so that sub-classes overflow their sorted
// arrays into trees and empty back), checking after each step that best fit, the largest chunk, the
// count and the ordered visit are exactly the model's.
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "../allocator/src/best_fit_bins.hpp"

namespace fragscope::bfc {
namespace {

using Key = std::pair<std::uint64_t, std::uint64_t>;  // (size, address): the bins' order

TEST(BestFitBins, MatchesABruteForceModelThroughArraysAndTrees) {
  std::mt19937_64 rng(20261125);
  constexpr std::size_t kChunks = 3000;
  std::vector<Chunk> chunks(kChunks);
  for (std::size_t i = 0; i < kChunks; ++i) {
    Chunk& c = chunks[i];
    c.address = 0x100000000 + i * 0x100000;
    // A third share eight sizes of one sub-class (256 B .. 2 KiB: exact sub-classes), a third a few
    // sizes in one wide sub-class (2 MiB + k * 256), a third spread over 256 B .. 1 GiB.
    switch (i % 3) {
      case 0: c.size = 256 * (1 + rng() % 8); break;
      case 1: c.size = (2 << 20) + 256 * (rng() % 4); break;
      default: c.size = 256 * (std::uint64_t{1} << (rng() % 22)) + 256 * (rng() % 64); break;
    }
  }
  BestFitBins bins;
  std::set<Key> model;
  std::vector<std::size_t> binned, unbinned(kChunks);
  for (std::size_t i = 0; i < kChunks; ++i) unbinned[i] = i;
  std::size_t max_in_one_size = 0;
  for (int step = 0; step < 30'000; ++step) {
    // Grow towards all chunks binned for the first half, shrink towards none in the second.
    const bool insert = !unbinned.empty() && (binned.empty() || (rng() % 100) < (step < 15'000 ? 65u : 35u));
    // A random chunk from one list to the other: the chunk it moves.
    const auto move_one = [&rng](std::vector<std::size_t>& from, std::vector<std::size_t>& to) {
      const std::size_t k = rng() % from.size();
      const std::size_t index = from[k];
      to.push_back(index);
      from[k] = from.back();
      from.pop_back();
      return index;
    };
    if (insert) {
      Chunk* c = &chunks[move_one(unbinned, binned)];
      bins.Insert(c);
      model.insert({c->size, c->address});
    } else {
      Chunk* c = &chunks[move_one(binned, unbinned)];
      bins.Erase(c);
      model.erase({c->size, c->address});
    }
    ASSERT_EQ(bins.free_chunks(), model.size());
    max_in_one_size = std::max<std::size_t>(max_in_one_size, static_cast<std::size_t>(std::count_if(
        model.begin(), model.end(), [](const Key& key) { return key.first == 256; })));
    for (int q = 0; q < 4; ++q) {
      const std::uint64_t want = q == 0 ? 256 * (1 + rng() % 8) : q == 1 ? (2 << 20) + 256 * (rng() % 5)
                                                                   : 1 + rng() % (std::uint64_t{1} << 30);
      const auto it = model.lower_bound({want, 0});
      const Chunk* found = bins.FindBestFit(want);
      if (it == model.end()) {
        ASSERT_EQ(found, nullptr) << "request " << want;
      } else {
        ASSERT_NE(found, nullptr) << "request " << want;
        ASSERT_EQ(Key(found->size, found->address), *it) << "request " << want << " at step " << step;
      }
    }
    const Chunk* largest = bins.Largest();
    if (model.empty()) {
      ASSERT_EQ(largest, nullptr);
    } else {
      ASSERT_NE(largest, nullptr);
      ASSERT_EQ(Key(largest->size, largest->address), *model.rbegin());
    }
    if (step % 500 == 0 || step == 29'999) {
      std::vector<Key> visited;
      bins.ForEach([&](int bin, int sub, const Chunk& c) {
        EXPECT_EQ(bin, BestFitBins::BinIndex(c.size));
        EXPECT_EQ(sub, BestFitBins::SubIndex(c.size, bin));
        visited.emplace_back(c.size, c.address);
      });
      ASSERT_EQ(visited, std::vector<Key>(model.begin(), model.end())) << "step " << step;
    }
  }
  // The run did overflow sub-classes into trees (dozens of equal 256 B chunks at once) and emptied.
  EXPECT_GT(max_in_one_size, 20u);
  EXPECT_LT(bins.free_chunks(), 200u);
}

}  // namespace
}  // namespace fragscope::bfc
