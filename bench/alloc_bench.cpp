// The allocator's hot path: free one live chunk and allocate a new one in its place, with 100,
// 10,000 and 100,000 chunks live; and glibc malloc/free on the very same operation sequence.
//
// Two workloads (see docs/performance.md, "Allocator hot path"):
//   wide:   sizes log-uniform in [256 B, 64 MiB]. fragscope only: its live set (about 5 MiB a
//           chunk, 500 GiB at 100,000 chunks) is address space on the `sim` backing, but glibc
//           would have to sbrk it.
//   shared: sizes log-uniform in [256 B, 256 KiB] (about 37 KiB a chunk, 3.6 GiB at 100,000
//           chunks). fragscope and glibc run the identical sequence.
//
// Every run: allocate the live set, run a warm-up churn (so the allocator holds its regions and
// the free lists are in a steady state), then the timed loop: each iteration frees slot `index`
// and allocates `size` into it, taking (index, size) from a sequence of 2^20 operations generated
// before timing (cycled). Nothing ever reads or writes the memory returned: sim addresses are not
// memory.
//
// glibc: main() turns mmap and trimming off (M_MMAP_MAX=0, M_TRIM_THRESHOLD=max) before any
// benchmark runs, so every malloc/free stays on glibc's user-space heap path (tcache, fast and
// small bins, unsorted and large bins, top chunk) and never makes a system call once the heap has
// grown.
//
// Counters: Time is per iteration = one free + one allocate ("pair"); per_op is per operation (one
// allocate or one free, i.e. half a pair, from CPU time); items_per_second counts operations;
// faults_per_pair counts the page faults taken in the timed loop (glibc writes chunk headers into
// its heap, so it faults pages in as the heap is first used; the sim backing has no memory).
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "glibc_heap_only.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/allocator/stats.hpp"

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

// One step of the churn: free slot `index`, allocate `size` bytes into it.
struct Op {
  std::uint64_t size;
  std::uint32_t index;
  std::uint32_t pad;
};
static_assert(sizeof(Op) == 16);

constexpr std::size_t kOpsLog2 = 20;
constexpr std::size_t kOps = std::size_t{1} << kOpsLog2;  // the timed sequence, cycled
constexpr std::size_t kOpsMask = kOps - 1;
constexpr std::uint64_t kSeed = 0x66726167'73636f70ULL;  // "fragscop"

struct SizeRange {
  std::uint64_t min;
  std::uint64_t max;
};
constexpr SizeRange kWide{256, 64 * MiB};
constexpr SizeRange kShared{256, 256 * KiB};

// fragscope on the sim backing: address space only. 16 TiB holds the wide live set (about 500 GiB
// at 100,000 chunks) many times over, whatever the fragmentation; defaults otherwise (growth on, gc
// on).
// The default policy (paging, unmap=lazy) and the region model it replaced, on the same sequence.
constexpr const char* kFragscopeConf = "backing=sim,capacity=16TiB,limit=16TiB";
constexpr const char* kRegionsConf = "backing=sim,capacity=16TiB,limit=16TiB,growth=on";

struct Workload {
  std::vector<std::uint64_t> initial;  // the live set: one size per slot
  std::vector<Op> ops;                 // kOps operations
  std::size_t warm_ops = 0;            // ops[0, warm_ops): the warm-up churn; timing starts there
};

// Log-uniform integer sizes in [min, max]: exp of a uniform draw between the logs.
class SizeGen {
 public:
  SizeGen(SizeRange range, std::uint64_t seed)
      : rng_(seed),
        range_(range),
        dist_(std::log(static_cast<double>(range.min)),
              std::log(static_cast<double>(range.max) + 1.0)) {}
  std::uint64_t Size() {
    const auto s = static_cast<std::uint64_t>(std::exp(dist_(rng_)));
    return std::clamp(s, range_.min, range_.max);
  }
  std::uint32_t Index(std::size_t live) {
    std::uniform_int_distribution<std::size_t> slot(0, live - 1);
    return static_cast<std::uint32_t>(slot(rng_));
  }

 private:
  std::mt19937_64 rng_;
  SizeRange range_;
  std::uniform_real_distribution<double> dist_;
};

// Generated once per (range, live) and shared by every run that uses it, so that fragscope and
// glibc see the identical sequence.
const Workload& GetWorkload(SizeRange range, std::size_t live) {
  static std::map<std::pair<std::uint64_t, std::size_t>, std::unique_ptr<Workload>> cache;
  auto& slot = cache[{range.max, live}];
  if (!slot) {
    auto w = std::make_unique<Workload>();
    SizeGen gen(range, kSeed ^ (range.max * 0x9e3779b97f4a7c15ULL) ^ live);
    w->initial.resize(live);
    for (auto& s : w->initial) s = gen.Size();
    w->ops.resize(kOps);
    for (auto& op : w->ops) {
      op.index = gen.Index(live);
      op.size = gen.Size();
      op.pad = 0;
    }
    // Enough churn that every slot has been replaced a few times.
    w->warm_ops = std::min(kOps / 2, std::max<std::size_t>(std::size_t{1} << 18, 4 * live));
    slot = std::move(w);
  }
  return *slot;
}

std::int64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

