// A backing adaptor that refuses new memory once `cap` bytes are held, regions and mapped pages
// alike: another process that took the rest of the device after the limit was set.
#pragma once

#include <cstdint>
#include <memory>

#include "fragscope/allocator/backing.hpp"

namespace fragscope::testing {

class CappedBacking final : public Backing, public ExpandableBacking {
 public:
  CappedBacking(std::unique_ptr<Backing> upstream, std::uint64_t cap)
      : upstream_(std::move(upstream)), cap_(cap) {}
  const BackingInfo& info() const override { return upstream_->info(); }
  void* Reserve(std::uint64_t bytes, std::uint64_t stream) override {
    if (upstream_->held() + bytes > cap_) return nullptr;
    return upstream_->Reserve(bytes, stream);
  }
  void Release(void* base, std::uint64_t bytes, std::uint64_t stream) override {
    upstream_->Release(base, bytes, stream);
  }
  std::uint64_t held() const override { return upstream_->held(); }
  ExpandableBacking* expandable() override { return upstream_->expandable() != nullptr ? this : nullptr; }

  std::uint64_t map_granularity() const override { return upstream_->expandable()->map_granularity(); }
  void* ReserveRange(std::uint64_t max_bytes) override { return upstream_->expandable()->ReserveRange(max_bytes); }
  bool Map(void* base, std::uint64_t offset, std::uint64_t bytes) override {
    if (upstream_->held() + bytes > cap_) return false;
    ++maps;
    return upstream_->expandable()->Map(base, offset, bytes);
  }
  void Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) override {
    ++unmaps;
    upstream_->expandable()->Unmap(base, offset, bytes);
  }
  void ReleaseRange(void* base, std::uint64_t max_bytes) override {
    upstream_->expandable()->ReleaseRange(base, max_bytes);
  }

  std::uint64_t maps = 0;    // calls that reached the device
  std::uint64_t unmaps = 0;

 private:
  std::unique_ptr<Backing> upstream_;
  std::uint64_t cap_;
};

}  // namespace fragscope::testing
