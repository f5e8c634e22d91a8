// Private to the timeline model: a sorted map u64 -> u64 (chunk address -> index of its alloc
// event) stored as a vector of small sorted leaves held by shared pointers, so that a keyframe is a
// copy of the leaf pointers (16 bytes per leaf of up to 32 entries) and shares every leaf with the
// live map and with the other keyframes. A leaf that a keyframe holds is copied on its next write
// (copy on write), so a keyframe costs the leaf pointers plus the leaves written since the previous
// keyframe: a live set that changes at a few places between keyframes costs little, whatever its
// size.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace fragscope::analysis::timeline_detail {

struct MapEntry {
  std::uint64_t key = 0;
  std::uint64_t value = 0;
};

class PersistentMap {
 public:
  static constexpr std::uint32_t kLeafCapacity = 32;
  struct Leaf {
    std::uint32_t count = 0;
    MapEntry entries[kLeafCapacity];
  };
  // An immutable view: the leaves in key order.
  using Frozen = std::vector<std::shared_ptr<const Leaf>>;
  // Heap bytes of one leaf with its shared_ptr control block (make_shared).
  static constexpr std::uint64_t kLeafBytes = sizeof(Leaf) + 16;

  const MapEntry* Find(std::uint64_t key) const;
  const MapEntry* Floor(std::uint64_t key) const;  // the largest key <= key
  const MapEntry* Ceil(std::uint64_t key) const;   // the smallest key >= key
  bool Insert(std::uint64_t key, std::uint64_t value);  // false (and no change) if present
  bool Erase(std::uint64_t key);                        // false if absent

  // Where a key is or would go, with its neighbours, from one search: the index's alloc checks
  // both neighbours and then inserts, which as Floor, Ceil and Insert took three.
  struct Position {
    std::size_t leaf = 0;             // the leaf that holds it or would
    std::uint32_t index = 0;          // its place there (the first entry not below it)
    const MapEntry* floor = nullptr;  // the largest key <= key
    const MapEntry* ceil = nullptr;   // the smallest key >= key
  };
  Position Locate(std::uint64_t key) const;
  // Inserts `key`, which must be absent, at the Position that Locate(key) returned with no change
  // to the map since.
  void InsertAt(const Position& at, std::uint64_t key, std::uint64_t value);
  // Removes `key` and gives its value; false (and no change) if absent.
  bool Take(std::uint64_t key, std::uint64_t* value);
  std::uint64_t size() const { return size_; }
  std::uint64_t leaf_count() const { return leaves_.size(); }

  // Shares the current contents; every leaf becomes copy-on-write.
  Frozen Freeze();
  // Bytes of leaves created since the last Freeze (what the next keyframe keeps alive).
  std::uint64_t fresh_bytes() const { return fresh_bytes_; }

 private:
  std::size_t LeafFor(std::uint64_t key) const;  // last leaf whose first key <= key (or 0)
  Leaf& Writable(std::size_t leaf);
  std::shared_ptr<Leaf> NewLeaf();
  void RemoveLeaf(std::size_t leaf);

  std::vector<std::shared_ptr<Leaf>> leaves_;
  std::vector<std::uint64_t> firsts_;  // first key of each leaf
  std::uint64_t size_ = 0;
  std::uint64_t fresh_bytes_ = 0;
};

}  // namespace fragscope::analysis::timeline_detail
