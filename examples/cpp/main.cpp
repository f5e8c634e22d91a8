// fragscope's allocator in a program of your own: a host-memory device with a 64 MiB limit, three
// "training steps" of tagged allocations, one request that cannot fit, every event recorded to a
// trace that `fragscope report` explains.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fragscope/allocator/errors.hpp>
#include <fragscope/allocator/memory_system.hpp>
#include <fragscope/traces/trace_writer.hpp>

int main(int argc, char** argv) {
  const std::string trace_path = argc > 1 ? argv[1] : "example.fst";
  constexpr std::uint64_t MiB = 1 << 20;
  try {
    auto system = fragscope::MemorySystem::Create(
        fragscope::ParseAllocConf("backing=host,limit=64MiB,growth=off"));
    fragscope::traces::TraceWriter trace(trace_path, system->MakeTraceHeader("fragscope-example"));
    system->SetSink(&trace);
    fragscope::DeviceAllocator& device = system->device(0);

    for (int step = 0; step < 3; ++step) {
      device.Mark("step " + std::to_string(step) + " begin");
      std::vector<void*> activations;
      for (std::uint64_t layer = 1; layer <= 8; ++layer) {  // 1 + 2 + ... + 8 = 36 MiB live
        const auto tag = trace.Intern("layer" + std::to_string(layer) + "/activation");
        void* ptr = device.Allocate(layer * MiB, {.stream = 0, .tag = tag});
        std::memset(ptr, 0, layer * MiB);  // host backing: real memory
        activations.push_back(ptr);
      }
      for (void* ptr : activations) device.Free(ptr);
    }

    try {
      device.Allocate(100 * MiB);  // more than the limit
    } catch (const fragscope::OutOfMemory& oom) {
      std::printf("%s", oom.report().Describe().c_str());  // cause: request-too-large
    }
    std::printf("%s", device.Stats().Describe().c_str());
    system->SetSink(nullptr);
    trace.Close();
    std::printf("trace: %llu events in %s\n",
                static_cast<unsigned long long>(trace.events_written()), trace_path.c_str());
  } catch (const std::exception& error) {  // ConfigError, BackingError, TraceError
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  }
  return 0;
}
