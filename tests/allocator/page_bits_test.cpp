// PageBits and PageMap (allocator/src/page_map.hpp, internal): every range operation against a
// plain std::vector<bool> on seeded random ranges, including ranges inside one word (the hot path's
// shortcut), across word boundaries, empty ones and ones that end at the map's last page.
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "../allocator/src/page_map.hpp"

namespace fragscope::bfc {
namespace {

constexpr std::uint64_t kPages = 300;  // not a multiple of 64: the last word is partial

struct Model {
  std::vector<bool> bits = std::vector<bool>(kPages, false);
  std::uint64_t Count(std::uint64_t first, std::uint64_t end) const {
    std::uint64_t n = 0;
    for (std::uint64_t p = first; p < end; ++p) n += bits[p] ? 1 : 0;
    return n;
  }
};

void ExpectSame(const PageBits& bits, const Model& model) {
  for (std::uint64_t p = 0; p < kPages; ++p) ASSERT_EQ(bits.Test(p), model.bits[p]) << "page " << p;
}

// A range [first, end): a third inside one word, a third across words, a third anywhere (some empty).
std::pair<std::uint64_t, std::uint64_t> RandomRange(std::mt19937_64& rng) {
  std::uniform_int_distribution<std::uint64_t> page(0, kPages);
  const auto kind = rng() % 3;
  if (kind == 0) {
    const std::uint64_t word = rng() % (kPages / 64);
    const std::uint64_t a = word * 64 + rng() % 64, b = word * 64 + rng() % 64;
    return {std::min(a, b), std::max(a, b) + 1};
  }
  if (kind == 1) {
    const std::uint64_t boundary = 64 * (1 + rng() % (kPages / 64));
    return {boundary - 1 - rng() % 10, std::min(kPages, boundary + 1 + rng() % 70)};
  }
  std::uint64_t a = page(rng), b = page(rng);
  if (a > b) std::swap(a, b);
  return {a, b};
}

TEST(PageBits, EveryOperationMatchesABitVector) {
  std::mt19937_64 rng(20261125);
  PageBits bits, other;
  bits.Reset(kPages);
  other.Reset(kPages);
  Model model, other_model;
  EXPECT_EQ(bits.capacity(), 320u);
  for (int step = 0; step < 20'000; ++step) {
    const auto [first, end] = RandomRange(rng);
    switch (rng() % 6) {
      case 0:
        if (rng() % 2 == 0) {
          ASSERT_EQ(bits.Set(first, end), (end - first) - model.Count(first, end));
        } else {
          bits.Fill(first, end);
        }
        for (auto p = first; p < end; ++p) model.bits[p] = true;
        break;
      case 1:
        if (first < end && rng() % 2 == 0) {
          bits.ClearSpan(first, end - 1);
        } else {
          bits.Clear(first, end);
        }
        for (auto p = first; p < end; ++p) model.bits[p] = false;
        break;
      case 2:
        ASSERT_EQ(bits.ClearCounted(first, end), model.Count(first, end));
        for (auto p = first; p < end; ++p) model.bits[p] = false;
        break;
      case 3:
        other.Set(first, end);
        for (auto p = first; p < end; ++p) other_model.bits[p] = true;
        break;
      case 4: {
        const auto [a, b] = RandomRange(rng);
        bits.SetWhere(other, a, b);
        for (auto p = a; p < b; ++p) model.bits[p] = model.bits[p] || other_model.bits[p];
        break;
      }
      default:
        other.Clear(first, end);
        for (auto p = first; p < end; ++p) other_model.bits[p] = false;
        break;
    }
    const auto [a, b] = RandomRange(rng);
    ASSERT_EQ(bits.CountSet(a, b), model.Count(a, b));
    ASSERT_EQ(bits.AllSet(a, b), model.Count(a, b) == b - a) << a << ".." << b;
    if (a < b) {
      ASSERT_EQ(bits.AllSetSpan(a, b - 1), model.Count(a, b) == b - a) << a << ".." << b;
    }
    std::uint64_t next = b, prev = a;
    for (auto p = a; p < b; ++p) if (model.bits[p]) { next = p; break; }
    for (auto p = b; p > a; --p) if (model.bits[p - 1]) { prev = p; break; }
    ASSERT_EQ(bits.Next(a, b, true), next);
    ASSERT_EQ(bits.Prev(a, b, true), prev);
    std::uint64_t prev_clear = a, next_clear = b;
    for (auto p = b; p > a; --p) if (!model.bits[p - 1]) { prev_clear = p; break; }
    for (auto p = a; p < b; ++p) if (!model.bits[p]) { next_clear = p; break; }
    ASSERT_EQ(bits.Prev(a, b, false), prev_clear) << a << ".." << b;
    ASSERT_EQ(bits.Next(a, b, false), next_clear) << a << ".." << b;
  }
  ExpectSame(bits, model);
  ExpectSame(other, other_model);
}

TEST(PageBits, RunsUpAndDownAndTheFirstMismatch) {
  PageBits bits;
  bits.Reset(kPages);
  bits.Set(3, 5);
  bits.Set(63, 129);
  bits.Set(299, 300);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> up, down, gaps;
  bits.ForEachRun(0, kPages, true, [&](std::uint64_t a, std::uint64_t b) { up.emplace_back(a, b); });
  bits.ForEachRun(0, 70, false, [&](std::uint64_t a, std::uint64_t b) { gaps.emplace_back(a, b); });
  bits.ForEachSetRunDown(4, kPages, [&](std::uint64_t a, std::uint64_t b) {
    down.emplace_back(a, b);
    return down.size() < 2;  // stops after two
  });
  using Runs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  EXPECT_EQ(up, (Runs{{3, 5}, {63, 129}, {299, 300}}));
  EXPECT_EQ(gaps, (Runs{{0, 3}, {5, 63}}));
  EXPECT_EQ(down, (Runs{{299, 300}, {63, 129}}));

  // mapped & ~touched, compared with a "cached" map that is missing page 100 and has page 4 extra.
  PageBits mapped, touched, cached;
  mapped.Reset(kPages);
  touched.Reset(kPages);
  cached.Reset(kPages);
  mapped.Set(0, 200);
  touched.Set(0, 10);
  cached.Set(10, 200);
  EXPECT_EQ(cached.FirstMismatch(mapped, touched, kPages), kPages);
  cached.Clear(100, 101);
  EXPECT_EQ(cached.FirstMismatch(mapped, touched, kPages), 100u);
  EXPECT_EQ(cached.FirstMismatch(mapped, touched, 100), 100u);  // the end is not compared
  cached.Set(4, 5);
  EXPECT_EQ(cached.FirstMismatch(mapped, touched, kPages), 4u);
}

TEST(PageMap, PagesOfAnAddressRangeAndTheMappedCount) {
  PageMap map;
  const std::uint64_t base = 0x7f0000000000, page = 2 << 20;
  map.Reset(base, 256 * page, page);
  EXPECT_EQ(map.pages(), 256u);
  EXPECT_EQ(map.page_bytes(), page);
  // A chunk of 3 MiB starting 1 MiB into page 5 (MiB 11 to 14) touches pages 5 and 6 and holds page 6 whole.
  const std::uint64_t at = base + 5 * page + (1 << 20), bytes = 3 << 20;
  EXPECT_EQ(map.FirstPage(at), 5u);
  EXPECT_EQ(map.EndPage(at, bytes), 7u);
  EXPECT_EQ(map.FirstWholePage(at), 6u);
  EXPECT_EQ(map.EndWholePage(at, bytes), 7u);
  EXPECT_EQ(map.EndWholePage(at, bytes - 256), 6u);  // no whole page
  EXPECT_EQ(map.AddressOf(6), base + 6 * page);
  EXPECT_FALSE(map.Covers(at, bytes));
  map.Set(5, 6);
  EXPECT_FALSE(map.Covers(at, bytes));
  map.Set(4, 7);
  EXPECT_TRUE(map.Covers(at, bytes));
  EXPECT_EQ(map.mapped_pages(), 3u);
  EXPECT_EQ(map.mapped_bytes(), 3 * page);
  EXPECT_EQ(map.high_water(), 7u);
  map.Set(60, 70);  // across a word boundary
  EXPECT_EQ(map.mapped_pages(), 13u);
  EXPECT_TRUE(map.Covers(base + 60 * page, 10 * page));
  map.Clear(0, 65);
  EXPECT_EQ(map.mapped_pages(), 5u);
  EXPECT_FALSE(map.Covers(base + 60 * page, 10 * page));
  EXPECT_TRUE(map.Covers(base + 65 * page, 5 * page));
  EXPECT_EQ(map.high_water(), 70u);  // the high water stays: scans stop there
}

// Covers answers from the mapped prefix when a chunk ends inside it: the prefix must follow every
// Set and Clear exactly. Seeded random ranges against a per-page model, and Covers against the
// model for random spans after each step.
TEST(PageMap, MappedPrefixFollowsEverySetAndClear) {
  PageMap map;
  const std::uint64_t base = 0x7f0000000000, page = 2 << 20, pages = 300;
  map.Reset(base, pages * page, page);
  EXPECT_EQ(map.mapped_prefix(), 0u);
  EXPECT_FALSE(map.Covers(base, 256));
  std::vector<bool> model(pages, false);
  std::mt19937_64 rng(20261125);
  for (int step = 0; step < 20000; ++step) {
    // Mostly short ranges near the prefix, where it moves; sometimes anywhere.
    const std::uint64_t near = std::min<std::uint64_t>(map.mapped_prefix(), pages - 1);
    std::uint64_t first = rng() % 4 == 0 ? rng() % pages : std::min<std::uint64_t>(pages - 1, near + rng() % 5 - std::min<std::uint64_t>(near, 2));
    const std::uint64_t end = std::min(pages, first + 1 + rng() % (rng() % 8 == 0 ? 90 : 4));
    const bool set = rng() % 3 != 0;
    if (set) map.Set(first, end);
    else map.Clear(first, end);
    for (std::uint64_t p = first; p < end; ++p) model[p] = set;
    std::uint64_t prefix = 0;
    while (prefix < pages && model[prefix]) ++prefix;
    ASSERT_EQ(map.mapped_prefix(), prefix) << "step " << step;
    for (int probe = 0; probe < 4; ++probe) {
      const std::uint64_t at = base + (rng() % pages) * page + (rng() % (page / 256)) * 256;
      const std::uint64_t bytes = 256 * (1 + rng() % (4 * page / 256));
      if (at + bytes > base + pages * page) continue;
      bool covered = true;
      for (std::uint64_t p = (at - base) / page; p <= (at + bytes - 1 - base) / page; ++p) covered = covered && model[p];
      ASSERT_EQ(map.Covers(at, bytes), covered) << "step " << step << ", " << bytes << " bytes at page offset " << (at - base) / page;
    }
  }
  map.Set(0, pages);
  EXPECT_EQ(map.mapped_prefix(), pages);
  EXPECT_TRUE(map.Covers(base + (pages - 1) * page, page));
}

}  // namespace
}  // namespace fragscope::bfc
