#include "host_backing.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

// std::strerror is not thread-safe; the system category gives the same text without shared state.
std::string ErrnoText(int err) { return std::system_category().message(err); }

std::uintptr_t Addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

char* At(void* base, std::uint64_t offset) { return static_cast<char*>(base) + offset; }

// MAP_NORESERVE: no swap is reserved up front, so a region costs nothing until it is touched and a
// large capacity can be configured on a small machine; the capacity check is ours.
constexpr int kMapFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

}  // namespace

std::uint64_t HostBacking::PhysicalMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) {
    throw BackingError("host backing: cannot read the physical memory size (sysconf); set capacity");
  }
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

HostBacking::HostBacking(const AllocConf& conf) {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size > 0) page_size_ = static_cast<std::uint64_t>(page_size);
  const std::uint64_t ram = PhysicalMemory();
  const std::uint64_t capacity = conf.capacity.value_or(ram);
  if (capacity == 0) throw ConfigError("capacity", "capacity must be more than 0 bytes");
  if (conf.external_use >= capacity) {
    throw ConfigError("external_use",
                      fmt::format("external_use={} leaves nothing of the {} host capacity; it must be less "
                                  "than capacity",
                                  FormatBytes(conf.external_use), FormatBytes(capacity)));
  }
  info_.kind = BackingKind::kHost;
  info_.device_name = fmt::format("host ({} RAM)", FormatBytes(ram));
  info_.device_ordinal = 0;
  info_.capacity = capacity;
  info_.granularity = kRegionGranularity;
  info_.host_accessible = true;
  available_ = capacity - conf.external_use;
}

HostBacking::~HostBacking() {
  if (live_.empty()) return;
  fragscope::Log().warn("host backing destroyed with {} blocks still held ({}); unmapping them",
               live_.size(), FormatBytes(held_));
  for (const auto& [addr, block] : live_) {
    ::munmap(reinterpret_cast<void*>(addr), block.length);
  }
}

std::uint64_t HostBacking::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

HostBacking::Block& HostBacking::FindBlock(const void* base, bool want_range, const char* what) {
  const std::uintptr_t addr = Addr(base);
  if (addr % page_size_ != 0) {
    throw BackingError(fmt::format(
        "host backing: {}({:#x}): misaligned address; every block starts on a page boundary", what,
        addr));
  }
  auto it = live_.find(addr);
  if (it == live_.end()) {
    throw BackingError(fmt::format(
        "host backing: {}({:#x}): not a block of this backing (never reserved, or already "
        "released)",
        what, addr));
  }
  if (it->second.is_range != want_range) {
    throw BackingError(fmt::format(
        "host backing: {}({:#x}): the address is {}", what, addr,
        it->second.is_range ? "an expandable range (use ReleaseRange)"
                            : "a region, not an expandable range (use Release)"));
  }
  return it->second;
}

void* HostBacking::Reserve(std::uint64_t bytes, std::uint64_t /*stream*/) {
  if (bytes == 0 || bytes % kRegionGranularity != 0) {
    throw BackingError(fmt::format(
        "host backing: Reserve({} bytes): the size must be a non-zero multiple of {} bytes", bytes,
        kRegionGranularity));
  }
  std::lock_guard lock(mu_);
  if (bytes > available_ - held_) return nullptr;
  // mmap works in pages; the tail of the last page is not counted, so held() matches what the
  // allocator asked for, as with cudaMalloc.
  const std::uint64_t length = detail::RoundUp(bytes, page_size_);
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, kMapFlags, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    if (err == ENOMEM) return nullptr;  // out of address space or mappings: an OOM, not a failure
    throw BackingError(fmt::format("host backing: mmap of {} failed: {}", FormatBytes(length),
                                   ErrnoText(err)));
  }
  live_.emplace(Addr(p), Block{bytes, length, false, {}});
  held_ += bytes;
  return p;
}

void HostBacking::Release(void* base, std::uint64_t bytes, std::uint64_t /*stream*/) {
  std::lock_guard lock(mu_);
  Block& block = FindBlock(base, /*want_range=*/false, "Release");
  if (block.bytes != bytes) {
    throw BackingError(fmt::format(
        "host backing: Release({:#x}, {} bytes): the region was reserved with {} bytes",
        Addr(base), bytes, block.bytes));
  }
  if (::munmap(base, block.length) != 0) {
    const int err = errno;
    throw BackingError(fmt::format("host backing: munmap({:#x}, {}) failed: {}", Addr(base),
                                   FormatBytes(block.length), ErrnoText(err)));
  }
  held_ -= block.bytes;
  live_.erase(Addr(base));
}

