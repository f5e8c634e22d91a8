#include "fragscope/allocator/device_allocator.hpp"

#include "fragscope/allocator/errors.hpp"

namespace fragscope {

void* DeviceAllocator::Allocate(std::uint64_t bytes, const AllocOptions& options) {
  // One report per thread, reused: building and destroying one on every call would cost the hot
  // path more than the allocation itself. Only the slow path writes into it.
  thread_local OomReport report;
  void* ptr = TryAllocate(bytes, options, &report);
  if (ptr == nullptr) throw OutOfMemory(report);
  return ptr;
}

}  // namespace fragscope
