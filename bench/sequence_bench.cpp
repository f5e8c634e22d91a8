// Real allocation sequences replayed through fragscope and through glibc's heap-only malloc/free,
// the very same operations in the same binary: the comparison alloc_bench makes on random victims,
// made here on what programs actually did.
//
// Sequences: the PyTorch memory snapshots with trace events in the shared data directory
// (<shared>/torch/*.pickle; states are skipped: one moment has no order to replay), read with the
// project's own importers (evidence::EvidenceInput, analysis::BuildAllocationSequence, as
// `fragscope replay` does), one sequence per device; plus `fragscope synth`'s workload (200,000
// events, seed 11), which needs no data. <shared> is $FRAGSCOPE_SHARED_DATA, --shared_data=DIR,
// or ../shared/data beside the source tree; when it is absent only the synth sequence runs.
//
// Each sequence becomes, before anything is timed, an array of (slot, size, kind) operations:
// slots are reused as soon as their allocation is freed, so the pointer table is as small as the
// largest live set. Blocks that were live when PyTorch started recording (the importer lays them
// out as the first `reconstructed_events` events) are the `setup`: allocated before each pass with
// the timer paused. A pass = every recorded alloc and free in order, then a free of everything
// still live, so each pass starts from the same state. A request that failed in the trace (its oom
// event) is asked again and, if granted, freed at once, as `fragscope replay` does.
//
// Benchmarks: fragscope/<sequence>/<conf label> for each entry of kConfs, glibc/<sequence>. One
// untimed pass runs first (regions reserved, glibc's heap grown), so timing covers a warm allocator.
// Counters: per_op = CPU time per operation (an allocate or a free; a re-asked failed request
// counts 2); ops = operations per pass; setup = blocks allocated untimed; max_live = slots.
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "vector_sink.hpp"
#include "glibc_heap_only.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/allocator/stats.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/synth.hpp"
#include "fragscope/evidence/evidence_input.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::analysis::AllocationOp;
using fragscope::analysis::AllocationSequence;

// The fragscope configurations every sequence runs under: one table, so that a policy is added by
// one line. A configuration ParseAllocConf refuses (a key this build does not have yet) is skipped
// with a message rather than failing the whole binary.
struct Conf {
  const char* label;
  const char* text;
};
constexpr Conf kConfs[] = {
    {"default", "backing=sim,capacity=80GiB"},  // paging, unmap=lazy
    {"eager", "backing=sim,capacity=80GiB,unmap=eager"},
    {"growth", "backing=sim,capacity=80GiB,growth=on"},
    {"growth_off", "backing=sim,capacity=80GiB,growth=off"},
};

constexpr std::uint64_t kSynthEvents = 200'000;  // about 5 ms a pass: cheap to build and to run
constexpr std::uint64_t kSynthSeed = 11;         // training_bench's seed

enum class Kind : std::uint32_t {
  kAlloc,  // allocate `size` into `slot`
  kFree,   // free `slot`
  kProbe,  // a request that failed in the trace: allocate `size`, free it at once if granted
};
struct Op {
  std::uint64_t size;
  std::uint32_t slot;
  Kind kind;
};

struct Sequence {
  std::string name;
  std::vector<Op> setup;  // untimed allocations of what was live before recording
  std::vector<Op> ops;    // the timed pass
  std::uint32_t slots = 0;
  std::uint64_t counted_ops = 0;  // per pass, a probe counting 2
  std::uint64_t peak_load = 0;    // bytes: what glibc's heap has to grow to, at least
  std::uint64_t probes = 0;       // requests that failed in the trace, asked again
};

// Turns one device's ops into slot-indexed operations. Frees are already matched to their
// allocation by the builder (unmatched ones dropped), so each free finds its slot.
Sequence ToOps(const AllocationSequence& sequence, std::uint32_t device, std::uint64_t reconstructed,
               std::string name) {
  Sequence out;
  out.name = std::move(name);
  std::unordered_map<std::uint32_t, std::uint32_t> slot_of;  // allocation index -> slot
  std::vector<std::uint32_t> free_slots;
  std::unordered_map<std::uint32_t, std::uint64_t> size_of;
  std::uint64_t load = 0;
  for (const AllocationOp& op : sequence.ops) {
    if (op.device != device) continue;
    if (op.allocation == AllocationOp::kNoAllocation) {
      out.ops.push_back({op.size, 0, Kind::kProbe});
      ++out.probes;
      out.peak_load = std::max(out.peak_load, load + op.size);
      continue;
    }
    if (op.is_free) {
      const auto it = slot_of.find(op.allocation);
      if (it == slot_of.end()) continue;
      out.ops.push_back({op.size, it->second, Kind::kFree});
      free_slots.push_back(it->second);
      slot_of.erase(it);
      load -= op.size;
      continue;
    }
    std::uint32_t slot = out.slots;
    if (free_slots.empty()) {
      ++out.slots;
    } else {
      slot = free_slots.back();
      free_slots.pop_back();
    }
    slot_of[op.allocation] = slot;
    size_of[op.allocation] = op.size;
    load += op.size;
    out.peak_load = std::max(out.peak_load, load);
    (op.seq < reconstructed ? out.setup : out.ops).push_back({op.size, slot, Kind::kAlloc});
  }
  // What the trace leaves live, freed in allocation order (not hash order) so the pass is closed.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> left(slot_of.begin(), slot_of.end());
  std::sort(left.begin(), left.end());
  for (const auto& [allocation, slot] : left) out.ops.push_back({size_of[allocation], slot, Kind::kFree});
  for (const Op& op : out.ops) out.counted_ops += op.kind == Kind::kProbe ? 2 : 1;
  return out;
}

