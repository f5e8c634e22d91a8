// Internal to the RMM log readers: the rows of every RMM log format, once parsed (rmm_csv.cpp:
// logging_resource_adaptor's CSV; rmm_csv_v0.cpp: RMM 0.x's csv_log), become events here, with
// the live allocations, the bytes in use at a failure and the warnings in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "tf_text.hpp"
#include "trace_builder.hpp"

namespace fragscope::traces::rmm {

enum class Action {
  kAllocate,
  kFree,
  kFailure,  // an allocation that failed: the request is `size`
  kRealloc,  // RMM 0.x: a new block at `pointer` of `size` replaced one the row does not name
};

struct Row {
  Action action = Action::kAllocate;
  std::uint32_t device = 0;
  std::uint64_t thread = 0, pointer = 0, size = 0, stream = 0;
  // On the log's own clock (time of day, epoch, seconds since the logger started): the builder
  // counts from the first row and never goes back.
  std::uint64_t time_ns = 0;
  std::string_view time_text;  // as printed, for the trace's metadata
  bool size_unknown = false;   // RMM 0.x logs a free with size 0: the allocation's size stands for it
  std::string_view location;   // RMM 0.x: "file.py:683", where the call was made (the event's tag)
  // RMM 0.x: the device's total and free memory, measured after the event; 0 when not measured.
  std::uint64_t total_memory = 0, free_memory = 0;
};

// A decimal number that is the whole field (blanks around it allowed), or nullopt.
inline std::optional<std::uint64_t> WholeUint(std::string_view s) {
  s = tftext::Trim(s);
  const auto v = tftext::TakeUint(s);
  return v && s.empty() ? v : std::nullopt;
}

// A pointer that is the whole field: hexadecimal with or without 0x ("0x7f2c4c000000",
// "7f2c4c000000", std::ostream's "0" for a null one), or glibc's "(nil)" for %p of a null pointer.
inline std::optional<std::uint64_t> WholeHex(std::string_view s) {
  s = tftext::Trim(s);
  if (s == "(nil)" || s == "nullptr") return 0;
  const auto v = tftext::TakeHex(s);
  return v && s.empty() ? v : std::nullopt;
}

// The warning for a last line without its line end that is no row: the log was cut while it was
// written (a crash loses the buffered tail). `why` says what is wrong with the line.
std::string CutLastLine(const std::string& name, std::size_t line, std::string_view text, const std::string& why);

// What RMM logs for an allocation of 0 bytes (a null pointer) and its free: no memory, no event.
inline bool NoMemory(const Row& row) {
  return row.action != Action::kFailure && row.pointer == 0 && row.size == 0;
}

// Throws TraceError naming `name` and the line for what cannot be taken (a size over 4 EiB, live
// allocations adding up past 8 EiB, more events than the limits allow).
class EventBuilder {
 public:
  EventBuilder(Trace& trace, const std::string& name, const ReadLimits& limits, std::uint64_t text_bytes);

  // Declares a device (its events' `device`); Add declares the ones it meets as "RMM device N".
  void Device(std::uint32_t index, std::string name);
  // One row at `line`, starting at byte `offset` of the text.
  void Add(const Row& row, std::size_t line, std::uint64_t offset);
  // The warnings that sum up the log (frees of pointers it never allocated).
  void Finish();

 private:
  struct Live {
    std::uint64_t id, size, rounded;
    std::uint32_t device;
  };
  [[noreturn]] void Fail(std::size_t line, std::uint64_t offset, const std::string& message) const;
  std::uint64_t TimeOf(const Row& row);
  // RMM 0.x's Total Memory: the device's capacity (the first a row gives).
  void Capacity(const Row& row, std::size_t line);
  void Failure(const Row& row, Event& e, std::size_t line);

  Trace& trace_;
  TraceBuilder builder_;
  const std::string& name_;
  const ReadLimits& limits_;
  std::uint64_t text_bytes_;
  std::unordered_map<std::uint64_t, Live> live_;  // by pointer (unified addressing: unique across devices)
  std::unordered_map<std::uint32_t, std::uint64_t> in_use_, requested_;  // per device
  std::uint64_t next_id_ = 0, unknown_frees_ = 0, reallocs_ = 0;
  std::uint64_t first_time_ = 0, previous_ = 0;
  bool have_time_ = false;
  bool total_warned_ = false;
  bool no_limit_warned_ = false, fits_warned_ = false;  // each failure warning once
};

}  // namespace fragscope::traces::rmm