void SetOpCounters(benchmark::State& state, std::size_t live, std::int64_t faults) {
  // Two operations (one free, one allocate) per iteration.
  state.SetItemsProcessed(2 * static_cast<std::int64_t>(state.iterations()));
  // Operations per CPU second, inverted: CPU seconds per operation. The console prints it with an
  // SI prefix ("per_op=41.2ns"); JSON and CSV give seconds.
  state.counters["per_op"] = benchmark::Counter(
      2, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["live"] = static_cast<double>(live);
  // Page faults taken inside the timed loop, per iteration: kernel work, not allocator work.
  state.counters["faults_per_pair"] =
      benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

double ResidentMiB() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * 4096.0 / static_cast<double>(MiB);
}

void BM_Fragscope(benchmark::State& state, SizeRange range, const char* conf) {
  const auto live = static_cast<std::size_t>(state.range(0));
  const Workload& w = GetWorkload(range, live);
  auto system = fragscope::MemorySystem::Create(fragscope::ParseAllocConf(conf));
  fragscope::DeviceAllocator& alloc = system->device(0);
  const fragscope::AllocOptions options{};

  std::vector<void*> slots(live, nullptr);
  for (std::size_t i = 0; i < live; ++i) slots[i] = alloc.Allocate(w.initial[i], options);
  std::size_t pos = 0;
  for (; pos < w.warm_ops; ++pos) {
    const Op& op = w.ops[pos];
    alloc.Free(slots[op.index]);
    slots[op.index] = alloc.Allocate(op.size, options);
  }
  const fragscope::AllocatorStats before = alloc.Stats();
  const std::int64_t faults_before = MinorFaults();
  // Written only on OOM; declared outside the loop so that the loop constructs nothing.
  fragscope::OomReport report;
  std::string error;

  for (auto _ : state) {
    const Op& op = w.ops[pos & kOpsMask];
    ++pos;
    alloc.Free(slots[op.index]);
    void* p = alloc.TryAllocate(op.size, options, &report);
    benchmark::DoNotOptimize(p);
    slots[op.index] = p;
    if (p == nullptr) [[unlikely]] {
      error = "fragscope: " + report.Summary();
      state.SkipWithError(error.c_str());
      break;
    }
  }

  const std::int64_t faults = MinorFaults() - faults_before;
  const fragscope::AllocatorStats after = alloc.Stats();
  SetOpCounters(state, live, faults);
  state.counters["regions"] = static_cast<double>(after.regions);
  state.counters["chunks"] = static_cast<double>(after.chunks);
  state.counters["free_chunks"] = static_cast<double>(after.free_chunks);
  state.counters["reserved_GiB"] =
      static_cast<double>(after.reserved) / static_cast<double>(1024 * MiB);
  state.counters["new_regions"] =
      static_cast<double>(after.region_reserves - before.region_reserves);
  for (void* p : slots)
    if (p != nullptr) alloc.Free(p);
}

void BM_Glibc(benchmark::State& state, SizeRange range) {
  const auto live = static_cast<std::size_t>(state.range(0));
  const Workload& w = GetWorkload(range, live);

  std::vector<void*> slots(live, nullptr);
  bool failed = false;
  for (std::size_t i = 0; i < live && !failed; ++i) {
    slots[i] = std::malloc(w.initial[i]);
    failed = slots[i] == nullptr;
  }
  std::size_t pos = 0;
  for (; pos < w.warm_ops && !failed; ++pos) {
    const Op& op = w.ops[pos];
    std::free(slots[op.index]);
    slots[op.index] = std::malloc(op.size);
    failed = slots[op.index] == nullptr;
  }
  if (failed) state.SkipWithError("glibc: malloc failed while building the live set");
  const std::int64_t faults_before = MinorFaults();

  for (auto _ : state) {
    const Op& op = w.ops[pos & kOpsMask];
    ++pos;
    std::free(slots[op.index]);
    void* p = std::malloc(op.size);
    benchmark::DoNotOptimize(p);
    slots[op.index] = p;
    if (p == nullptr) [[unlikely]] {
      state.SkipWithError("glibc: malloc failed in the timed loop");
      break;
    }
  }

  SetOpCounters(state, live, MinorFaults() - faults_before);
  state.counters["rss_MiB"] = ResidentMiB();
  for (void* p : slots) std::free(p);
}

void Register() {
  constexpr std::array<std::int64_t, 3> kLive{100, 10'000, 100'000};
  auto add = [&](const std::string& name, auto fn, SizeRange range, auto... extra) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), fn, range, extra...);
    b->ArgName("live");
    for (std::int64_t n : kLive) b->Arg(n);
  };
  add("fragscope/wide_256B-64MiB", BM_Fragscope, kWide, kFragscopeConf);
  add("fragscope/shared_256B-256KiB", BM_Fragscope, kShared, kFragscopeConf);
  add("fragscope_regions/wide_256B-64MiB", BM_Fragscope, kWide, kRegionsConf);
  add("fragscope_regions/shared_256B-256KiB", BM_Fragscope, kShared, kRegionsConf);
  add("glibc/shared_256B-256KiB", BM_Glibc, kShared);
}

}  // namespace

int main(int argc, char** argv) {
  if (!fragscope::bench::GlibcHeapOnly("alloc_bench")) return 1;
  benchmark::AddCustomContext("fragscope_conf", kFragscopeConf);
  benchmark::AddCustomContext("fragscope_regions_conf", kRegionsConf);
  benchmark::AddCustomContext("ops_sequence", "2^20 (index, size) pairs, pre-generated, cycled");
  Register();
  return fragscope::bench::RunBenchmarks(argc, argv);
}
