// libfragscope_torch.so: the two entry points PyTorch's torch.cuda.memory.CUDAPluggableAllocator
// loads from a shared library, over fragscope's allocator.
//
//   void* fragscope_torch_malloc(ssize_t size, int device, cudaStream_t stream);
//   void  fragscope_torch_free(void* ptr, ssize_t size, int device, cudaStream_t stream);
//
// One MemorySystem per device, created on the device's first request from FRAGSCOPE_ALLOC_CONF
// (device=N set to the requesting device), thread-safe. With FRAGSCOPE_TRACE=path every event is
// recorded: device 0 to `path`, device N > 0 to `path` with ".devN" before the extension; the
// traces are flushed and closed at exit. On OOM the report is logged to stderr and nullptr
// returned, which PyTorch turns into torch.OutOfMemoryError. Nothing is ever destroyed: PyTorch
// may free tensors during interpreter teardown, after static destructors would have run.
//
// Extras for ctypes users: fragscope_torch_mark(device, name) records a marker,
// fragscope_torch_flush() writes buffered events to disk.
#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

struct CUstream_st;  // cudaStream_t is `struct CUstream_st*`: no CUDA header needed here.

namespace {

constexpr int kMaxDevices = 64;

struct DeviceState {
  std::unique_ptr<fragscope::MemorySystem> system;
  std::unique_ptr<fragscope::traces::TraceWriter> trace;
};

struct Global {
  std::mutex mutex;  // creation, flush, close
  std::array<std::atomic<DeviceState*>, kMaxDevices> devices{};
  std::array<bool, kMaxDevices> failed{};  // creation failed once: logged, not retried
  bool exit_hook = false;
  bool closed = false;
};

Global& G() {
  static Global* global = new Global();  // never destroyed, on purpose (see above)
  return *global;
}

void Log(const std::string& text) {
  const bool newline = !text.empty() && text.back() == '\n';
  std::fprintf(stderr, "fragscope: %s%s", text.c_str(), newline ? "" : "\n");
}

std::string TracePath(const std::string& base, int device) {
  if (device == 0) return base;
  const auto slash = base.find_last_of('/');
  const auto dot = base.find_last_of('.');
  const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  if (!has_extension) return fmt::format("{}.dev{}", base, device);
  return fmt::format("{}.dev{}{}", base.substr(0, dot), device, base.substr(dot));
}

void CloseAll() {
  Global& g = G();
  std::lock_guard guard(g.mutex);
  if (g.closed) return;
  g.closed = true;
  for (auto& slot : g.devices) {
    DeviceState* state = slot.load(std::memory_order_acquire);
    if (state == nullptr || !state->trace) continue;
    try {
      state->system->SetSink(nullptr);
      state->trace->Close();  // later events are ignored; the writer object stays
    } catch (const std::exception& error) {
      Log(fmt::format("closing the trace {}: {}", state->trace->path(), error.what()));
    }
  }
}

DeviceState* Create(int device) {  // g.mutex held
  Global& g = G();
  const char* conf_text = std::getenv(fragscope::kAllocConfEnv);
  fragscope::AllocConf conf = fragscope::ParseAllocConf(conf_text == nullptr ? "" : conf_text);
  conf.device = device;
  auto state = std::make_unique<DeviceState>();
  state->system = fragscope::MemorySystem::Create(conf);
  if (state->system->device_count() > 1) {
    Log("virtual_devices is ignored by the PyTorch allocator: each device uses its first "
        "virtual device");
  }
  const char* trace_base = std::getenv("FRAGSCOPE_TRACE");
  if (trace_base != nullptr && *trace_base != '\0' && !g.closed) {
    state->trace = std::make_unique<fragscope::traces::TraceWriter>(
        TracePath(trace_base, device),
        state->system->MakeTraceHeader("fragscope PyTorch allocator 0.1.0"));
    state->system->SetSink(state->trace.get());
    if (!g.exit_hook) {
      g.exit_hook = true;
      std::atexit(CloseAll);
    }
  }
  Log(fmt::format("device {}: {}{}", device, state->system->Describe(),
                  state->trace ? ", trace " + state->trace->path() : std::string()));
  return state.release();
}

// The allocator of `device`, created on first use; nullptr (logged) when it cannot be.
fragscope::DeviceAllocator* Allocator(int device) {
  if (device < 0 || device >= kMaxDevices) {
    Log(fmt::format("device {} is out of range (0..{})", device, kMaxDevices - 1));
    return nullptr;
  }
  Global& g = G();
  DeviceState* state = g.devices[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
  if (state == nullptr) {
    std::lock_guard guard(g.mutex);
    auto& slot = g.devices[static_cast<std::size_t>(device)];
    state = slot.load(std::memory_order_acquire);
    if (state == nullptr) {
      if (g.failed[static_cast<std::size_t>(device)]) return nullptr;
      try {
        state = Create(device);
      } catch (const std::exception& error) {
        g.failed[static_cast<std::size_t>(device)] = true;
        Log(fmt::format("cannot create the allocator of device {} (FRAGSCOPE_ALLOC_CONF={}): {}",
                        device, std::getenv(fragscope::kAllocConfEnv) == nullptr
                                    ? "unset" : std::getenv(fragscope::kAllocConfEnv),
                        error.what()));
        return nullptr;
      }
      slot.store(state, std::memory_order_release);
    }
  }
  return &state->system->device(0);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* fragscope_torch_malloc(ssize_t size, int device,
                                                                    CUstream_st* stream) {
  try {
    fragscope::DeviceAllocator* allocator = Allocator(device);
    if (allocator == nullptr) return nullptr;
    if (size < 0) {
      Log(fmt::format("malloc of a negative size ({}) refused", size));
      return nullptr;
    }
    fragscope::AllocOptions options;
    options.stream = reinterpret_cast<std::uintptr_t>(stream);
    fragscope::OomReport report;
    void* ptr = allocator->TryAllocate(static_cast<std::uint64_t>(size), options, &report);
    if (ptr == nullptr) Log(report.Describe());
    return ptr;
  } catch (const std::exception& error) {
    Log(fmt::format("malloc of {} bytes on device {}: {}", size, device, error.what()));
    return nullptr;
  }
}

__attribute__((visibility("default"))) void fragscope_torch_free(void* ptr, ssize_t /*size*/,
                                                                 int device,
                                                                 CUstream_st* /*stream*/) {
  if (ptr == nullptr) return;
  try {
    fragscope::DeviceAllocator* allocator = Allocator(device);
    if (allocator == nullptr) return;
    allocator->Free(ptr);
  } catch (const std::exception& error) {
    Log(fmt::format("free of {} on device {}: {}", ptr, device, error.what()));
  }
}

__attribute__((visibility("default"))) int fragscope_torch_mark(int device, const char* name) {
  if (name == nullptr) return 1;
  try {
    fragscope::DeviceAllocator* allocator = Allocator(device);
    if (allocator == nullptr) return 1;
    allocator->Mark(name);
    return 0;
  } catch (const std::exception& error) {
    Log(fmt::format("marker on device {}: {}", device, error.what()));
    return 1;
  }
}

__attribute__((visibility("default"))) int fragscope_torch_flush(void) {
  Global& g = G();
  std::lock_guard guard(g.mutex);
  int status = 0;
  for (auto& slot : g.devices) {
    DeviceState* state = slot.load(std::memory_order_acquire);
    if (state == nullptr || !state->trace || g.closed) continue;
    try {
      state->trace->Flush();
    } catch (const std::exception& error) {
      Log(fmt::format("flushing the trace {}: {}", state->trace->path(), error.what()));
      status = 1;
    }
  }
  return status;
}

}  // extern "C"
