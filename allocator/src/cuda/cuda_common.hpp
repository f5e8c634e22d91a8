// Helpers shared by the CUDA backings (cuda, vmm, async). Compiled only when FRAGSCOPE_HAVE_CUDA.
//
// The project links the CUDA runtime statically and never links libcuda: a program must start, and
// say "no driver" in words, on a machine without a GPU. The few driver-API functions the vmm
// backing needs are therefore looked up at run time through cudaGetDriverEntryPointByVersion, with
// the versioned PFN_ typedefs of <cudaTypedefs.h> so that each pointer has the ABI it was asked for.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace fragscope::cuda {

// "cudaErrorMemoryAllocation (out of memory)".
std::string ErrorText(cudaError_t err);

// Throws BackingError "<api> failed: <name> (<description>)" unless err is cudaSuccess; `context`
// (optional) adds what was being done, e.g. "device 0, 2.00 GiB".
void Check(cudaError_t err, const char* api, const std::string& context = {});
[[noreturn]] void Throw(cudaError_t err, const char* api, const std::string& context = {});

// Number of usable devices; 0 with `why` set when there are none or no driver can be loaded.
int DeviceCount(std::string* why);
// Whether `device` exists and can be used; `why` says why not ("no CUDA driver: ...").
bool DeviceAvailable(int device, std::string* why);
// Throws BackingError with DeviceAvailable's reason when the device cannot be used.
void RequireDevice(int device);

// Makes `device` current on this thread for the scope and restores the previous one: backings are
// shared by threads that may work on other devices, and must not change the caller's device.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
  int device_ = -1;
};

// Backing::OrderStreams for the CUDA backings: one event per stream that has freed memory, recorded
// on it and waited for by the other stream (cudaEventRecord + cudaStreamWaitEvent: the GPU waits,
// the host does not). Streams are the caller's cudaStream_t values; 0 is the legacy default stream.
class StreamOrder {
 public:
  StreamOrder() = default;
  ~StreamOrder();  // destroys the events, best effort (the runtime may be shutting down)
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;
  // Backing::OrderStreams: false (after a cudaDeviceSynchronize) when `freed_on` is no stream any
  // more. Throws BackingError when the runtime refuses otherwise.
  bool Order(int device, std::uint64_t waiting, std::uint64_t freed_on);

 private:
  std::mutex mu_;
  std::unordered_map<std::uint64_t, cudaEvent_t> events_;  // by the stream they are recorded on
};

// cudaDeviceProp::name of `device`.
std::string DeviceName(int device);
// Total memory of `device` from cudaMemGetInfo (what the driver lets this process see).
std::uint64_t DeviceTotalMemory(int device);

// The capacity a CUDA backing works with: the device's total memory, or `configured` when that is
// smaller (to rehearse a smaller GPU on a big one). Throws ConfigError on a configured 0.
std::uint64_t BackingCapacity(int device, const std::optional<std::uint64_t>& configured);

// Driver-API entry points, resolved once per process.
struct DriverApi {
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity = nullptr;
  PFN_cuMemAddressReserve_v10020 cuMemAddressReserve = nullptr;
  PFN_cuMemAddressFree_v10020 cuMemAddressFree = nullptr;
  PFN_cuMemCreate_v10020 cuMemCreate = nullptr;
  PFN_cuMemRelease_v10020 cuMemRelease = nullptr;
  PFN_cuMemMap_v10020 cuMemMap = nullptr;
  PFN_cuMemUnmap_v10020 cuMemUnmap = nullptr;
  PFN_cuMemSetAccess_v10020 cuMemSetAccess = nullptr;
};

// The entry points; throws BackingError (naming the missing symbol or the runtime's error) when the
// driver cannot provide them. Thread-safe; the lookup runs once.
const DriverApi& Driver();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", via cuGetErrorName/cuGetErrorString when the driver
// is loaded, else the numeric code.
std::string DriverErrorText(CUresult result);
// Throws BackingError "<api> failed: <DriverErrorText>" unless result is CUDA_SUCCESS.
void CheckDriver(CUresult result, const char* api, const std::string& context = {});
[[noreturn]] void ThrowDriver(CUresult result, const char* api, const std::string& context = {});

}  // namespace fragscope::cuda
