// The C ABI of include/fragscope/fragscope.h over MemorySystem: every exception becomes a status
// and a thread-local message; nothing throws across the boundary.
#include "fragscope/fragscope.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace {

constexpr std::uint64_t kMagic = 0x6672616773636f70;  // "fragscop"

// Size of the first fragscope_stats (struct_size through utilization): callers built against any
// later header pass at least this much. Fixed here, not sizeof, so that appending fields later
// does not reject programs built against this header.
constexpr std::size_t kStatsSizeV1 = 17 * sizeof(std::uint64_t);
static_assert(offsetof(fragscope_stats, utilization) + sizeof(double) == kStatsSizeV1);
static_assert(sizeof(fragscope_stats) >= kStatsSizeV1);

thread_local std::string last_error;

fragscope_status Fail(fragscope_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

}  // namespace

namespace {

// Tags outlive traces. A live chunk keeps the tag id it was allocated with, and a trace attached
// later records that chunk again (SetSink), so an id must name the same tag in every trace, and a
// tag given while no trace is attached must not be lost. The allocators therefore intern into this
// table, which lives as long as the handle, and record through it: each event's tag is translated
// into the attached writer's own id as it passes (interned there on first use).
class StableTagSink final : public fragscope::traces::EventSink {
 public:
  fragscope::traces::TagId Intern(std::string_view text) override {
    if (text.empty()) return fragscope::traces::kNoTag;
    std::lock_guard guard(mutex_);
    const auto [it, added] = ids_.try_emplace(std::string(text), static_cast<fragscope::traces::TagId>(names_.size() + 1));
    if (added) names_.push_back(it->first);
    return it->second;
  }
  void Record(fragscope::traces::Event& event) override {
    if (event.tag != fragscope::traces::kNoTag) event.tag = WriterId(event.tag);
    writer_->Record(event);
  }
  // The writer events go to from now on (the caller attaches this sink only while there is one).
  void Attach(fragscope::traces::TraceWriter* writer) {
    std::lock_guard guard(mutex_);
    writer_ = writer;
    writer_ids_.assign(names_.size() + 1, fragscope::traces::kNoTag);
  }

 private:
  fragscope::traces::TagId WriterId(fragscope::traces::TagId stable) {
    std::lock_guard guard(mutex_);
    if (stable >= writer_ids_.size()) writer_ids_.resize(names_.size() + 1, fragscope::traces::kNoTag);
    fragscope::traces::TagId& id = writer_ids_[stable];
    if (id == fragscope::traces::kNoTag) id = writer_->Intern(names_[stable - 1]);
    return id;
  }

  std::mutex mutex_;
  std::vector<std::string> names_;  // stable id k names names_[k - 1]
  std::unordered_map<std::string, fragscope::traces::TagId> ids_;
  std::vector<fragscope::traces::TagId> writer_ids_;  // stable id -> the writer's; kNoTag: not yet
  fragscope::traces::TraceWriter* writer_ = nullptr;
};

}  // namespace

struct fragscope_allocator {
  std::uint64_t magic = kMagic;
  // What the allocators record to while a trace is attached; declared first, so destroyed after
  // the allocators and the writer.
  StableTagSink tags;
  std::unique_ptr<fragscope::MemorySystem> system;
  std::mutex trace_mutex;  // attach, detach, flush
  std::unique_ptr<fragscope::traces::TraceWriter> trace;
};

