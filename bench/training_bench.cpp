// The allocator on a training-like sequence: what TensorFlow's published BFC figures measure
// (replaying recorded training traces), as opposed to alloc_bench's uniformly random victims.
//
// The sequence is `fragscope synth`'s workload (weights once, activations growing through forward
// and freed in backward, temporaries, varying batch sizes, pinned odd sizes): 2 million alloc and
// free events, turned into an operation list before timing. Each benchmark iteration replays the
// whole list through DeviceAllocator::TryAllocate / Free on a fresh allocator whose regions were
// reserved by one untimed warm-up pass, so the timed pass is the steady state of a training run.
// Counters: per_op = CPU time per operation (one allocate or one free); live_mean = the average
// number of live chunks during the pass.
#include <cstdint>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "vector_sink.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/synth.hpp"

namespace {

using fragscope::bench::VectorSink;

const fragscope::analysis::AllocationSequence& Sequence() {
  static const fragscope::analysis::AllocationSequence sequence = [] {
    fragscope::analysis::SynthOptions options;
    options.events = 2'000'000;
    options.seed = 11;
    VectorSink sink;
    const fragscope::traces::TraceHeader header = fragscope::analysis::Synthesize(options, sink);
    bool done = false;
    return fragscope::analysis::BuildAllocationSequence(header, [&](std::vector<fragscope::traces::Event>* block) {
      if (done) return false;
      *block = std::move(sink.events);
      done = true;
      return true;
    });
  }();
  return sequence;
}

// Replays the sequence once; returns the sum over ops of the live chunk count.
std::uint64_t ReplayOnce(fragscope::DeviceAllocator& allocator,
                         const fragscope::analysis::AllocationSequence& sequence,
                         std::vector<void*>& pointers) {
  std::uint64_t live = 0, live_sum = 0;
  for (const auto& op : sequence.ops) {
    if (op.allocation == fragscope::analysis::AllocationOp::kNoAllocation) continue;
    if (op.is_free) {
      void*& ptr = pointers[op.allocation];
      if (ptr != nullptr) {
        allocator.Free(ptr);
        ptr = nullptr;
        --live;
      }
    } else {
      void* ptr = allocator.TryAllocate(op.size, {}, nullptr);
      benchmark::DoNotOptimize(ptr);
      pointers[op.allocation] = ptr;
      live += ptr != nullptr;
    }
    live_sum += live;
  }
  // Free what the trace leaves live, so the next pass starts from the same state.
  for (void*& ptr : pointers) {
    if (ptr != nullptr) allocator.Free(ptr);
    ptr = nullptr;
  }
  return live_sum;
}

void BM_TrainingSequence(benchmark::State& state, const char* conf) {
  const auto& sequence = Sequence();
  auto system = fragscope::MemorySystem::Create(fragscope::ParseAllocConf(conf));
  fragscope::DeviceAllocator& allocator = system->device(0);
  std::vector<void*> pointers(sequence.allocations, nullptr);
  ReplayOnce(allocator, sequence, pointers);  // warm-up: regions reserved, pool and table grown
  std::uint64_t live_sum = 0;
  for (auto _ : state) live_sum += ReplayOnce(allocator, sequence, pointers);
  const double ops = static_cast<double>(sequence.ops.size()) * static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<std::int64_t>(ops));
  state.counters["per_op"] = benchmark::Counter(ops, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["live_mean"] = static_cast<double>(live_sum) / ops;
}

BENCHMARK_CAPTURE(BM_TrainingSequence, growth, "backing=sim,capacity=80GiB")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TrainingSequence, expandable, "backing=sim,capacity=80GiB,expandable=on")
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
