// Where regions come from. A backing is a thread-safe memory source shared by every allocator of a
// MemorySystem (several, with virtual devices). It knows nothing of chunks, limits or policies: it
// hands out whole regions and, when it can, ranges that grow in place.
//
//   sim    address space only: any capacity, nothing behind it (addresses are never dereferenced)
//   host   real host memory from mmap; expandable ranges reserve address space and commit pages
//   cuda   cudaMalloc / cudaFree
//   vmm    cuMemAddressReserve + cuMemCreate + cuMemMap + cuMemSetAccess, 2 MiB granularity
//   async  cudaMallocAsync / cudaFreeAsync on a memory pool (passthrough only)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace fragscope {

struct AllocConf;

enum class BackingKind : std::uint8_t { kSim, kHost, kCuda, kVmm, kAsync };

std::string_view ToString(BackingKind kind);             // "sim", "host", ...
bool ParseBackingKind(std::string_view text, BackingKind* out);

// What a backing can do, known from its kind alone (nothing opened): for configuration checks,
// policy advice and replays that plan a policy without a device. The one definition; an opened
// backing agrees (Backing::expandable() is non-null exactly when grows_in_place).
struct BackingTraits {
  bool grows_in_place = false;         // ranges that grow and shrink in place: expandable=on
  bool simulates_external_use = false; // external_use= models memory other processes hold
  bool needs_gpu = false;              // a CUDA device and a build with CUDA
  bool always_passthrough = false;     // caches on its own (cudaMallocAsync pools)
  std::uint64_t map_granularity = 0;   // pages of a range that grows in place; 0 when none
};
BackingTraits TraitsOf(BackingKind kind);

struct BackingInfo {
  BackingKind kind = BackingKind::kSim;
  std::string device_name;       // "sim", "host (64 GiB RAM)", "NVIDIA H200"
  int device_ordinal = 0;        // CUDA device; 0 elsewhere
  std::uint64_t capacity = 0;    // bytes of the device
  std::uint64_t granularity = 256;  // regions are multiples of this
  bool host_accessible = false;  // memory may be read and written by host code (host backing)
};

class ExpandableBacking;

class Backing {
 public:
  virtual ~Backing() = default;
  virtual const BackingInfo& info() const = 0;

  // New memory of `bytes` (a multiple of info().granularity). Returns nullptr when the device has
  // no memory for it; throws BackingError on any other failure. `stream` matters to `async` only.
  virtual void* Reserve(std::uint64_t bytes, std::uint64_t stream) = 0;
  virtual void Release(void* base, std::uint64_t bytes, std::uint64_t stream) = 0;

  // Bytes currently taken from the device through this backing (regions and mapped pages).
  virtual std::uint64_t held() const = 0;

  // Ranges that grow and shrink in place; nullptr when this backing cannot do that (cuda, async).
  virtual ExpandableBacking* expandable() { return nullptr; }

  // Streams: whether work on the device's streams can still be using memory after it is freed (a
  // GPU), so that a block freed on one stream must not be used on another before that work is
  // done (StreamFences). False for sim and host, whose memory no queued work touches.
  virtual bool orders_streams() const { return false; }
  // Makes the work queued from now on `waiting` wait for the work queued so far on `freed_on`,
  // without blocking the host, and returns true. When `freed_on` no longer exists (a stream
  // destroyed after its memory was freed) it waits for the whole device instead, once, and returns
  // false: the caller forgets that stream. Throws BackingError when the device refuses. A no-op
  // (true) where orders_streams() is false.
  virtual bool OrderStreams(std::uint64_t /*waiting*/, std::uint64_t /*freed_on*/) { return true; }
};

// A reserved virtual range whose pages are mapped and unmapped on demand.
class ExpandableBacking {
 public:
  virtual ~ExpandableBacking() = default;
  // Pages are mapped in multiples of this (2 MiB for vmm and for expandable host/sim ranges).
  virtual std::uint64_t map_granularity() const = 0;
  // Address space for up to `max_bytes` (a multiple of map_granularity), nothing mapped. Returns
  // nullptr when no address space is left; throws BackingError on other failures.
  virtual void* ReserveRange(std::uint64_t max_bytes) = 0;
  // Backs [base + offset, base + offset + bytes) with memory. Returns false when the device has no
  // memory for it (nothing is mapped then).
  virtual bool Map(void* base, std::uint64_t offset, std::uint64_t bytes) = 0;
  virtual void Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) = 0;
  // Gives back the address space; every page must be unmapped first.
  virtual void ReleaseRange(void* base, std::uint64_t max_bytes) = 0;
};

// Builds the backing a configuration names (backing, capacity, device, external_use). Throws
// ConfigError for a backing this build lacks (CUDA off) and BackingError when the device cannot be
// opened (no GPU, no driver), with the reason.
std::unique_ptr<Backing> MakeBacking(const AllocConf& conf);

// Whether a usable CUDA device is present; when not, `why` says why ("no CUDA driver", "built
// without CUDA", ...). Tests skip their GPU cases with this message.
bool CudaDeviceAvailable(std::string* why);

}  // namespace fragscope
