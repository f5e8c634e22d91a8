// The BFC allocator's bookkeeping records. Internal to allocator/src.
#pragma once

#include <cstdint>

#include <boost/intrusive/set_hook.hpp>

#include "fragscope/traces/event.hpp"

namespace fragscope::bfc {

struct Region;

// A piece of a region, entirely free or entirely in use. Chunks of a region form a doubly linked
// list in address order that tiles the region exactly.
struct Chunk {
  // Linked into one bin of BestFitBins while the chunk is free. Intrusive, so binning a chunk never
  // allocates. The colour has its own field rather than the parent pointer's low bit
  // (optimize_size): 8 bytes more per record, and about 30 fewer instructions per free + allocate
  // pair on the shared PyTorch sequences (callgrind; docs/performance.md).
  using BinHook = boost::intrusive::set_member_hook<
      boost::intrusive::link_mode<boost::intrusive::normal_link>,
      boost::intrusive::optimize_size<false>>;
  BinHook bin_hook;

  std::uint64_t address = 0;
  std::uint64_t size = 0;        // rounded bytes, a multiple of 256
  std::uint64_t requested = 0;   // what the caller asked for; 0 while free
  std::uint64_t alloc_id = 0;    // 1, 2, 3, ... per allocation; 0 while free
  std::uint64_t stream = 0;
  Chunk* prev = nullptr;         // address neighbours inside the same region
  Chunk* next = nullptr;
  Region* region = nullptr;
  traces::TagId tag = traces::kNoTag;
  // While binned: the (class, sub-class) it is binned under, so that erasing it computes nothing
  // (BestFitBins). Fits in the padding after `tag`.
  std::uint16_t bin_class = 0;
  std::uint16_t bin_sub = 0;

  bool in_use() const { return alloc_id != 0; }
  std::uint64_t end() const { return address + size; }
};

// One contiguous range obtained from the backing.
struct Region {
  std::uint64_t base = 0;
  std::uint64_t size = 0;        // bytes tiled by chunks (mapped bytes of an expandable region)
  std::uint64_t max_size = 0;    // address space held: > size only for an expandable region
  Chunk* first = nullptr;
  Chunk* last = nullptr;         // kept so an expandable region can grow at its end in O(1)
  std::uint64_t live_chunks = 0; // chunks in use; 0 means gc may release the region
  bool expandable = false;
};

}  // namespace fragscope::bfc