namespace {

bool Live(const fragscope_allocator* allocator) {
  return allocator != nullptr && allocator->magic == kMagic;
}

// Runs `body` (which returns a status), turning every exception into a status and a message.
template <typename Body>
fragscope_status Guard(Body&& body) noexcept {
  try {
    return body();
  } catch (const fragscope::ConfigError& error) {
    return Fail(FRAGSCOPE_ERROR_CONFIG, error.what());
  } catch (const fragscope::OutOfMemory& error) {
    return Fail(FRAGSCOPE_ERROR_OUT_OF_MEMORY, error.what());
  } catch (const fragscope::InvalidFree& error) {
    return Fail(FRAGSCOPE_ERROR_INVALID_FREE, error.what());
  } catch (const fragscope::BackingError& error) {
    return Fail(FRAGSCOPE_ERROR_BACKING, error.what());
  } catch (const fragscope::traces::TraceError& error) {
    return Fail(FRAGSCOPE_ERROR_TRACE, error.what());
  } catch (const std::bad_alloc&) {
    return Fail(FRAGSCOPE_ERROR_INTERNAL, "host memory exhausted");
  } catch (const std::exception& error) {
    return Fail(FRAGSCOPE_ERROR_INTERNAL, error.what());
  } catch (...) {
    return Fail(FRAGSCOPE_ERROR_INTERNAL, "unknown exception");
  }
}

fragscope_status CheckHandle(const fragscope_allocator* allocator) {
  if (allocator == nullptr) return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "allocator is NULL");
  if (!Live(allocator)) {
    return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT,
                "allocator is not a live fragscope allocator (destroyed, or another object)");
  }
  return FRAGSCOPE_OK;
}

// Checks the handle and that `device` is one of its (virtual) devices.
// The position of `device`: its index (0 without virtual devices), or the number the allocator
// calls itself in reports and traces (device=N without virtual devices: the CUDA ordinal), so that
// a device number read from an OOM report can be passed back. count when neither.
std::size_t DeviceIndex(const fragscope_allocator* allocator, int device) {
  const std::size_t count = allocator->system->device_count();
  if (device < 0) return count;
  if (static_cast<std::size_t>(device) < count) return static_cast<std::size_t>(device);
  if (count == 1 && allocator->system->device(0).device() == static_cast<std::uint32_t>(device)) return 0;
  return count;
}

fragscope::DeviceAllocator& DeviceAt(fragscope_allocator* allocator, int device) {
  return allocator->system->device(DeviceIndex(allocator, device));
}
const fragscope::DeviceAllocator& DeviceAt(const fragscope_allocator* allocator, int device) {
  return allocator->system->device(DeviceIndex(allocator, device));
}

fragscope_status CheckDevice(const fragscope_allocator* allocator, int device) {
  if (const auto status = CheckHandle(allocator); status != FRAGSCOPE_OK) return status;
  const std::size_t count = allocator->system->device_count();
  if (DeviceIndex(allocator, device) >= count) {
    return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT,
                fmt::format("device {} does not exist: this allocator has {} device{} (0{})",
                            device, count, count == 1 ? "" : "s",
                            count == 1 ? (allocator->system->device(0).device() == 0
                                              ? std::string()
                                              : fmt::format(", which reports call device {}",
                                                            allocator->system->device(0).device()))
                                       : fmt::format("..{}", count - 1)));
  }
  return FRAGSCOPE_OK;
}

fragscope_status CopyOut(const std::string& text, char* buffer, std::size_t capacity,
                         std::size_t* needed) {
  if (buffer == nullptr && capacity > 0) {
    return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "buffer is NULL but capacity is not 0");
  }
  if (needed != nullptr) *needed = text.size() + 1;
  if (capacity > 0) {
    const std::size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  if (capacity < text.size() + 1) {
    return Fail(FRAGSCOPE_ERROR_BUFFER_TOO_SMALL,
                fmt::format("the text needs {} bytes, the buffer has {}", text.size() + 1, capacity));
  }
  return FRAGSCOPE_OK;
}

std::string OomJson(const fragscope::OomReport& r) { return fragscope::ToJson(r); }

fragscope_status LastOom(const fragscope_allocator* allocator, int device, char* buffer,
                         std::size_t capacity, std::size_t* needed, bool json) {
  if (const auto status = CheckDevice(allocator, device); status != FRAGSCOPE_OK) return status;
  return Guard([&] {
    const auto report = DeviceAt(allocator, device).LastOom();
    if (!report) {
      return Fail(FRAGSCOPE_ERROR_NO_OOM, fmt::format("device {} has had no OOM", device));
    }
    return CopyOut(json ? OomJson(*report) : report->Describe(), buffer, capacity, needed);
  });
}

void CloseTrace(fragscope_allocator* allocator) {  // trace_mutex held
  if (!allocator->trace) return;
  allocator->system->SetSink(nullptr);
  auto trace = std::move(allocator->trace);
  trace->Close();
}

}  // namespace

