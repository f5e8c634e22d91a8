// Which streams must wait for which before memory freed on one is used on another.
//
// A caching allocator hands a freed block to the next request at once. On a GPU the kernels that
// used the block may still be queued on the stream it was freed on (stream-ordered semantics: the
// free is a host call, the work is not finished). PyTorch keeps one pool per stream for this;
// fragscope's allocators share one pool per device, so a caller that uses several streams orders
// them instead: before memory allocated for stream T is used, T waits for the work queued so far
// on every other stream S that has freed memory since T last waited for S. One stream costs
// nothing; two streams that take turns cost one event record and one stream wait per turn, on the
// GPU, without blocking the host. Conservative: T waits for S even when the block it got was not
// S's, because after coalescing a block may hold memory freed on several streams.
//
// Thread-safe. Call Freed(S) *before* the block goes back to the allocator, so that any request
// that can be handed the block already sees the free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/device_allocator.hpp"

namespace fragscope {

class StreamFences {
 public:
  // A block allocated for (and freed on) `stream` is about to go back to the allocator.
  void Freed(std::uint64_t stream) {
    std::lock_guard guard(mutex_);
    for (Freeing& f : freeing_) {
      if (f.stream == stream) {
        ++f.frees;
        return;
      }
    }
    freeing_.push_back(Freeing{stream, 1});
  }

  // Memory was just allocated for `stream`: calls order(stream, other) for each other stream whose
  // frees `stream` has not waited for yet, and records that it has. `order` returns false when the
  // other stream is gone (its work was waited for another way): that stream is then forgotten. It
  // may throw; the stream pair is then not marked, so the next request tries again.
  template <typename Order>
  void BeforeUse(std::uint64_t stream, Order&& order) {
    std::lock_guard guard(mutex_);
    for (std::size_t i = 0; i < freeing_.size();) {
      const Freeing f = freeing_[i];
      if (f.stream == stream) {
        ++i;
        continue;
      }
      std::uint64_t& waited = WaitedFor(stream, f.stream);
      if (waited == f.frees) {
        ++i;
        continue;
      }
      if (order(stream, f.stream)) {
        waited = f.frees;
        ++i;
      } else {
        Forget(f.stream);  // removes freeing_[i]: the next one moves into place
      }
    }
  }

  // Streams that have freed memory, for tests and logs.
  std::size_t freeing_streams() const {
    std::lock_guard guard(mutex_);
    return freeing_.size();
  }

 private:
  struct Freeing {
    std::uint64_t stream;
    std::uint64_t frees;  // how many blocks were freed on it so far
  };
  struct Waited {
    std::uint64_t waiting, freed_on, frees;  // `waiting` has waited for the first `frees` of them
  };
  void Forget(std::uint64_t stream) {
    std::erase_if(freeing_, [stream](const Freeing& f) { return f.stream == stream; });
    std::erase_if(waited_, [stream](const Waited& w) { return w.waiting == stream || w.freed_on == stream; });
  }
  std::uint64_t& WaitedFor(std::uint64_t waiting, std::uint64_t freed_on) {
    for (Waited& w : waited_) {
      if (w.waiting == waiting && w.freed_on == freed_on) return w.frees;
    }
    waited_.push_back(Waited{waiting, freed_on, 0});
    return waited_.back().frees;
  }

  mutable std::mutex mutex_;
  std::vector<Freeing> freeing_;  // a handful of streams: a vector beats a map
  std::vector<Waited> waited_;
};

// The pattern a caller with several streams follows, in one place (the PyTorch shim uses it).
// Allocates for options.stream and, where the backing orders streams, makes that stream wait for
// the other streams' frees. nullptr on OOM (`report` filled). When the device refuses to order, the
// block is given back and BackingError propagates.
inline void* AllocateStreamOrdered(DeviceAllocator& allocator, Backing& backing, StreamFences& fences,
                                   std::uint64_t bytes, const AllocOptions& options, OomReport* report) {
  void* ptr = allocator.TryAllocate(bytes, options, report);
  if (ptr == nullptr || !backing.orders_streams()) return ptr;
  try {
    fences.BeforeUse(options.stream, [&backing](std::uint64_t waiting, std::uint64_t freed_on) {
      return backing.OrderStreams(waiting, freed_on);
    });
  } catch (...) {
    allocator.Free(ptr);
    throw;
  }
  return ptr;
}

// Frees `ptr`, allocated for `stream`: the free is noted before the block can be handed out again.
inline void FreeStreamOrdered(DeviceAllocator& allocator, const Backing& backing, StreamFences& fences, void* ptr,
                              std::uint64_t stream) {
  if (backing.orders_streams()) fences.Freed(stream);
  allocator.Free(ptr);
}

}  // namespace fragscope
