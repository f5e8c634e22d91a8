// What the benchmarks that compare with glibc share: glibc's heap-only path, and the run.
#pragma once

#include <malloc.h>

#include <cstdio>

#include <benchmark/benchmark.h>

namespace fragscope::bench {

// glibc's heap-only path: no mmap for large requests and no trimming of the top of the heap, set
// before anything allocates, so after warm-up glibc makes no system call (tcache, bins and the top
// chunk only). False, with a message naming `program`, when mallopt refuses.
inline bool GlibcHeapOnly(const char* program) {
  const bool mmap_off = mallopt(M_MMAP_MAX, 0) == 1;
  const bool trim_off = mallopt(M_TRIM_THRESHOLD, -1) == 1;  // (size_t)-1: never trim
  if (!mmap_off || !trim_off) {
    std::fprintf(stderr, "%s: mallopt failed (mmap off: %d, trim off: %d)\n", program, mmap_off, trim_off);
    return false;
  }
  benchmark::AddCustomContext("glibc_malloc", "M_MMAP_MAX=0, M_TRIM_THRESHOLD=max");
  return true;
}

// Runs the registered benchmarks with the command line's flags; 1 for an unknown flag.
inline int RunBenchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace fragscope::bench