extern "C" {

const char* fragscope_version(void) { return "0.1.0"; }

const char* fragscope_status_name(fragscope_status status) {
  switch (status) {
    case FRAGSCOPE_OK: return "ok";
    case FRAGSCOPE_ERROR_INVALID_ARGUMENT: return "invalid-argument";
    case FRAGSCOPE_ERROR_CONFIG: return "config";
    case FRAGSCOPE_ERROR_BACKING: return "backing";
    case FRAGSCOPE_ERROR_OUT_OF_MEMORY: return "out-of-memory";
    case FRAGSCOPE_ERROR_INVALID_FREE: return "invalid-free";
    case FRAGSCOPE_ERROR_TRACE: return "trace";
    case FRAGSCOPE_ERROR_NO_OOM: return "no-oom";
    case FRAGSCOPE_ERROR_BUFFER_TOO_SMALL: return "buffer-too-small";
    case FRAGSCOPE_ERROR_INTERNAL: return "internal";
  }
  return "unknown";
}

const char* fragscope_last_error(void) { return last_error.c_str(); }

fragscope_status fragscope_create(const char* conf, fragscope_allocator** out) {
  if (out == nullptr) return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  return Guard([&] {
    const fragscope::AllocConf parsed =
        conf == nullptr ? fragscope::ResolveAllocConf("") : fragscope::ParseAllocConf(conf);
    auto allocator = std::make_unique<fragscope_allocator>();
    allocator->system = fragscope::MemorySystem::Create(parsed);
    *out = allocator.release();
    return FRAGSCOPE_OK;
  });
}

void fragscope_destroy(fragscope_allocator* allocator) {
  if (!Live(allocator)) return;
  {
    std::lock_guard guard(allocator->trace_mutex);
    try {
      CloseTrace(allocator);
    } catch (...) {  // a write error at close: the events are lost, the memory is not
    }
  }
  allocator->magic = 0;
  delete allocator;
}

fragscope_status fragscope_device_count(const fragscope_allocator* allocator, int* out) {
  if (const auto status = CheckHandle(allocator); status != FRAGSCOPE_OK) return status;
  if (out == nullptr) return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = static_cast<int>(allocator->system->device_count());
  return FRAGSCOPE_OK;
}

fragscope_status fragscope_describe_conf(const fragscope_allocator* allocator, char* buffer,
                                         size_t capacity, size_t* needed) {
  if (const auto status = CheckHandle(allocator); status != FRAGSCOPE_OK) return status;
  return Guard([&] { return CopyOut(allocator->system->conf().ToString(), buffer, capacity, needed); });
}

fragscope_status fragscope_malloc_tagged(fragscope_allocator* allocator, uint64_t size, int device,
                                         uint64_t stream, const char* tag, void** out) {
  if (out == nullptr) return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (const auto status = CheckDevice(allocator, device); status != FRAGSCOPE_OK) return status;
  return Guard([&] {
    fragscope::AllocOptions options;
    options.stream = stream;
    if (tag != nullptr) options.tag = allocator->tags.Intern(tag);  // kept with or without a trace
    fragscope::OomReport report;
    void* ptr = DeviceAt(allocator, device)
                    .TryAllocate(size, options, &report);
    if (ptr == nullptr) return Fail(FRAGSCOPE_ERROR_OUT_OF_MEMORY, report.Summary());
    *out = ptr;
    return FRAGSCOPE_OK;
  });
}

fragscope_status fragscope_malloc(fragscope_allocator* allocator, uint64_t size, int device,
                                  uint64_t stream, void** out) {
  return fragscope_malloc_tagged(allocator, size, device, stream, nullptr, out);
}

fragscope_status fragscope_free(fragscope_allocator* allocator, void* ptr, int device) {
  if (const auto status = CheckDevice(allocator, device); status != FRAGSCOPE_OK) return status;
  if (ptr == nullptr) return FRAGSCOPE_OK;
  return Guard([&] {
    DeviceAt(allocator, device).Free(ptr);
    return FRAGSCOPE_OK;
  });
}

fragscope_status fragscope_attach_trace(fragscope_allocator* allocator, const char* path) {
  if (const auto status = CheckHandle(allocator); status != FRAGSCOPE_OK) return status;
  if (path == nullptr || *path == '\0') {
    return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "trace path is NULL or empty");
  }
  return Guard([&] {
    std::lock_guard guard(allocator->trace_mutex);
    CloseTrace(allocator);
    allocator->trace = std::make_unique<fragscope::traces::TraceWriter>(
        path, allocator->system->MakeTraceHeader(fmt::format("libfragscope {}", fragscope_version())));
    allocator->tags.Attach(allocator->trace.get());
    allocator->system->SetSink(&allocator->tags);
    return FRAGSCOPE_OK;
  });
}

