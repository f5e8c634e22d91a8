// The allocator's one lock. Critical sections on the hot path are a few hundred instructions, so
// a test-and-test-and-set spin lock (a single atomic exchange when free, and a plain store to
// release) costs a fraction of a pthread mutex. A waiter spins briefly, then yields its core, so a
// holder on the slow path (a backing call that maps memory) does not starve it. Meets the
// Lockable requirements, for std::lock_guard.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fragscope {

class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      int spins = 0;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          Pause();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace fragscope
