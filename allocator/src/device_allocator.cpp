#include "fragscope/allocator/device_allocator.hpp"

#include "fragscope/allocator/errors.hpp"

namespace fragscope {

void* DeviceAllocator::Allocate(std::uint64_t bytes, const AllocOptions& options) {
  OomReport report;
  void* ptr = TryAllocate(bytes, options, &report);
  if (ptr == nullptr) throw OutOfMemory(std::move(report));
  return ptr;
}

}  // namespace fragscope