fragscope_status fragscope_flush_trace(fragscope_allocator* allocator) {
  if (const auto status = CheckHandle(allocator); status != FRAGSCOPE_OK) return status;
  return Guard([&] {
    std::lock_guard guard(allocator->trace_mutex);
    if (allocator->trace) allocator->trace->Flush();
    return FRAGSCOPE_OK;
  });
}

fragscope_status fragscope_detach_trace(fragscope_allocator* allocator) {
  if (const auto status = CheckHandle(allocator); status != FRAGSCOPE_OK) return status;
  return Guard([&] {
    std::lock_guard guard(allocator->trace_mutex);
    CloseTrace(allocator);
    return FRAGSCOPE_OK;
  });
}

fragscope_status fragscope_mark(fragscope_allocator* allocator, int device, const char* name) {
  if (const auto status = CheckDevice(allocator, device); status != FRAGSCOPE_OK) return status;
  if (name == nullptr) return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "marker name is NULL");
  return Guard([&] {
    std::lock_guard guard(allocator->trace_mutex);
    DeviceAt(allocator, device).Mark(name);
    return FRAGSCOPE_OK;
  });
}

fragscope_status fragscope_get_stats(const fragscope_allocator* allocator, int device,
                                     fragscope_stats* out) {
  if (const auto status = CheckDevice(allocator, device); status != FRAGSCOPE_OK) return status;
  if (out == nullptr) return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT, "out is NULL");
  if (out->struct_size < kStatsSizeV1) {
    return Fail(FRAGSCOPE_ERROR_INVALID_ARGUMENT,
                fmt::format("fragscope_stats.struct_size is {}; set it to sizeof(fragscope_stats) "
                            "({} with this library's header), e.g. with FRAGSCOPE_STATS_INIT",
                            out->struct_size, sizeof(fragscope_stats)));
  }
  return Guard([&] {
    const fragscope::AllocatorStats s =
        DeviceAt(allocator, device).Stats();
    const fragscope_stats filled{
        .struct_size = 0,
        .in_use = s.in_use,
        .reserved = s.reserved,
        .live_requested = s.live_requested,
        .allocations = s.allocations,
        .regions = s.regions,
        .largest_free = s.largest_free,
        .limit = s.limit,
        .peak_in_use = s.peak_in_use,
        .peak_reserved = s.peak_reserved,
        .peak_live_requested = s.peak_live_requested,
        .peak_allocations = s.peak_allocations,
        .total_allocs = s.total_allocs,
        .total_frees = s.total_frees,
        .total_ooms = s.total_ooms,
        .external_fragmentation = s.external_fragmentation(),
        .utilization = s.utilization(),
        .address_space = s.address_space,
        .peak_address_space = s.peak_address_space,
    };
    // A caller built against a newer header passes a larger struct: fill what this library
    // knows and say so in struct_size. One built against an older one gets its prefix.
    const std::size_t bytes = std::min<std::size_t>(out->struct_size, sizeof filled);
    std::memcpy(out, &filled, bytes);
    out->struct_size = bytes;
    return FRAGSCOPE_OK;
  });
}

fragscope_status fragscope_last_oom_text(const fragscope_allocator* allocator, int device,
                                         char* buffer, size_t capacity, size_t* needed) {
  return LastOom(allocator, device, buffer, capacity, needed, /*json=*/false);
}

fragscope_status fragscope_last_oom_json(const fragscope_allocator* allocator, int device,
                                         char* buffer, size_t capacity, size_t* needed) {
  return LastOom(allocator, device, buffer, capacity, needed, /*json=*/true);
}

}  // extern "C"
