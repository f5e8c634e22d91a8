// The SAX handler of the torch.profiler reader (torch_profiler_json.hpp): it keeps only what becomes
// events — the "[memory]" and "[OutOfMemory]" instants, the operator spans around them and the
// device properties — so a trace of a few hundred megabytes does not become a DOM ten times its size.
#include "torch_profiler_json.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces::profiler {
namespace {

using nlohmann::json;

// What one event object of traceEvents says that matters here.
struct EventFields {
  std::string name, ph, cat, tid;
  std::optional<double> ts, dur;
  std::optional<std::int64_t> device_type, device_id, bytes;
  std::optional<std::uint64_t> addr, total_allocated, total_reserved;
  void Clear() { *this = EventFields(); }
};

enum class Role { kOther, kRoot, kEvents, kEvent, kArgs, kDevices, kDevice };

class Handler : public nlohmann::json_sax<json> {
 public:
  Handler(Scan& out, const std::string& name, const ReadLimits& limits) : out_(out), name_(name), limits_(limits) {}

  // The JSON error that stopped the parse: its byte offset and nlohmann's words.
  std::optional<std::uint64_t> error_at;
  std::string error;

  bool null() override { return true; }
  bool boolean(bool value) override {
    if (!stack_.empty() && IsProfileMemoryKey(stack_.back())) out_.profile_memory |= value;
    return true;
  }
  bool number_integer(number_integer_t value) override { return Number(static_cast<double>(value), value, std::nullopt); }
  bool number_unsigned(number_unsigned_t value) override {
    const std::optional<std::int64_t> as_signed =
        value <= static_cast<std::uint64_t>(INT64_MAX) ? std::optional(static_cast<std::int64_t>(value)) : std::nullopt;
    return Number(static_cast<double>(value), as_signed, value);
  }
  bool number_float(number_float_t value, const string_t&) override {
    return Number(value, std::nullopt, std::nullopt, true);
  }
  bool string(string_t& value) override {
    if (stack_.empty()) return true;
    const Frame& top = stack_.back();
    if (top.role == Role::kEvent) {
      if (top.key == "name") event_.name = value;
      else if (top.key == "ph") event_.ph = value;
      else if (top.key == "cat") event_.cat = value;
      else if (top.key == "tid") event_.tid = value;
      else if (top.key == "ts") event_.ts = ParseNumber(value);
      else if (top.key == "dur") event_.dur = ParseNumber(value);
    } else if (top.role == Role::kArgs && top.key == "Addr") {
      // Some versions write the address as a string ("0x7f..." or decimal).
      try {
        std::size_t used = 0;
        const unsigned long long a = std::stoull(value, &used, 0);
        if (used == value.size()) event_.addr = a;
      } catch (const std::exception&) {
      }
    } else if (top.role == Role::kDevice && top.key == "name") {
      device_name_ = value;
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool key(string_t& value) override {
    stack_.back().key = value;
    return true;
  }
  bool start_object(std::size_t) override {
    Role role = Role::kOther;
    if (stack_.empty()) role = Role::kRoot;
    else if (stack_.back().role == Role::kEvents) role = Role::kEvent;
    else if (stack_.back().role == Role::kEvent && stack_.back().key == "args") role = Role::kArgs;
    else if (stack_.back().role == Role::kDevices) role = Role::kDevice;
    if (role == Role::kEvent) event_.Clear();
    if (role == Role::kDevice) device_id_.reset(), device_memory_ = 0, device_name_.clear();
    stack_.push_back({role, {}});
    return true;
  }
  bool end_object() override {
    const Role role = stack_.back().role;
    stack_.pop_back();
    if (role == Role::kEvent) EndEvent();
    if (role == Role::kDevice && device_id_) out_.gpus[*device_id_] = {device_name_, device_memory_};
    return true;
  }
  bool start_array(std::size_t) override {
    Role role = Role::kOther;
    if (stack_.empty()) role = Role::kEvents;  // a bare array of events is a Chrome trace too
    else if (stack_.back().role == Role::kRoot && stack_.back().key == "traceEvents") role = Role::kEvents;
    else if (stack_.back().role == Role::kRoot && stack_.back().key == "deviceProperties") role = Role::kDevices;
    stack_.push_back({role, {}});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // nlohmann's message names the line and column; the offset is the byte.
    std::string what = e.what();
    if (const auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    error_at = position == 0 ? 0 : position - 1;
    error = std::move(what);
    return false;
  }

 private:
  struct Frame {
    Role role;
    std::string key;
  };

  // "profile_memory" at the top of the trace (Kineto's header) or in an event's args.
  static bool IsProfileMemoryKey(const Frame& top) {
    return (top.role == Role::kRoot || top.role == Role::kArgs) && top.key == "profile_memory";
  }

  static std::optional<double> ParseNumber(const std::string& text) {
    try {
      std::size_t used = 0;
      const double value = std::stod(text, &used);
      if (used == text.size()) return value;
    } catch (const std::exception&) {
    }
    return std::nullopt;
  }

  // A byte total ("Total Allocated", "Total Reserved"): a whole number of bytes, else left out.
  static std::optional<std::uint64_t> Total(double value, std::optional<std::int64_t> integer,
                                            std::optional<std::uint64_t> unsigned_value, bool is_float) {
    if (unsigned_value) return unsigned_value;
    if (integer) return *integer >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*integer)) : std::nullopt;
    if (is_float && std::isfinite(value) && value >= 0 && value < 9.2e18 && value == std::floor(value)) {
      return static_cast<std::uint64_t>(value);
    }
    return std::nullopt;
  }

  bool Number(double value, std::optional<std::int64_t> integer, std::optional<std::uint64_t> unsigned_value,
              bool is_float = false) {
    if (stack_.empty()) return true;
    const Frame& top = stack_.back();
    if (IsProfileMemoryKey(top)) out_.profile_memory |= value != 0;
    if (top.role == Role::kEvent) {
      if (top.key == "ts") event_.ts = value;
      else if (top.key == "dur") event_.dur = value;
      else if (top.key == "tid") event_.tid = integer ? std::to_string(*integer) : fmt::format("{}", value);
    } else if (top.role == Role::kArgs) {
      if (top.key == "Bytes") {
        if (!integer || is_float) {
          throw TraceError(name_, fmt::format("memory event {}: \"Bytes\" {} is not a whole number of bytes that "
                                              "fits in 63 bits", out_.memory.size() + 1, value));
        }
        event_.bytes = integer;
      } else if (top.key == "Device Type" && integer) {
        event_.device_type = integer;
      } else if (top.key == "Device Id" && integer) {
        event_.device_id = integer;
      } else if (top.key == "Addr") {
        if (unsigned_value) event_.addr = unsigned_value;
        else if (integer) event_.addr = static_cast<std::uint64_t>(*integer);  // written as a signed 64-bit value
      } else if (top.key == "Total Allocated") {
        event_.total_allocated = Total(value, integer, unsigned_value, is_float);
      } else if (top.key == "Total Reserved") {
        event_.total_reserved = Total(value, integer, unsigned_value, is_float);
      }
    } else if (top.role == Role::kDevice) {
      if (top.key == "id" && integer) device_id_ = integer;
      else if (top.key == "totalGlobalMem" && unsigned_value) device_memory_ = *unsigned_value;
      else if (top.key == "totalGlobalMem" && integer && *integer > 0) device_memory_ = static_cast<std::uint64_t>(*integer);
    }
    return true;
  }

  void EndEvent() {
    const std::uint64_t order = ++out_.events_seen;
    if (!event_.ts || !std::isfinite(*event_.ts) || *event_.ts < 0) return;  // metadata ("M") has none
    const bool oom = event_.name == "[OutOfMemory]";
    if ((event_.name == "[memory]" && event_.bytes) || oom) {
      if (out_.memory.size() + out_.ooms.size() >= limits_.max_events) {
        throw TraceError(name_, fmt::format("more than {} memory events (--max-events)", limits_.max_events));
      }
      // A failed request of no bytes or fewer is no request: the event is broken, not an OOM of 0.
      if (oom && event_.bytes && *event_.bytes <= 0) {
        throw TraceError(name_, fmt::format("\"[OutOfMemory]\" event at ts {} µs: \"Bytes\" {} is not a request "
                                            "size (a failed allocation asks for at least 1 byte)",
                                            *event_.ts, *event_.bytes));
      }
      MemoryEvent m;
      m.ts = *event_.ts;
      m.tid = event_.tid;
      m.device_type = event_.device_type.value_or(kCpu);
      m.device_id = event_.device_id.value_or(-1);
      m.bytes = event_.bytes.value_or(0);
      m.addr = oom ? std::nullopt : event_.addr;
      m.total_allocated = event_.total_allocated;
      m.total_reserved = event_.total_reserved;
      m.order = order;
      (oom ? out_.ooms : out_.memory).push_back(std::move(m));
      return;
    }
    if (event_.ph != "X" || !event_.dur || !std::isfinite(*event_.dur) || *event_.dur < 0) return;
    Span span{*event_.ts, *event_.ts + *event_.dur, event_.tid, event_.name, order};
    if (event_.name.rfind("ProfilerStep#", 0) == 0) {
      out_.steps.push_back(std::move(span));
    } else if (event_.cat == "Operator" || event_.cat == "cpu_op" || event_.cat == "user_annotation") {
      out_.ops.push_back(std::move(span));
    }
  }

  Scan& out_;
  const std::string& name_;
  const ReadLimits& limits_;
  std::vector<Frame> stack_;
  EventFields event_;
  std::optional<std::int64_t> device_id_;
  std::uint64_t device_memory_ = 0;
  std::string device_name_;
};

// Whether the JSON stopped at `offset` because the file ends there: nothing but white space or
// zero bytes (a file preallocated and never filled) from there on.
bool EndsAt(std::string_view text, std::uint64_t offset) {
  for (std::size_t i = static_cast<std::size_t>(std::min<std::uint64_t>(offset, text.size())); i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\0' && c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

}  // namespace

Scan ScanJson(std::string_view text, const std::string& name, const ReadLimits& limits) {
  Scan scan;
  Handler handler(scan, name, limits);
  lenient::Reader reader(text);
  const bool complete = json::sax_parse(reader.begin(), reader.end(), &handler);
  scan.repairs = reader.repairs();
  if (!complete) {
    const std::uint64_t at = handler.error_at.value_or(text.size());
    // A cut: the parse ran into the end of the data (or the zero bytes after it); anything else is
    // malformed JSON, and a reader cannot know what the rest meant.
    if (!EndsAt(text, at) || text.find_first_not_of(std::string_view(" \t\r\n\0", 5)) == std::string_view::npos) {
      throw TraceError(name, at, fmt::format("not a Chrome trace JSON: {}", handler.error));
    }
    scan.cut_at = at;
  }
  return scan;
}

}  // namespace fragscope::traces::profiler
