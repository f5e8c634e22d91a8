// Calls libfragscope_torch.so exactly as PyTorch's CUDAPluggableAllocator does: dlopen by path,
// dlsym the two names, call them with the documented signatures, from several threads, then exit
// (the traces are flushed by the library's exit hook). Run by torch_shim_test.
//
//   torch_shim_child LIB normal   allocations on devices 0 and 1, a marker, an OOM, a bad free
//   torch_shim_child LIB badconf  FRAGSCOPE_ALLOC_CONF is wrong: every malloc throws
//
// A malloc that cannot be served throws (PyTorch does not check the pointer; an exception reaches
// Python as a RuntimeError): the child prints each exception's message to stderr as
// "caught: <what>" for the test to read.
#include <dlfcn.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

typedef struct CUstream_st* cudaStream_t;  // as in cuda_runtime_api.h
using MallocFn = void* (*)(ssize_t size, int device, cudaStream_t stream);
using FreeFn = void (*)(void* ptr, ssize_t size, int device, cudaStream_t stream);
using MarkFn = int (*)(int device, const char* name);

#define REQUIRE(cond)                                                   \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                         \
    }                                                                   \
  } while (0)

// Calls fn(); true when it threw a std::exception (whose message is printed "caught: ...").
template <typename Fn>
bool Throws(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "caught: %s\n", error.what());
    return true;
  }
  return false;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: torch_shim_child LIB normal|badconf\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto* torch_malloc = reinterpret_cast<MallocFn>(dlsym(lib, "fragscope_torch_malloc"));
  auto* torch_free = reinterpret_cast<FreeFn>(dlsym(lib, "fragscope_torch_free"));
  auto* mark = reinterpret_cast<MarkFn>(dlsym(lib, "fragscope_torch_mark"));
  REQUIRE(torch_malloc != nullptr && torch_free != nullptr && mark != nullptr);
  // Only the fragscope_torch_* entry points are exported, nothing of the C++ inside.
  REQUIRE(dlsym(lib, "_ZN9fragscope12MemorySystem6CreateERKNS_9AllocConfE") == nullptr);
  const std::string mode = argv[2];
  auto* stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1234});

  if (mode == "badconf") {
    REQUIRE(Throws([&] { torch_malloc(1024, 0, stream); }));
    REQUIRE(Throws([&] { torch_malloc(1024, 0, stream); }));  // logged once, not retried
    torch_free(nullptr, 0, 0, stream);
    return 0;
  }

  // Device 0 from four threads at once: 100 allocations each, written to, freed.
  std::vector<std::thread> threads;
  std::vector<int> failed(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const auto size = static_cast<ssize_t>(1000 + 4096 * ((i * 7 + t) % 13));
        void* ptr = torch_malloc(size, 0, stream);
        if (ptr == nullptr) {
          failed[static_cast<std::size_t>(t)] = 1;
          continue;
        }
        std::memset(ptr, t, static_cast<std::size_t>(size));  // host backing: real memory
        torch_free(ptr, size, 0, stream);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int f : failed) REQUIRE(f == 0);

  REQUIRE(mark(0, "step 1") == 0);
  void* kept = torch_malloc(1 << 20, 0, stream);  // still live at exit, as tensors often are
  REQUIRE(kept != nullptr);
  REQUIRE(Throws([&] { torch_malloc(ssize_t{64} << 20, 0, stream); }));  // above the 32 MiB limit: OOM
  int local = 0;
  torch_free(&local, sizeof local, 0, stream);  // not ours: logged, ignored
  torch_free(&local, sizeof local, 7, stream);  // a device that never allocated: no allocator made
  REQUIRE(Throws([&] { torch_malloc(-5, 0, stream); }));
  REQUIRE(Throws([&] { torch_malloc(16, 999, stream); }));  // no such device

  // Device 1: its own allocator and its own trace file.
  void* a = torch_malloc(3000, 1, stream);
  void* b = torch_malloc(5000, 1, stream);
  void* c = torch_malloc(7000, 1, stream);
  REQUIRE(a != nullptr && b != nullptr && c != nullptr);
  torch_free(a, 3000, 1, stream);
  torch_free(b, 5000, 1, stream);
  torch_free(c, 7000, 1, stream);
  std::printf("child done\n");
  return 0;  // exit: the library's atexit hook flushes and closes both traces
}
