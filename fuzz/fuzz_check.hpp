// What every fuzz target asserts with: a broken invariant aborts, which libFuzzer reports as a
// finding with the input that caused it (assert would vanish under NDEBUG).
#pragma once

#include <cstdlib>

namespace fragscope::fuzz {

inline void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace fragscope::fuzz
