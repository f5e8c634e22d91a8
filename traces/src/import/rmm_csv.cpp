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
#include "rmm_csv_v0.hpp"
#include "rmm_events.hpp"
#include "tf_text.hpp"

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
  const std::uint64_t fraction = TakeFractionNs(rest);
  if (!Trim(rest).empty()) return std::nullopt;
  return (*h * 3600 + *m * 60 + *sec) * 1000000000ULL + fraction;
}

// "1634567890.123456": seconds since the Unix epoch, as RMM's documentation (docs/logging.md) shows
// the Time column; RMM's code prints the time of day.
std::optional<std::uint64_t> ParseEpochSeconds(std::string_view s) {
  std::string_view rest = Trim(s);
  const auto seconds = TakeUint(rest);
  if (!seconds || *seconds > UINT64_MAX / 1000000000ULL) return std::nullopt;
  const std::uint64_t fraction = TakeFractionNs(rest);
  if (!rest.empty()) return std::nullopt;
  return *seconds * 1000000000ULL + fraction;
}

// RMM's code writes "free"; its documentation (docs/logging.md) shows "deallocate".
std::optional<rmm::Action> ActionOf(std::string_view text) {
  if (text == "allocate") return rmm::Action::kAllocate;
  if (text == "free" || text == "deallocate") return rmm::Action::kFree;
  if (text == "allocate failure") return rmm::Action::kFailure;
  return std::nullopt;
}

// One row of the log, its fields checked.
struct Row {
  rmm::Row row;
  bool time_of_day = true;  // else seconds since the epoch: no midnight
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
  const auto thread = rmm::WholeUint(field[0]);
  const auto time_of_day = ParseTimeOfDay(field[1]);
  const auto time = time_of_day ? time_of_day : ParseEpochSeconds(field[1]);
  const auto action = ActionOf(field[2]);
  const auto pointer = rmm::WholeHex(field[3]);
  const auto size = rmm::WholeUint(field[4]);
  const auto stream = rmm::WholeHex(field[5]);
  if (!thread) *why = fmt::format("bad thread id \"{}\"", field[0]);
  else if (!time) *why = fmt::format("bad time \"{}\" (expected HH:MM:SS.ffffff or seconds since the epoch)", field[1]);
  else if (!action) *why = fmt::format("unknown action \"{}\" (expected allocate, free, deallocate or allocate failure)", field[2]);
  else if (!pointer) *why = fmt::format("bad pointer \"{}\"", field[3]);
  else if (!size) *why = fmt::format("bad size \"{}\"", field[4]);
  else if (!stream) *why = fmt::format("bad stream \"{}\"", field[5]);
  else {
    Row r;
    r.row.action = *action;
    r.row.thread = *thread;
    r.row.pointer = *pointer;
    r.row.size = *size;
    r.row.stream = *stream;
    r.row.time_ns = *time;
    r.row.time_text = field[1];
    r.time_of_day = time_of_day.has_value();
    return r;
  }
  return std::nullopt;
}

bool IsRow(std::string_view line) {
  std::string why;
  bool shaped = false;
  return ParseRow(Trim(line), &why, &shaped).has_value();
}

}  // namespace

Trace ParseRmmCsv(std::string_view text, const std::string& name, const ReadLimits& limits) {
  if (StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  if (rmm::FindV0Header(text)) return rmm::ParseV0(text, name, limits);
  Trace trace;
  trace.header.producer = "RAPIDS RMM logging_resource_adaptor";
  trace.header.source_format = "rmm-csv";
  trace.header.metadata.emplace_back("source", name);
  rmm::EventBuilder builder(trace, name, limits, text.size());
  builder.Device(0, "RMM device");  // the log has no device column

  std::uint64_t day = 0, previous_raw = 0;
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
    if (!strict) strict = row == kHeader;
    if (row == kHeader) continue;  // the header, or a log appended to another
    std::string why;
    bool shaped = false;
    std::optional<Row> parsed = ParseRow(row, &why, &shaped);
    if (!parsed) {
      if (!*strict && !shaped) {  // other log output
        if (skipped++ == 0) first_skipped = line;
        continue;
      }
      if (nl == std::string_view::npos) {
        // The last line, with no end: the log was cut while it was written (a crash loses the
        // buffered tail). Only this line; one in the middle is an error.
        trace.warnings.push_back(rmm::CutLastLine(name, line, row, why));
        break;
      }
      throw TraceError(name, line_offset, fmt::format("line {}: {}", line, why));
    }
    ++rows;
    rmm::Row& r = parsed->row;
    // Times of day: past midnight the clock wraps (a step back of more than 12 hours is a new day).
    if (parsed->time_of_day && !rmm::NoMemory(r)) {
      if (have_time && r.time_ns + kDayNs / 2 < previous_raw) day += kDayNs;
      previous_raw = r.time_ns;
      have_time = true;
      r.time_ns += day;
    }
    builder.Add(r, line, line_offset);
  }
  if (!strict) throw TraceError(name, 0, fmt::format("empty: no \"{}\" header line and no row", kHeader));
  if (!*strict && rows == 0) {
    throw TraceError(name, 0, fmt::format("not an RMM log: no \"{}\" header line first and no row anywhere", kHeader));
  }
  if (skipped > 0) {
    trace.warnings.push_back(fmt::format("{}: {} lines that are no RMM rows skipped (other log output; the first on "
                                         "line {})", name, skipped, first_skipped));
  }
  builder.Finish();
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
  // rows without the header, or inside other log output (spark.rapids.memory.gpu.debug); or RMM
  // 0.x's header, wherever the program printed its log.
  for (std::size_t at = 0; at < head.size();) {
    const std::size_t nl = head.find('\n', at);
    const std::string_view line = Trim(head.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (line == kHeader || IsRow(line) || rmm::IsV0Header(line)) return true;
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