void* HostBacking::ReserveRange(std::uint64_t max_bytes) {
  if (max_bytes == 0 || max_bytes % kMapGranularity != 0) {
    throw BackingError(fmt::format(
        "host backing: ReserveRange({} bytes): the size must be a non-zero multiple of {}",
        max_bytes, FormatBytes(kMapGranularity)));
  }
  if (max_bytes > std::numeric_limits<std::uint64_t>::max() - kMapGranularity) return nullptr;
  std::lock_guard lock(mu_);
  // Over-reserve by one granule and trim, so that the range starts on a 2 MiB boundary: mapped
  // pages then line up with transparent huge pages, as device pages line up in the vmm backing.
  const std::uint64_t raw_length = max_bytes + kMapGranularity;
  void* raw = ::mmap(nullptr, raw_length, PROT_NONE, kMapFlags, -1, 0);
  if (raw == MAP_FAILED) {
    const int err = errno;
    if (err == ENOMEM) return nullptr;
    throw BackingError(fmt::format("host backing: reserving {} of address space failed: {}",
                                   FormatBytes(max_bytes), ErrnoText(err)));
  }
  const std::uintptr_t raw_addr = Addr(raw);
  const std::uintptr_t aligned = detail::RoundUp(raw_addr, kMapGranularity);
  const std::uint64_t head = aligned - raw_addr;
  const std::uint64_t tail = raw_length - head - max_bytes;
  if (head > 0) ::munmap(raw, head);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + max_bytes), tail);
  live_.emplace(aligned, Block{max_bytes, max_bytes, true, {}});
  return reinterpret_cast<void*>(aligned);
}

HostBacking::Block& HostBacking::CheckPages(const void* base, std::uint64_t offset,
                                            std::uint64_t bytes, const char* what) {
  Block& block = FindBlock(base, /*want_range=*/true, what);
  if (bytes == 0 || offset % kMapGranularity != 0 || bytes % kMapGranularity != 0) {
    throw BackingError(fmt::format(
        "host backing: {}({:#x}, offset {}, {} bytes): offset and size must be multiples of {} "
        "and the size non-zero",
        what, Addr(base), offset, bytes, FormatBytes(kMapGranularity)));
  }
  if (offset > block.bytes || bytes > block.bytes - offset) {
    throw BackingError(fmt::format(
        "host backing: {}({:#x}, offset {}, {} bytes): past the end of the {} range", what,
        Addr(base), offset, bytes, FormatBytes(block.bytes)));
  }
  return block;
}

bool HostBacking::Map(void* base, std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Block& block = CheckPages(base, offset, bytes, "Map");
  if (block.mapped.Intersects(offset, offset + bytes)) {
    throw BackingError(fmt::format(
        "host backing: Map({:#x}, offset {}, {} bytes): part of the range is already mapped",
        Addr(base), offset, bytes));
  }
  if (bytes > available_ - held_) return false;
  if (::mprotect(At(base, offset), bytes, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    // mprotect may have changed part of the range before failing; put it all back so that
    // "false" means nothing is mapped.
    ::mprotect(At(base, offset), bytes, PROT_NONE);
    if (err == ENOMEM) return false;  // commit limit (vm.overcommit_memory=2) or mapping count
    throw BackingError(fmt::format("host backing: mprotect(read/write) of {} at {:#x} failed: {}",
                                   FormatBytes(bytes), Addr(base) + offset, ErrnoText(err)));
  }
  block.mapped.Insert(offset, offset + bytes);
  held_ += bytes;
  return true;
}

void HostBacking::Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Block& block = CheckPages(base, offset, bytes, "Unmap");
  if (!block.mapped.Contains(offset, offset + bytes)) {
    throw BackingError(fmt::format(
        "host backing: Unmap({:#x}, offset {}, {} bytes): part of the range is not mapped",
        Addr(base), offset, bytes));
  }
  // MADV_DONTNEED gives the pages back to the kernel now (a private anonymous page reads as zero
  // afterwards); PROT_NONE makes a stray access fault, as an unmapped device page would.
  if (::madvise(At(base, offset), bytes, MADV_DONTNEED) != 0 ||
      ::mprotect(At(base, offset), bytes, PROT_NONE) != 0) {
    const int err = errno;
    throw BackingError(fmt::format("host backing: unmapping {} at {:#x} failed: {}",
                                   FormatBytes(bytes), Addr(base) + offset, ErrnoText(err)));
  }
  block.mapped.Erase(offset, offset + bytes);
  held_ -= bytes;
}

void HostBacking::ReleaseRange(void* base, std::uint64_t max_bytes) {
  std::lock_guard lock(mu_);
  Block& block = FindBlock(base, /*want_range=*/true, "ReleaseRange");
  if (block.bytes != max_bytes) {
    throw BackingError(fmt::format(
        "host backing: ReleaseRange({:#x}, {} bytes): the range was reserved with {} bytes",
        Addr(base), max_bytes, block.bytes));
  }
  if (!block.mapped.empty()) {
    throw BackingError(fmt::format(
        "host backing: ReleaseRange({:#x}): {} are still mapped; unmap every page first",
        Addr(base), FormatBytes(block.mapped.total())));
  }
  if (::munmap(base, block.length) != 0) {
    const int err = errno;
    throw BackingError(fmt::format("host backing: munmap of the {} range at {:#x} failed: {}",
                                   FormatBytes(block.length), Addr(base), ErrnoText(err)));
  }
  live_.erase(Addr(base));
}

}  // namespace fragscope
