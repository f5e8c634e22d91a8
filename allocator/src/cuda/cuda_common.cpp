#include "cuda/cuda_common.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"

namespace fragscope::cuda {
namespace {

std::string WithContext(const std::string& context) {
  return context.empty() ? std::string() : fmt::format(" ({})", context);
}

// "13.0" from CUDART_VERSION (13000): the runtime this program was built with, for messages that
// tell the user which driver is needed.
std::string RuntimeVersion() {
  return fmt::format("{}.{}", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
}

struct LoadedDriver {
  DriverApi api;
  std::string error;  // empty when every entry point was found
};

// Resolves one entry point at the ABI `version` of its PFN_..._v<version> typedef.
template <typename Fn>
bool Resolve(const char* name, unsigned version, Fn* fn, std::string* error) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t err =
      cudaGetDriverEntryPointByVersion(name, &address, version, cudaEnableDefault, &status);
  if (err != cudaSuccess) {
    cudaGetLastError();  // do not leave the failure for an unrelated later check to find
    *error = fmt::format("cannot load {} from the CUDA driver: {}", name, ErrorText(err));
    return false;
  }
  if (status != cudaDriverEntryPointSuccess || address == nullptr) {
    *error = fmt::format("the CUDA driver does not provide {} (ABI version {}): {}", name, version,
                         status == cudaDriverEntryPointVersionNotSufficent
                             ? "the driver is too old"
                             : "symbol not found");
    return false;
  }
  *fn = reinterpret_cast<Fn>(address);
  return true;
}

LoadedDriver LoadDriver() {
  LoadedDriver out;
  DriverApi& a = out.api;
  std::string& e = out.error;
  // The versions are those of the PFN_ typedefs in DriverApi; asking for exactly that ABI keeps the
  // pointer's signature right even when a newer driver has a newer variant of the function.
  Resolve("cuGetErrorString", 6000, &a.cuGetErrorString, &e) &&
      Resolve("cuGetErrorName", 6000, &a.cuGetErrorName, &e) &&
      Resolve("cuDeviceGet", 2000, &a.cuDeviceGet, &e) &&
      Resolve("cuDeviceGetAttribute", 2000, &a.cuDeviceGetAttribute, &e) &&
      Resolve("cuMemGetAllocationGranularity", 10020, &a.cuMemGetAllocationGranularity, &e) &&
      Resolve("cuMemAddressReserve", 10020, &a.cuMemAddressReserve, &e) &&
      Resolve("cuMemAddressFree", 10020, &a.cuMemAddressFree, &e) &&
      Resolve("cuMemCreate", 10020, &a.cuMemCreate, &e) &&
      Resolve("cuMemRelease", 10020, &a.cuMemRelease, &e) &&
      Resolve("cuMemMap", 10020, &a.cuMemMap, &e) &&
      Resolve("cuMemUnmap", 10020, &a.cuMemUnmap, &e) &&
      Resolve("cuMemSetAccess", 10020, &a.cuMemSetAccess, &e);
  return out;
}

const LoadedDriver& Loaded() {
  static const LoadedDriver loaded = LoadDriver();  // thread-safe one-time initialization
  return loaded;
}

}  // namespace

std::string ErrorText(cudaError_t err) {
  return fmt::format("{} ({})", cudaGetErrorName(err), cudaGetErrorString(err));
}

void Throw(cudaError_t err, const char* api, const std::string& context) {
  throw BackingError(fmt::format("{} failed{}: {}", api, WithContext(context), ErrorText(err)));
}

void Check(cudaError_t err, const char* api, const std::string& context) {
  if (err != cudaSuccess) Throw(err, api, context);
}

int DeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  std::string reason;
  if (err != cudaSuccess) {
    cudaGetLastError();
    count = 0;
    switch (err) {
      case cudaErrorInsufficientDriver:
        // The static runtime reports a missing libcuda.so.1 the same way as an old driver.
        reason = fmt::format(
            "no CUDA driver: {} (libcuda.so.1 is missing, or older than this build's CUDA {} "
            "runtime)",
            cudaGetErrorString(err), RuntimeVersion());
        break;
      case cudaErrorNoDevice:
        reason = fmt::format("no CUDA device: {}", cudaGetErrorString(err));
        break;
      default:
        reason = fmt::format("CUDA is unavailable: cudaGetDeviceCount failed: {}", ErrorText(err));
        break;
    }
  } else if (count <= 0) {
    count = 0;
    reason = "no CUDA device: the driver reports 0 devices";
  }
  if (why != nullptr && !reason.empty()) *why = reason;
  return count;
}

