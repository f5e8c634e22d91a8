// detail::IntervalSet (allocator/src/sim_backing.hpp, internal): the sim backing's free address
// space and mapped pages, and the host backing's mapped pages. Every operation against a plain
// std::vector<bool> of units on seeded random steps: inserts and erases that touch neither, one or
// both neighbours (the in-place paths: an end moved, a start re-keyed, a node split), and the
// queries after each step. The intervals must stay disjoint, merged and exactly the model's runs.
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "../allocator/src/sim_backing.hpp"

namespace fragscope::detail {
namespace {

constexpr std::uint64_t kUnits = 200;
constexpr std::uint64_t kUnit = 4096;  // intervals are in bytes; the model in units of this

struct Model {
  std::vector<bool> set = std::vector<bool>(kUnits, false);
  bool Any(std::uint64_t a, std::uint64_t b) const {
    for (std::uint64_t u = a; u < b; ++u) if (set[u]) return true;
    return false;
  }
  bool All(std::uint64_t a, std::uint64_t b) const {
    for (std::uint64_t u = a; u < b; ++u) if (!set[u]) return false;
    return true;
  }
  std::uint64_t Total() const {
    std::uint64_t n = 0;
    for (bool b : set) n += b ? 1 : 0;
    return n * kUnit;
  }
  std::uint64_t Runs() const {
    std::uint64_t runs = 0;
    for (std::uint64_t u = 0; u < kUnits; ++u) runs += set[u] && (u == 0 || !set[u - 1]) ? 1 : 0;
    return runs;
  }
  // The lowest aligned start of `bytes` inside one run, as FirstFit defines it.
  std::optional<std::uint64_t> FirstFit(std::uint64_t bytes, std::uint64_t alignment) const {
    for (std::uint64_t u = 0; u < kUnits;) {
      if (!set[u]) { ++u; continue; }
      std::uint64_t v = u;
      while (v < kUnits && set[v]) ++v;
      const std::uint64_t begin = u * kUnit, end = v * kUnit;
      const std::uint64_t start = (begin + alignment - 1) / alignment * alignment;
      if (start < end && end - start >= bytes) return start;
      u = v;
    }
    return std::nullopt;
  }
};

void ExpectSame(const IntervalSet& intervals, const Model& model, int step) {
  ASSERT_EQ(intervals.total(), model.Total()) << "step " << step;
  // Adjacent intervals merged: as many intervals as the model has runs.
  ASSERT_EQ(intervals.count(), model.Runs()) << "step " << step;
  for (std::uint64_t u = 0; u < kUnits; ++u) {
    ASSERT_EQ(intervals.Contains(u * kUnit, (u + 1) * kUnit), model.set[u]) << "step " << step << " unit " << u;
  }
}

TEST(IntervalSet, MatchesAModelOverRandomInsertsAndErases) {
  std::mt19937_64 rng(20261125);
  IntervalSet intervals;
  Model model;
  int inserts = 0, erases = 0;
  for (int step = 0; step < 20000; ++step) {
    const std::uint64_t a = rng() % kUnits;
    const std::uint64_t b = a + 1 + rng() % std::min<std::uint64_t>(12, kUnits - a);
    if (rng() % 2 == 0) {
      // Insert needs a range with nothing set: shrink to the first free stretch from `a`.
      if (model.set[a]) continue;
      std::uint64_t end = a;
      while (end < b && !model.set[end]) ++end;
      ASSERT_FALSE(intervals.Intersects(a * kUnit, end * kUnit)) << "step " << step;
      intervals.Insert(a * kUnit, end * kUnit);
      for (std::uint64_t u = a; u < end; ++u) model.set[u] = true;
      ++inserts;
    } else {
      // Erase needs a range wholly set: shrink to the set stretch from `a`.
      if (!model.set[a]) continue;
      std::uint64_t end = a;
      while (end < b && model.set[end]) ++end;
      ASSERT_TRUE(intervals.Contains(a * kUnit, end * kUnit)) << "step " << step;
      intervals.Erase(a * kUnit, end * kUnit);
      for (std::uint64_t u = a; u < end; ++u) model.set[u] = false;
      ++erases;
    }
    ExpectSame(intervals, model, step);
    const std::uint64_t qa = rng() % kUnits, qb = qa + 1 + rng() % (kUnits - qa);
    ASSERT_EQ(intervals.Intersects(qa * kUnit, qb * kUnit), model.Any(qa, qb)) << "step " << step;
    ASSERT_EQ(intervals.Contains(qa * kUnit, qb * kUnit), model.All(qa, qb)) << "step " << step;
    const std::uint64_t want = (1 + rng() % 6) * kUnit, align = kUnit << (rng() % 3);
    ASSERT_EQ(intervals.FirstFit(want, align), model.FirstFit(want, align)) << "step " << step;
  }
  // Both kinds of step ran many times (the random walk did not get stuck full or empty).
  EXPECT_GT(inserts, 3000);
  EXPECT_GT(erases, 3000);
}

TEST(IntervalSet, EachInPlacePathKeepsTheIntervalsExact) {
  IntervalSet s;
  s.Insert(100, 200);
  s.Insert(300, 400);
  s.Insert(200, 300);  // joins both neighbours: one interval
  EXPECT_EQ(s.count(), 1u);
  EXPECT_TRUE(s.Contains(100, 400));
  s.Insert(50, 100);   // joins the next one only: its start moves
  EXPECT_EQ(s.count(), 1u);
  EXPECT_TRUE(s.Contains(50, 400));
  s.Insert(400, 450);  // joins the previous one only: its end moves
  EXPECT_TRUE(s.Contains(50, 450));
  s.Erase(50, 60);     // the front goes: the start moves
  EXPECT_TRUE(s.Contains(60, 450));
  EXPECT_FALSE(s.Intersects(50, 60));
  s.Erase(440, 450);   // the back goes: the end moves
  EXPECT_TRUE(s.Contains(60, 440));
  EXPECT_FALSE(s.Intersects(440, 450));
  s.Erase(200, 210);   // the middle goes: two intervals
  EXPECT_EQ(s.count(), 2u);
  EXPECT_TRUE(s.Contains(60, 200));
  EXPECT_TRUE(s.Contains(210, 440));
  EXPECT_FALSE(s.Intersects(200, 210));
  s.Erase(60, 200);    // a whole interval goes
  EXPECT_EQ(s.count(), 1u);
  EXPECT_EQ(s.total(), 230u);
  EXPECT_EQ(s.FirstFit(100, 1), std::optional<std::uint64_t>(210));
  EXPECT_EQ(s.FirstFit(100, 256), std::optional<std::uint64_t>(256));
  EXPECT_EQ(s.FirstFit(300, 1), std::nullopt);
}

}  // namespace
}  // namespace fragscope::detail