// Stable addresses: the registered benchmarks keep pointers to their sequence.
std::deque<Sequence>& Sequences() {
  static std::deque<Sequence> sequences;
  return sequences;
}

void AddAllDevices(const AllocationSequence& sequence, std::uint64_t reconstructed, const std::string& name) {
  for (std::uint32_t device : sequence.devices) {
    // A device suffix only where a file has several, so single-GPU names stay short.
    std::string full = sequence.devices.size() > 1 ? name + ".dev" + std::to_string(device) : name;
    Sequence s = ToOps(sequence, device, reconstructed, std::move(full));
    if (s.ops.empty()) continue;
    std::fprintf(stderr,
                 "sequence_bench: %s: %zu ops a pass (+%zu setup, %llu failed requests re-asked), max live %u, "
                 "peak load %.2f GiB\n",
                 s.name.c_str(), s.ops.size(), s.setup.size(), static_cast<unsigned long long>(s.probes), s.slots,
                 static_cast<double>(s.peak_load) / (1024.0 * 1024.0 * 1024.0));
    Sequences().push_back(std::move(s));
  }
}

void LoadTorchSnapshots(const fs::path& shared) {
  const fs::path dir = shared / "torch";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::fprintf(stderr,
                 "sequence_bench: %s is absent: no PyTorch sequence registered (set FRAGSCOPE_SHARED_DATA "
                 "or --shared_data=DIR to the shared data directory that holds torch/)\n",
                 dir.c_str());
    return;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".pickle") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    try {
      auto input = fragscope::evidence::EvidenceInput::Open(file.string());
      const auto& header = input->header();
      if (header.kind != fragscope::traces::EvidenceKind::kHistory) {
        std::fprintf(stderr, "sequence_bench: %s: a %s, no sequence to replay: skipped\n", file.c_str(),
                     std::string(fragscope::traces::ToString(header.kind)).c_str());
        continue;
      }
      const AllocationSequence sequence = fragscope::analysis::BuildAllocationSequence(
          header, [&](std::vector<fragscope::traces::Event>* block) { return input->NextBlock(block); });
      AddAllDevices(sequence, header.source.reconstructed_events, file.stem().string());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "sequence_bench: %s: %s: skipped\n", file.c_str(), error.what());
    }
  }
}

using fragscope::bench::VectorSink;

void LoadSynth() {
  fragscope::analysis::SynthOptions options;
  options.events = kSynthEvents;
  options.seed = kSynthSeed;
  VectorSink sink;
  const auto header = fragscope::analysis::Synthesize(options, sink);
  bool done = false;
  const AllocationSequence sequence =
      fragscope::analysis::BuildAllocationSequence(header, [&](std::vector<fragscope::traces::Event>* block) {
        if (done) return false;
        *block = std::move(sink.events);
        done = true;
        return true;
      });
  AddAllDevices(sequence, 0, "synth_200k_seed11");
}

// The two allocators behind one interface, so that both run the identical loop (RunOps).
struct FragscopeHeap {
  fragscope::DeviceAllocator& allocator;
  fragscope::OomReport report;  // written only when a request fails
  void* Allocate(std::uint64_t bytes) { return allocator.TryAllocate(bytes, fragscope::AllocOptions{}, &report); }
  void Free(void* ptr) { allocator.Free(ptr); }
  std::string Failure() const { return "fragscope: " + report.Summary(); }
};
struct GlibcHeap {
  void* Allocate(std::uint64_t bytes) { return std::malloc(bytes); }
  void Free(void* ptr) { std::free(ptr); }
  std::string Failure() const { return "glibc: malloc returned null"; }
};

// False when an allocation the trace made fails (the pass is abandoned; what it holds leaks).
template <class Heap>
bool RunOps(Heap& heap, const std::vector<Op>& ops, std::vector<void*>& slots) {
  for (const Op& op : ops) {
    switch (op.kind) {
      case Kind::kAlloc: {
        void* ptr = heap.Allocate(op.size);
        benchmark::DoNotOptimize(ptr);
        if (ptr == nullptr) [[unlikely]] return false;
        slots[op.slot] = ptr;
        break;
      }
      case Kind::kFree:
        heap.Free(slots[op.slot]);
        break;
      case Kind::kProbe: {
        void* ptr = heap.Allocate(op.size);
        benchmark::DoNotOptimize(ptr);  // (and keeps the compiler from folding malloc+free away)
        if (ptr != nullptr) heap.Free(ptr);
        break;
      }
    }
  }
  return true;
}