bool DeviceAvailable(int device, std::string* why) {
  std::string reason;
  const int count = DeviceCount(&reason);
  if (count > 0 && (device < 0 || device >= count)) {
    reason = fmt::format("no CUDA device {}: this machine has {} device{} (0..{})", device, count,
                         count == 1 ? "" : "s", count - 1);
  }
  if (reason.empty()) return true;
  if (why != nullptr) *why = reason;
  return false;
}

void RequireDevice(int device) {
  std::string why;
  if (!DeviceAvailable(device, &why)) throw BackingError(why);
}

ScopedDevice::ScopedDevice(int device) : device_(device) {
  Check(cudaGetDevice(&previous_), "cudaGetDevice");
  // Set even when it is already the current device: cudaSetDevice also makes the device's primary
  // context current on this thread, which the driver-API calls of the vmm backing need.
  Check(cudaSetDevice(device), "cudaSetDevice", fmt::format("device {}", device));
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
}

std::string DeviceName(int device) {
  cudaDeviceProp prop{};
  Check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties",
        fmt::format("device {}", device));
  return prop.name;
}

std::uint64_t DeviceTotalMemory(int device) {
  ScopedDevice guard(device);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  Check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo",
        fmt::format("device {}", device));
  return total_bytes;
}

std::uint64_t BackingCapacity(int device, const std::optional<std::uint64_t>& configured) {
  if (configured && *configured == 0) {
    throw ConfigError("capacity", "capacity must be more than 0 bytes");
  }
  const std::uint64_t total = DeviceTotalMemory(device);
  return configured ? std::min(*configured, total) : total;
}

const DriverApi& Driver() {
  const LoadedDriver& loaded = Loaded();
  if (!loaded.error.empty()) throw BackingError(loaded.error);
  return loaded.api;
}

std::string DriverErrorText(CUresult result) {
  const LoadedDriver& loaded = Loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (loaded.error.empty()) {
    loaded.api.cuGetErrorName(result, &name);
    loaded.api.cuGetErrorString(result, &text);
  }
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(result));
  return fmt::format("{} ({})", name, text != nullptr ? text : "no description");
}

void ThrowDriver(CUresult result, const char* api, const std::string& context) {
  throw BackingError(
      fmt::format("{} failed{}: {}", api, WithContext(context), DriverErrorText(result)));
}

void CheckDriver(CUresult result, const char* api, const std::string& context) {
  if (result != CUDA_SUCCESS) ThrowDriver(result, api, context);
}

StreamOrder::~StreamOrder() {
  for (const auto& [stream, event] : events_) cudaEventDestroy(event);
}

bool StreamOrder::Order(int device, std::uint64_t waiting, std::uint64_t freed_on) {
  std::lock_guard guard(mu_);
  const ScopedDevice scoped(device);
  cudaEvent_t& event = events_[freed_on];
  if (event == nullptr) {
    // Timing off: the cheapest event, as PyTorch's caching allocator uses for the same purpose.
    if (const cudaError_t err = cudaEventCreateWithFlags(&event, cudaEventDisableTiming); err != cudaSuccess) {
      events_.erase(freed_on);
      Throw(err, "cudaEventCreateWithFlags", fmt::format("device {}", device));
    }
  }
  // Recording again is safe: a wait already issued keeps the work it captured.
  if (const cudaError_t err = cudaEventRecord(event, reinterpret_cast<cudaStream_t>(freed_on)); err != cudaSuccess) {
    if (err != cudaErrorInvalidResourceHandle) {
      Throw(err, "cudaEventRecord", fmt::format("device {}, stream {:#x}", device, freed_on));
    }
    // The stream was destroyed after its memory was freed (its queued work still finishes): wait
    // for the whole device once, and let the caller forget the stream. A stream created later at
    // the same handle starts afresh.
    cudaGetLastError();  // clears the error just reported, so that it does not surface elsewhere
    cudaEventDestroy(event);
    events_.erase(freed_on);
    Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize",
          fmt::format("device {}, in place of stream {:#x}, which no longer exists", device, freed_on));
    return false;
  }
  Check(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(waiting), event, 0), "cudaStreamWaitEvent",
        fmt::format("device {}, stream {:#x} waits for stream {:#x}", device, waiting, freed_on));
  return true;
}

}  // namespace fragscope::cuda
