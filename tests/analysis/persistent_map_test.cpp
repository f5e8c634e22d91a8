// The timeline's copy-on-write chunk map against std::map: every operation on seeded random keys,
// with leaves splitting, thinning and merging, and frozen views that must not change afterwards.
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "../../inspector/analysis/src/timeline_pmap.hpp"

namespace fragscope::analysis::timeline_detail {
namespace {

using Model = std::map<std::uint64_t, std::uint64_t>;

const MapEntry* ModelFloor(const Model& m, std::uint64_t key, MapEntry* out) {
  auto it = m.upper_bound(key);
  if (it == m.begin()) return nullptr;
  --it;
  *out = {it->first, it->second};
  return out;
}

const MapEntry* ModelCeil(const Model& m, std::uint64_t key, MapEntry* out) {
  auto it = m.lower_bound(key);
  if (it == m.end()) return nullptr;
  *out = {it->first, it->second};
  return out;
}

void ExpectEntry(const MapEntry* got, const MapEntry* want, const char* what, std::uint64_t key) {
  ASSERT_EQ(got == nullptr, want == nullptr) << what << " of " << key;
  if (want == nullptr) return;
  EXPECT_EQ(got->key, want->key) << what << " of " << key;
  EXPECT_EQ(got->value, want->value) << what << " of " << key;
}

Model Contents(const PersistentMap::Frozen& frozen) {
  Model out;
  for (const auto& leaf : frozen) {
    for (std::uint32_t i = 0; i < leaf->count; ++i) out.emplace(leaf->entries[i].key, leaf->entries[i].value);
  }
  return out;
}

TEST(PersistentMap, EveryOperationAgreesWithStdMap) {
  std::mt19937_64 rng(41);
  PersistentMap map;
  Model model;
  std::vector<std::pair<PersistentMap::Frozen, Model>> frozen;
  std::uint64_t value = 0;
  // Phases of growth and shrinkage over a small key space, so that keys collide, leaves fill and
  // split, then thin out and merge.
  for (int step = 0; step < 60'000; ++step) {
    const bool growing = (step / 5'000) % 2 == 0;
    const std::uint64_t key = rng() % 4'000 * 16;
    const int op = static_cast<int>(rng() % 10);
    MapEntry want_floor, want_ceil;
    const MapEntry* wf = ModelFloor(model, key, &want_floor);
    const MapEntry* wc = ModelCeil(model, key, &want_ceil);
    if (op < (growing ? 5 : 2)) {
      const PersistentMap::Position at = map.Locate(key);
      ExpectEntry(at.floor, wf, "Locate floor", key);
      ExpectEntry(at.ceil, wc, "Locate ceil", key);
      if (!model.contains(key)) {
        map.InsertAt(at, key, ++value);
        model.emplace(key, value);
      }
    } else if (op < 7) {
      std::uint64_t got = 0;
      const auto it = model.find(key);
      ASSERT_EQ(map.Take(key, &got), it != model.end()) << key;
      if (it != model.end()) {
        EXPECT_EQ(got, it->second);
        model.erase(it);
      }
    } else if (op == 7) {
      ASSERT_EQ(map.Insert(key, ++value), !model.contains(key));
      model.emplace(key, value);  // no change when present, as Insert
    } else if (op == 8) {
      ASSERT_EQ(map.Erase(key), model.erase(key) == 1);
    } else {
      ExpectEntry(map.Floor(key), wf, "Floor", key);
      ExpectEntry(map.Ceil(key), wc, "Ceil", key);
      const auto it = model.find(key);
      const MapEntry* found = map.Find(key);
      ASSERT_EQ(found != nullptr, it != model.end());
      if (found != nullptr) {
        EXPECT_EQ(found->value, it->second);
      }
    }
    ASSERT_EQ(map.size(), model.size());
    if (step % 997 == 0) frozen.emplace_back(map.Freeze(), model);
  }
  EXPECT_EQ(Contents(map.Freeze()), model);
  for (const auto& [view, contents] : frozen) EXPECT_EQ(Contents(view), contents);
}

TEST(PersistentMap, InsertAtAFullLeafSplitsAroundTheKey) {
  // A full leaf of keys 0, 10, ..., 310: insert at each place in turn (in a fresh copy), every
  // entry in order afterwards, both halves in use.
  for (std::uint64_t key = 5; key <= 315; key += 10) {
    PersistentMap map;
    for (std::uint64_t k = 0; k < PersistentMap::kLeafCapacity; ++k) ASSERT_TRUE(map.Insert(k * 10, k));
    ASSERT_EQ(map.leaf_count(), 1u);
    map.InsertAt(map.Locate(key), key, 999);
    EXPECT_EQ(map.leaf_count(), 2u);
    const Model contents = Contents(map.Freeze());
    ASSERT_EQ(contents.size(), PersistentMap::kLeafCapacity + 1);
    EXPECT_EQ(contents.at(key), 999u);
    ASSERT_NE(map.Find(key), nullptr) << key;
    ExpectEntry(map.Floor(key + 1), map.Find(key), "Floor", key + 1);
  }
}

}  // namespace
}  // namespace fragscope::analysis::timeline_detail