// The timed passes only, out of line: callgrind counts instructions inside it alone
// (--toggle-collect='*TimedPass*'), leaving out the warm-up pass and the setup between passes.
template <class Heap>
[[gnu::noinline]] bool TimedPass(Heap& heap, const std::vector<Op>& ops, std::vector<void*>& slots) {
  return RunOps(heap, ops, slots);
}

template <class Heap>
void Replay(benchmark::State& state, Heap& heap, const Sequence& sequence) {
  std::vector<void*> slots(sequence.slots, nullptr);
  // Warm-up pass: regions reserved (fragscope), heap grown to the peak (glibc: trimming is off).
  if (!RunOps(heap, sequence.setup, slots) || !RunOps(heap, sequence.ops, slots)) {
    state.SkipWithError((heap.Failure() + " (warm-up pass)").c_str());
    return;
  }
  for (auto _ : state) {
    bool ok = true;
    if (!sequence.setup.empty()) {
      // About 0.35 us of each pause/resume lands in the timed time (measured on the 2-core dev
      // machine): under 0.5 % of the passes that have a setup (70 us and more).
      state.PauseTiming();
      ok = RunOps(heap, sequence.setup, slots);
      state.ResumeTiming();
    }
    if (!ok || !TimedPass(heap, sequence.ops, slots)) [[unlikely]] {
      state.SkipWithError(heap.Failure().c_str());
      break;
    }
  }
  const double ops = static_cast<double>(sequence.counted_ops) * static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<std::int64_t>(ops));
  // Operations per CPU second, inverted: CPU seconds per operation ("per_op=31.2ns" on the console).
  state.counters["per_op"] = benchmark::Counter(ops, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ops"] = static_cast<double>(sequence.counted_ops);
  state.counters["setup"] = static_cast<double>(sequence.setup.size());
  state.counters["max_live"] = static_cast<double>(sequence.slots);
}

void BM_Fragscope(benchmark::State& state, const Sequence* sequence, const fragscope::AllocConf& conf) {
  auto system = fragscope::MemorySystem::Create(conf);
  FragscopeHeap heap{system->device(0), {}};
  Replay(state, heap, *sequence);
  // Backing calls over the whole run (warm-up and timed passes): a warm sequence should make none.
  state.counters["maps"] = static_cast<double>(heap.allocator.Stats().maps);
  state.counters["unmaps"] = static_cast<double>(heap.allocator.Stats().unmaps);
  state.counters["reserved_GiB"] =
      static_cast<double>(heap.allocator.Stats().peak_reserved) / (1024.0 * 1024.0 * 1024.0);
}

void BM_Glibc(benchmark::State& state, const Sequence* sequence) {
  GlibcHeap heap;
  Replay(state, heap, *sequence);
}

void Register() {
  // The configurations this build accepts, each checked once.
  std::vector<std::pair<std::string, fragscope::AllocConf>> confs;
  for (const Conf& conf : kConfs) {
    try {
      fragscope::AllocConf parsed = fragscope::ParseAllocConf(conf.text);
      fragscope::MemorySystem::Create(parsed);  // refuse here, not mid-run, what cannot be built
      confs.emplace_back(conf.label, std::move(parsed));
    } catch (const std::exception& error) {
      std::fprintf(stderr, "sequence_bench: conf '%s' (%s): %s: not registered\n", conf.label, conf.text,
                   error.what());
    }
  }
  for (const Sequence& sequence : Sequences()) {
    for (const auto& [label, conf] : confs) {
      const std::string name = "fragscope/" + sequence.name + "/" + label;
      benchmark::RegisterBenchmark(name.c_str(), BM_Fragscope, &sequence, conf)->Unit(benchmark::kMicrosecond);
    }
    const std::string name = "glibc/" + sequence.name;
    benchmark::RegisterBenchmark(name.c_str(), BM_Glibc, &sequence)->Unit(benchmark::kMicrosecond);
  }
}

// --shared_data=DIR, taken out of argv before Google Benchmark sees it; else the environment;
// else ../shared/data beside the source tree (where the tests look).
std::string SharedDataDir(int& argc, char** argv) {
  constexpr std::string_view kFlag = "--shared_data=";
  std::string dir;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kFlag.size()) == kFlag) {
      dir = std::string(arg.substr(kFlag.size()));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (!dir.empty()) return dir;
  if (const char* env = std::getenv("FRAGSCOPE_SHARED_DATA"); env != nullptr && *env != '\0') return env;
  return std::string(FRAGSCOPE_SOURCE_DIR) + "/../shared/data";
}

}  // namespace

int main(int argc, char** argv) {
  if (!fragscope::bench::GlibcHeapOnly("sequence_bench")) return 1;
  const std::string shared = SharedDataDir(argc, argv);
  LoadTorchSnapshots(shared);
  LoadSynth();
  benchmark::AddCustomContext("shared_data", shared);
  for (const Conf& conf : kConfs) benchmark::AddCustomContext(std::string("conf_") + conf.label, conf.text);

  Register();
  return fragscope::bench::RunBenchmarks(argc, argv);
}
