// libfragscope_torch.so: the two entry points PyTorch's torch.cuda.memory.CUDAPluggableAllocator
// loads from a shared library, over fragscope's allocator.
//
//   void* fragscope_torch_malloc(ssize_t size, int device, cudaStream_t stream);
//   void  fragscope_torch_free(void* ptr, ssize_t size, int device, cudaStream_t stream);
//
// One MemorySystem per device, created on the device's first request from FRAGSCOPE_ALLOC_CONF
// (device=N set to the requesting device; backing=vmm unless it names one), thread-safe. With FRAGSCOPE_TRACE=path every event is
// recorded: device 0 to `path`, device N > 0 to `path` with ".devN" before the extension; the
// traces are flushed and closed at exit. Nothing is ever destroyed: PyTorch may free tensors during
// interpreter teardown, after static destructors would have run.
//
// A request that cannot be served throws (TorchAllocationError, a std::runtime_error carrying
// fragscope's OOM report or the reason): PyTorch does not check the pointer its allocate function
// returns, so a nullptr would become a tensor with no memory and a fault later; an exception
// reaches Python as a RuntimeError with the report in it. A bad free cannot throw (PyTorch calls it
// from a deleter): it is logged to stderr and ignored.
//
// Streams: one pool per device serves every stream, so a block freed on one stream is made safe for
// another on the GPU (StreamFences, Backing::OrderStreams) before it is handed out.
//
// Extras for ctypes users: fragscope_torch_mark(device, name) records a marker,
// fragscope_torch_flush() writes buffered events to disk.
#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/stream_fences.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

struct CUstream_st;  // cudaStream_t is `struct CUstream_st*`: no CUDA header needed here.

namespace {

constexpr int kMaxDevices = 64;

struct DeviceState {
  std::unique_ptr<fragscope::MemorySystem> system;
  std::unique_ptr<fragscope::traces::TraceWriter> trace;
  fragscope::StreamFences fences;  // used where the backing is a GPU's (Backing::orders_streams)
};

// What fragscope_torch_malloc throws when it cannot serve a request.
class TorchAllocationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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

// Whether the configuration `text` sets `key` (keys are case-insensitive, white space around them
// ignored; the parser checks the rest).
bool SetsKey(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    item = item.substr(0, item.find('='));
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (item.size() == key.size() &&
        std::equal(item.begin(), item.end(), key.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        })) {
      return true;
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return false;
}

// PyTorch runs on a GPU: where the configuration names no backing, the shim's is `vmm` (the
// default policy pages there), not the library-wide `sim`, whose addresses have no memory behind
// them and would crash the first kernel that touched one.
std::string ShimConf(std::string_view text) {
  if (SetsKey(text, "backing")) return std::string(text);
  const bool blank = text.find_first_not_of(" \t") == std::string_view::npos;
  return blank ? std::string("backing=vmm") : "backing=vmm," + std::string(text);
}

DeviceState* Create(int device) {  // g.mutex held
  Global& g = G();
  const char* conf_text = std::getenv(fragscope::kAllocConfEnv);
  fragscope::AllocConf conf = fragscope::ParseAllocConf(ShimConf(conf_text == nullptr ? "" : conf_text));
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

// The state of `device`, created on first use. nullptr when it cannot be, with `why` set (and the
// creation failure logged once: it is not retried).
DeviceState* State(int device, std::string* why) {
  if (device < 0 || device >= kMaxDevices) {
    *why = fmt::format("device {} is out of range (0..{})", device, kMaxDevices - 1);
    return nullptr;
  }
  Global& g = G();
  DeviceState* state = g.devices[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
  if (state == nullptr) {
    std::lock_guard guard(g.mutex);
    auto& slot = g.devices[static_cast<std::size_t>(device)];
    state = slot.load(std::memory_order_acquire);
    if (state == nullptr) {
      const char* conf = std::getenv(fragscope::kAllocConfEnv);
      const std::string written = conf == nullptr ? "" : conf;
      const std::string used = ShimConf(written);
      const std::string failed = fmt::format("cannot create the allocator of device {} (FRAGSCOPE_ALLOC_CONF={}{})",
                                             device, conf == nullptr ? "unset" : written,
                                             used == written ? "" : ", so " + used);
      if (g.failed[static_cast<std::size_t>(device)]) {
        *why = failed + ": see the first error";
        return nullptr;
      }
      try {
        state = Create(device);
      } catch (const std::exception& error) {
        g.failed[static_cast<std::size_t>(device)] = true;
        *why = fmt::format("{}: {}", failed, error.what());
        Log(*why);
        return nullptr;
      }
      slot.store(state, std::memory_order_release);
    }
  }
  return state;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* fragscope_torch_malloc(ssize_t size, int device,
                                                                    CUstream_st* stream) {
  if (size < 0) throw TorchAllocationError(fmt::format("fragscope: malloc of a negative size ({}) refused", size));
  std::string why;
  DeviceState* state = State(device, &why);
  if (state == nullptr) throw TorchAllocationError("fragscope: " + why);
  fragscope::AllocOptions options;
  options.stream = reinterpret_cast<std::uintptr_t>(stream);
  fragscope::OomReport report;
  void* ptr = nullptr;
  try {
    ptr = fragscope::AllocateStreamOrdered(state->system->device(0), state->system->backing(), state->fences,
                                           static_cast<std::uint64_t>(size), options, &report);
  } catch (const std::exception& error) {  // a backing failure other than lack of memory
    throw TorchAllocationError(fmt::format("fragscope: malloc of {} bytes on device {}: {}", size, device, error.what()));
  }
  // The same words PyTorch's own allocator starts with, so that code looking for them finds them.
  if (ptr == nullptr) throw TorchAllocationError("CUDA out of memory (fragscope). " + report.Describe());
  return ptr;
}

__attribute__((visibility("default"))) void fragscope_torch_free(void* ptr, ssize_t /*size*/,
                                                                 int device, CUstream_st* stream) {
  if (ptr == nullptr) return;
  try {
    // Looked up, never created: a device that never allocated owns no pointer.
    DeviceState* state = device >= 0 && device < kMaxDevices
                             ? G().devices[static_cast<std::size_t>(device)].load(std::memory_order_acquire)
                             : nullptr;
    if (state == nullptr) {
      Log(fmt::format("free of {} on device {} ignored: fragscope allocated nothing on that device", ptr, device));
      return;
    }
    fragscope::FreeStreamOrdered(state->system->device(0), state->system->backing(), state->fences, ptr,
                                 reinterpret_cast<std::uintptr_t>(stream));
  } catch (const fragscope::InvalidFree& error) {
    Log(error.what());  // names the device and the pointer
  } catch (const std::exception& error) {
    Log(fmt::format("free of {} on device {}: {}", ptr, device, error.what()));
  }
}

__attribute__((visibility("default"))) int fragscope_torch_mark(int device, const char* name) {
  if (name == nullptr) return 1;
  try {
    std::string why;
    DeviceState* state = State(device, &why);
    if (state == nullptr) {
      Log(fmt::format("marker on device {}: {}", device, why));
      return 1;
    }
    state->system->device(0).Mark(name);
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
