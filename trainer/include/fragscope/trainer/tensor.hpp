// Tensors of the reference trainer. Every tensor's memory comes from a fragscope DeviceAllocator,
// tagged "<layer>/<role>" ("layer3.1.conv2/activation"), and goes back to it the moment the last
// handle to it is dropped: a Tensor is a shared handle, so "freed as soon as dead" is what C++
// scoping gives us, and the allocation schedule is the same whatever backend does the arithmetic.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/traces/event.hpp"
#include "fragscope/traces/tag_table.hpp"

namespace fragscope::trainer {

class Backend;

// NCHW; a matrix [rows, cols] is {rows, cols, 1, 1}.
struct Shape {
  int n = 1, c = 1, h = 1, w = 1;
  std::int64_t count() const { return std::int64_t{n} * c * h * w; }
  std::int64_t per_sample() const { return std::int64_t{c} * h * w; }
  bool operator==(const Shape&) const = default;
};
std::string ToString(const Shape& shape);  // "32x16x32x32"

// One allocation. Frees itself.
class Buffer {
 public:
  Buffer(DeviceAllocator& allocator, std::uint64_t bytes, traces::TagId tag);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return ptr_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  DeviceAllocator& allocator_;
  void* ptr_;
  std::uint64_t bytes_;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Buffer> buffer, Shape shape) : buffer_(std::move(buffer)), shape_(shape) {}
  bool defined() const { return buffer_ != nullptr; }
  const Shape& shape() const { return shape_; }
  std::int64_t count() const { return shape_.count(); }
  std::uint64_t bytes() const { return buffer_ ? buffer_->bytes() : 0; }
  // Device memory: only host code of the cpu backend may dereference it.
  float* f() const { return static_cast<float*>(buffer_ ? buffer_->data() : nullptr); }
  std::int32_t* i32() const { return static_cast<std::int32_t*>(buffer_ ? buffer_->data() : nullptr); }
  void* data() const { return buffer_ ? buffer_->data() : nullptr; }
  // The same memory seen with another shape of the same element count (flatten).
  Tensor View(Shape shape) const { return Tensor(buffer_, shape); }
  void Reset() { buffer_.reset(); }

 private:
  std::shared_ptr<Buffer> buffer_;
  Shape shape_;
};

// Tag ids for "<layer>/<role>" names. With a trace, ids come from the trace writer (so the trace
// names them); without, from a table of our own (so OOM reports and leak hunting still can).
class TagNames {
 public:
  explicit TagNames(traces::EventSink* sink = nullptr) : sink_(sink) {}
  void SetSink(traces::EventSink* sink) { sink_ = sink; ids_.clear(); }
  traces::TagId Intern(std::string_view name);
  std::string Name(traces::TagId id) const;

 private:
  traces::EventSink* sink_;
  traces::TagTable own_;
  std::unordered_map<std::string, traces::TagId> ids_;
  std::unordered_map<traces::TagId, std::string> names_;
};

// One (possibly virtual) device of a run: its allocator, the backend that computes on it and the
// tag names. Layers allocate through it.
class Device {
 public:
  Device(DeviceAllocator& allocator, Backend& backend, TagNames& names)
      : allocator_(allocator), backend_(backend), names_(names) {}
  // `bytes` of float32 for `shape`; throws OutOfMemory.
  Tensor Alloc(Shape shape, std::string_view owner, std::string_view role);
  Tensor AllocBytes(std::uint64_t bytes, std::string_view owner, std::string_view role);
  void Mark(std::string_view name) { allocator_.Mark(name); }
  DeviceAllocator& allocator() { return allocator_; }
  Backend& backend() { return backend_; }
  TagNames& names() { return names_; }

 private:
  DeviceAllocator& allocator_;
  Backend& backend_;
  TagNames& names_;
};

}  // namespace fragscope::trainer
