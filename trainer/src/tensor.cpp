#include "fragscope/trainer/tensor.hpp"

#include <fmt/format.h>

namespace fragscope::trainer {

std::string ToString(const Shape& s) { return fmt::format("{}x{}x{}x{}", s.n, s.c, s.h, s.w); }

Buffer::Buffer(DeviceAllocator& allocator, std::uint64_t bytes, traces::TagId tag)
    : allocator_(allocator), ptr_(allocator.Allocate(bytes, {.stream = 0, .tag = tag})), bytes_(bytes) {}

Buffer::~Buffer() { allocator_.Free(ptr_); }

traces::TagId TagNames::Intern(std::string_view name) {
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) return it->second;
  const traces::TagId id = sink_ != nullptr ? sink_->Intern(name) : own_.Intern(name);
  ids_.emplace(std::string(name), id);
  names_[id] = std::string(name);
  return id;
}

std::string TagNames::Name(traces::TagId id) const {
  auto it = names_.find(id);
  return it == names_.end() ? std::string() : it->second;
}

Tensor Device::Alloc(Shape shape, std::string_view owner, std::string_view role) {
  return AllocBytes(static_cast<std::uint64_t>(shape.count()) * sizeof(float), owner, role).View(shape);
}

Tensor Device::AllocBytes(std::uint64_t bytes, std::string_view owner, std::string_view role) {
  const traces::TagId tag = names_.Intern(fmt::format("{}/{}", owner, role));
  const auto count = static_cast<int>((bytes + sizeof(float) - 1) / sizeof(float));
  return Tensor(std::make_shared<Buffer>(allocator_, bytes, tag), Shape{count, 1, 1, 1});
}

}  // namespace fragscope::trainer
