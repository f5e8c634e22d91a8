// libFuzzer target: the allocator's public API driven by arbitrary bytes. The first byte picks a
// policy (sim and host backings, growth, no growth, preallocation, expandable, no gc, passthrough,
// virtual devices, TensorFlow's and PyTorch's allocators); the rest is a program of allocations
// (sizes small, near powers of two, near kMaxRequestBytes and near 2^64 where rounding would
// wrap), frees of live pointers, and frees of foreign, interior, null and already freed pointers.
// After every call: the invariant checker, no two live allocations overlap, the stats count the
// live set, a refused request leaves the stats as they were and a request above the limit is
// request-too-large. Anything else escaping, a sanitizer report, a hang or runaway memory is a
// finding. Built by `fuzz/run.sh allocator_api`.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fuzz_check.hpp"

using fragscope::fuzz::Check;

namespace {

// Small limits: host memory is really touched on the host backing.
// The default pages (expandable=on, unmap=lazy); growth= selects the region model.
constexpr const char* kPolicies[] = {
    "backing=sim,capacity=1GiB,limit=256MiB",
    "backing=sim,capacity=1GiB,limit=256MiB,unmap=eager",
    "backing=sim,capacity=1GiB,limit=256MiB,growth=on",
    "backing=sim,capacity=1GiB,limit=256MiB,growth=off",
    "backing=sim,capacity=1GiB,limit=256MiB,preallocate=0.5",
    "backing=sim,capacity=1GiB,limit=256MiB,expandable=on,preallocate=0.5",
    "backing=sim,capacity=1GiB,limit=256MiB,gc=off",
    "backing=sim,capacity=1GiB,limit=256MiB,passthrough=on",
    "backing=sim,capacity=1GiB,virtual_devices=64MiB+128MiB",
    "backing=sim,capacity=1GiB,limit=256MiB,preset=tensorflow",
    "backing=sim,capacity=1GiB,limit=256MiB,preset=tensorflow,growth=off",
    "backing=sim,capacity=1GiB,limit=256MiB,preset=pytorch",
    "backing=sim,capacity=1GiB,limit=256MiB,preset=pytorch,expandable_segments=on",
    "backing=sim,capacity=1GiB,limit=256MiB,preset=pytorch,max_split_size_mb=20,garbage_collection_threshold=0.5,"
    "roundup_power2_divisions=[1:4,2:2,>:8]",
    "backing=host,capacity=1GiB,limit=64MiB",
    "backing=host,capacity=1GiB,limit=64MiB,unmap=eager",
    "backing=host,capacity=1GiB,limit=64MiB,growth=on",
    "backing=host,capacity=1GiB,limit=64MiB,passthrough=on",
    "backing=host,capacity=1GiB,limit=64MiB,preset=pytorch,expandable_segments=on",
};

class Program {
 public:
  Program(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  std::uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint64_t Word() {
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value = value << 8 | Byte();
    return value;
  }
  std::uint64_t Size() {
    const std::uint8_t kind = Byte();
    switch (kind % 6) {
      case 0: return Byte();                                             // tiny, 0 included
      case 1: return (std::uint64_t{Byte()} << 8 | Byte()) * 64;          // up to ~4 MiB
      case 2: {                                                          // near a power of two
        const unsigned k = Byte() % 64;
        const auto delta = static_cast<std::int64_t>(static_cast<std::int8_t>(Byte()));
        return (std::uint64_t{1} << k) + static_cast<std::uint64_t>(delta);
      }
      case 3: return UINT64_MAX - Byte();                                 // rounding would wrap
      case 4: return fragscope::kMaxRequestBytes - 128 + Byte();          // around the cap
      default: return Word();
    }
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

void CheckLive(const std::map<std::uint64_t, std::uint64_t>& live) {
  std::uint64_t end = 0;
  for (const auto& [address, rounded] : live) {
    Check(address >= end);  // no overlap with the previous allocation
    end = address + rounded;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope;
  if (size == 0) return 0;
  Program program(data, size);
  const char* policy = kPolicies[program.Byte() % std::size(kPolicies)];
  auto system = MemorySystem::Create(ParseAllocConf(policy));
  std::map<std::uint64_t, std::uint64_t> live[2];  // per device: address -> rounded
  int ops = 0;
  while (!program.done() && ops++ < 2000) {
    const std::uint8_t op = program.Byte();
    const std::size_t device = (op >> 7) % system->device_count();
    DeviceAllocator& allocator = system->device(device);
    auto& mine = live[device];
    switch (op % 4) {
      case 0:
      case 1: {
        const std::uint64_t request = program.Size();
        const AllocatorStats before = allocator.Stats();
        OomReport report;
        void* ptr = allocator.TryAllocate(request, {}, &report);
        if (ptr == nullptr) {
          const AllocatorStats after = allocator.Stats();
          Check(after.allocations == before.allocations && after.in_use == before.in_use);
          Check(report.numbers.request == request);
          if (request > kMaxRequestBytes || RoundUp(request) > allocator.limit()) {
            Check(report.cause() == OomCause::kRequestTooLarge);
          }
        } else {
          Check(request <= allocator.limit());
          const auto address = reinterpret_cast<std::uint64_t>(ptr);
          Check(address % kRoundingUnit == 0);
          Check(mine.count(address) == 0);
          // At least the 256-byte rounding (passthrough rounds further, to the granularity).
          mine.emplace(address, RoundUp(request));
          CheckLive(mine);
        }
        break;
      }
      case 2: {
        if (mine.empty()) break;
        auto it = mine.begin();
        std::advance(it, static_cast<long>(program.Byte() % mine.size()));
        allocator.Free(reinterpret_cast<void*>(it->first));
        mine.erase(it);
        break;
      }
      default: {  // a pointer this allocator does not hold: refused, nothing changes
        std::uint64_t address = program.Word();
        if (!mine.empty() && program.Byte() % 2 == 0) address = mine.begin()->first + 1 + program.Byte();
        if (mine.count(address) != 0) break;
        const AllocatorStats before = allocator.Stats();
        bool refused = false;
        try {
          allocator.Free(reinterpret_cast<void*>(address));
        } catch (const InvalidFree&) {
          refused = true;
        }
        Check(refused);
        Check(allocator.Stats().allocations == before.allocations);
        break;
      }
    }
    allocator.CheckInvariants();
    Check(allocator.Stats().allocations == mine.size());
  }
  for (std::size_t device = 0; device < system->device_count(); ++device) {
    for (const auto& [address, rounded] : live[device]) {
      system->device(device).Free(reinterpret_cast<void*>(address));
    }
    system->device(device).CheckInvariants();
  }
  return 0;
}
