// RAPIDS RMM logging_resource_adaptor CSV: reader and writer (see rmm_csv.hpp and
// docs/importers.md, "RAPIDS RMM logs").
#include "fragscope/traces/rmm_csv.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "tf_text.hpp"
#include "trace_builder.hpp"

namespace fragscope::traces {
namespace {

using namespace tftext;

constexpr std::string_view kHeader = "Thread,Time,Action,Pointer,Size,Stream";
constexpr std::uint64_t kDayNs = 86400ULL * 1000000000ULL;

// "HH:MM:SS.ffffff" (any number of fraction digits) as nanoseconds since midnight.
std::optional<std::uint64_t> ParseTimeOfDay(std::string_view s) {
  std::string_view rest = s;
  const auto h = TakeUint(rest);
  if (!h || !StartsWith(rest, ":")) return std::nullopt;
  rest.remove_prefix(1);
  const auto m = TakeUint(rest);
  if (!m || !StartsWith(rest, ":")) return std::nullopt;
  rest.remove_prefix(1);
  const auto sec = TakeUint(rest);
  if (!sec || *h > 23 || *m > 59 || *sec > 60) return std::nullopt;
  std::uint64_t ns = (*h * 3600 + *m * 60 + *sec) * 1000000000ULL;
  if (StartsWith(rest, ".")) {
    rest.remove_prefix(1);
    std::uint64_t scale = 1000000000ULL;
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
      if (scale > 1) {
        scale /= 10;
        ns += static_cast<std::uint64_t>(rest.front() - '0') * scale;
      }
      rest.remove_prefix(1);
    }
  }
  if (!Trim(rest).empty()) return std::nullopt;
  return ns;
}

std::optional<std::uint64_t> WholeUint(std::string_view s) {
  s = Trim(s);
  const auto v = TakeUint(s);
  return v && s.empty() ? v : std::nullopt;
}

std::optional<std::uint64_t> WholeHex(std::string_view s) {
  s = Trim(s);
  if (s == "(nil)" || s == "nullptr") return 0;
  const auto v = TakeHex(s);
  return v && s.empty() ? v : std::nullopt;
}

enum class Action { kAllocate, kFree, kFailure };

std::optional<Action> ActionOf(std::string_view text) {
  if (text == "allocate") return Action::kAllocate;
  if (text == "free") return Action::kFree;
  if (text == "allocate failure") return Action::kFailure;
  return std::nullopt;
}

// One row of the log, its fields checked.
struct Row {
  std::uint64_t thread = 0, time = 0, pointer = 0, size = 0, stream = 0;
  std::string_view time_text;
  Action action = Action::kAllocate;
};

// `line` (trimmed, not empty) as a row, or why it is none. *rmm_shaped says whether it is meant as
// one all the same — its third field is an RMM action — and so broken, not some other log line.
std::optional<Row> ParseRow(std::string_view line, std::string* why, bool* rmm_shaped) {
  std::array<std::string_view, 6> field;
  std::size_t count = 0;
  std::string_view rest = line;
  bool more = false;
  while (true) {
    const std::size_t comma = rest.find(',');
    if (count == field.size()) {
      more = true;
      break;
    }
    field[count++] = Trim(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  *rmm_shaped = count >= 3 && ActionOf(field[2]).has_value();
  if (more) {
    *why = "more than 6 fields";
    return std::nullopt;
  }
  if (count != field.size()) {
    *why = fmt::format("{} fields, expected 6 ({})", count, kHeader);
    return std::nullopt;
  }
  Row row;
  const auto thread = WholeUint(field[0]);
  const auto time = ParseTimeOfDay(field[1]);
  const auto action = ActionOf(field[2]);
  const auto pointer = WholeHex(field[3]);
  const auto size = WholeUint(field[4]);
  const auto stream = WholeHex(field[5]);
  if (!thread) *why = fmt::format("bad thread id \"{}\"", field[0]);
  else if (!time) *why = fmt::format("bad time \"{}\" (expected HH:MM:SS.ffffff)", field[1]);
  else if (!action) *why = fmt::format("unknown action \"{}\" (expected allocate, free or allocate failure)", field[2]);
  else if (!pointer) *why = fmt::format("bad pointer \"{}\"", field[3]);
  else if (!size) *why = fmt::format("bad size \"{}\"", field[4]);
  else if (!stream) *why = fmt::format("bad stream \"{}\"", field[5]);
  else return Row{*thread, *time, *pointer, *size, *stream, field[1], *action};
  return std::nullopt;
}

bool IsRow(std::string_view line) {
  std::string why;
  bool shaped = false;
  return ParseRow(Trim(line), &why, &shaped).has_value();
}

}  // namespace

Trace ParseRmmCsv(std::string_view text, const std::string& name, const ReadLimits& limits) {
  Trace trace;
  TraceBuilder builder(trace);
  trace.header.producer = "RAPIDS RMM logging_resource_adaptor";
  trace.header.source_format = "rmm-csv";
  trace.header.metadata.emplace_back("source", name);
  trace.header.devices.push_back({0, "RMM device", "rmm", 0, 0});
  if (StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark

  struct Live { std::uint64_t id, size, rounded; };
  std::unordered_map<std::uint64_t, Live> live;
  std::uint64_t in_use = 0, requested = 0, next_id = 0, unknown_frees = 0, failures = 0;
  std::uint64_t first_time = 0, day = 0, previous_raw = 0, previous = 0;
  bool have_time = false;
  // A log RMM wrote starts with its header, and every line after it is a row. Rows without the
  // header (spark.rapids.memory.gpu.debug=STDOUT) or inside other log output (=STDERR) are read
  // from any text: lines that are no row are skipped and counted.
  std::optional<bool> strict;
  std::uint64_t rows = 0, skipped = 0;
  std::size_t first_skipped = 0;
  std::size_t line = 0;
  std::size_t offset = 0;
  while (offset < text.size()) {
    const std::size_t line_offset = offset;
    const std::size_t nl = text.find('\n', offset);
    std::string_view row = text.substr(offset, nl == std::string_view::npos ? std::string_view::npos : nl - offset);
    offset = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line;
    row = Trim(row);
    if (row.empty()) continue;
    auto fail = [&](const std::string& message) {
      return TraceError(name, line_offset, fmt::format("line {}: {}", line, message));
    };
    if (!strict) strict = row == kHeader;
    if (row == kHeader) continue;  // the header, or a log appended to another
    std::string why;
    bool shaped = false;
    const std::optional<Row> parsed = ParseRow(row, &why, &shaped);
    if (!parsed) {
      if (!*strict && !shaped) {  // other log output
        if (skipped++ == 0) first_skipped = line;
        continue;
      }
      if (nl == std::string_view::npos) {
        // The last line, with no end: the log was cut while it was written (a crash loses the
        // buffered tail). Only this line; one in the middle is an error.
        trace.warnings.push_back(fmt::format("{}:{}: the last line is cut short (\"{}\": {}; the log ends there, "
                                             "as when the process died while writing it): left out",
                                             name, line, row.substr(0, 80), why));
        break;
      }
      throw fail(why);
    }
    ++rows;
    const Row& r = *parsed;
    // A zero-size allocation gets a null pointer, and its free frees nothing (spark-rapids' logs
    // have them): no memory, no event.
    if (r.action != Action::kFailure && r.pointer == 0 && r.size == 0) continue;

    // Times of day from the first row on; past midnight the clock wraps (a step back of more than
    // 12 hours is a new day).
    if (!have_time) {
      first_time = previous_raw = r.time;
      have_time = true;
      trace.header.metadata.emplace_back("rmm.first_time", std::string(r.time_text));
    }
    if (r.time + kDayNs / 2 < previous_raw) day += kDayNs;
    previous_raw = r.time;
    const std::uint64_t absolute = day + r.time;
    previous = std::max(previous, absolute >= first_time ? absolute - first_time : 0);

    Event e;
    e.time_ns = previous;
    e.thread = static_cast<std::uint32_t>(r.thread);
    e.stream = r.stream;
    if (r.action == Action::kAllocate) {
      e.type = EventType::kAlloc;
      e.address = r.pointer;
      e.size = r.size;
      e.rounded = RoundUp256(r.size);
      e.alloc_id = ++next_id;
      if (auto it = live.find(r.pointer); it != live.end()) {
        trace.warnings.push_back(fmt::format("{}:{}: allocate of {:#x}, which is already allocated "
                                             "(line of the earlier allocation unknown): the earlier one is dropped",
                                             name, line, r.pointer));
        in_use -= it->second.rounded;
        requested -= it->second.size;
      }
      live[r.pointer] = {e.alloc_id, e.size, e.rounded};
      in_use += e.rounded;
      requested += e.size;
    } else if (r.action == Action::kFree) {
      e.type = EventType::kFree;
      e.address = r.pointer;
      e.size = r.size;
      e.rounded = RoundUp256(r.size);
      if (auto it = live.find(r.pointer); it != live.end()) {
        e.alloc_id = it->second.id;
        in_use -= it->second.rounded;
        requested -= it->second.size;
        live.erase(it);
      } else if (++unknown_frees <= 10) {
        trace.warnings.push_back(fmt::format("{}:{}: free of {:#x}, which the log never allocated (the "
                                             "allocation predates the log)", name, line, r.pointer));
      }
    } else {
      e.type = EventType::kOom;
      OomRecord& o = e.oom;
      o.request = r.size;
      o.rounded = RoundUp256(r.size);
      o.in_use = in_use;
      o.live_requested = requested;
      // The log gives the request and the live allocations only: no limit, no pool (regions,
      // free blocks), so those numbers are absent, never 0 (OomRecord::present).
      o.present = kOomRequest | kOomRounded | kOomInUse | kOomLiveRequested;
      o.cause = OomCause::kUnknown;  // the log has no limit: see docs/importers.md
      if (++failures == 1)
        trace.warnings.push_back(fmt::format("{}:{}: allocate failure: an RMM log has no limit, regions or "
                                             "free space, so the cause cannot be determined (cause unknown)",
                                             name, line));
    }
    if (const char* problem = EventSizeProblem(e)) throw fail(fmt::format("Size {}: {}", r.size, problem));
    // Each size is at most 4 EiB, but many live ones can still add up past 64 bits.
    if (in_use > traces::kMaxBytes * 2 || requested > traces::kMaxBytes * 2) {
      throw fail("the live allocations add up to more than 8 EiB: not a real log");
    }
    if (trace.events.size() >= limits.max_events) {
      throw fail(TooManyEventsMessage(trace.events.size() + 1, "one more on this line", text.size(), 1, limits));
    }
    builder.Append(e);
  }
  if (!strict) throw TraceError(name, 0, fmt::format("empty: no \"{}\" header line and no row", kHeader));
  if (!*strict && rows == 0) {
    throw TraceError(name, 0, fmt::format("not an RMM log: no \"{}\" header line first and no row anywhere", kHeader));
  }
  if (skipped > 0) {
    trace.warnings.push_back(fmt::format("{}: {} lines that are no RMM rows skipped (other log output; the first on "
                                         "line {})", name, skipped, first_skipped));
  }
  if (unknown_frees > 10)
    trace.warnings.push_back(fmt::format("{}: {} frees of pointers the log never allocated in all",
                                         name, unknown_frees));
  return trace;
}

Trace ReadRmmCsv(const std::string& path, const ReadLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw TraceError(path, 0, fmt::format("read failed: {}", std::strerror(errno)));
  return ParseRmmCsv(buffer.str(), path, limits);
}

bool LooksLikeRmmCsv(std::string_view head) {
  if (StartsWith(head, "\xEF\xBB\xBF")) head.remove_prefix(3);  // UTF-8 byte order mark
  // The header as the first line (a log RMM wrote), or anywhere in the first bytes, or a row:
  // rows without the header, or inside other log output (spark.rapids.memory.gpu.debug).
  for (std::size_t at = 0; at < head.size();) {
    const std::size_t nl = head.find('\n', at);
    const std::string_view line = Trim(head.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (line == kHeader || IsRow(line)) return true;
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return false;
}

void WriteRmmCsv(const Trace& trace, std::ostream& out) {
  out << kHeader << '\n';
  std::unordered_map<std::uint64_t, std::uint64_t> sizes;  // alloc_id -> size, for frees without one
  std::string row;
  for (const Event& e : trace.events) {
    const char* action = nullptr;
    std::uint64_t pointer = 0;
    std::uint64_t size = 0;
    switch (e.type) {
      case EventType::kAlloc:
        action = "allocate";
        pointer = e.address;
        size = e.size;
        if (e.alloc_id != 0) sizes[e.alloc_id] = e.size;
        break;
      case EventType::kFree: {
        action = "free";
        pointer = e.address;
        size = e.size;
        if (auto it = sizes.find(e.alloc_id); it != sizes.end()) {
          if (size == 0) size = it->second;
          sizes.erase(it);
        }
        break;
      }
      case EventType::kOom:
        action = "allocate failure";
        size = e.oom.request;
        break;
      default:
        continue;
    }
    const std::uint64_t t = e.time_ns % kDayNs;
    const std::uint64_t seconds = t / 1000000000ULL;
    row.clear();
    fmt::format_to(std::back_inserter(row), "{},{:02}:{:02}:{:02}.{:06},{},{:#x},{},{:#x}\n", e.thread,
                   seconds / 3600, seconds / 60 % 60, seconds % 60, t % 1000000000ULL / 1000, action,
                   pointer, size, e.stream);
    out << row;
  }
}

}  // namespace fragscope::traces
