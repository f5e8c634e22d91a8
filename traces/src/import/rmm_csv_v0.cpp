// RMM 0.x's log (rmm_csv_v0.hpp): rmm::Logger::to_csv, which `rmm.csv_log()` returned. One row per
// call of rmm::alloc / rmm::free, written when the call returned (RMM's LogIt destructor):
//   Event Type      Alloc, Free or Realloc
//   Device ID       cudaGetDevice at the call
//   Address         the pointer as std::ostream prints a void* ("0x7fae06600000"; a null one "0"):
//                   an Alloc that threw never set it, so a null Address with a Size is a failure
//   Stream          the cudaStream_t, printed the same way ("0": the default stream)
//   Size (bytes)    the request; a Free logs 0 (rmm::free takes no size)
//   Free Memory, Total Memory   cudaMemGetInfo after the call when usage logging was on, else 0
//   Current Allocs  the live pointers the logger counted (checked, not used: the events give them)
//   Start, End, Elapsed   seconds since the logger was made, as std::ostream prints a double
//                   (6 significant digits: "1.10549", "1.2e-05"); End is the event's time
//   Location        "file:line" of the call (later 0.x versions only)
#include "rmm_csv_v0.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "rmm_events.hpp"
#include "tf_text.hpp"

namespace fragscope::traces::rmm {
namespace {

using namespace tftext;

enum Column { kEventType, kDeviceId, kAddress, kStream, kSize, kFreeMemory, kTotalMemory, kCurrentAllocs, kStart,
              kEnd, kElapsed, kLocation, kColumnCount };
constexpr std::array<std::string_view, kColumnCount> kNames = {
    "Event Type", "Device ID", "Address", "Stream", "Size (bytes)", "Free Memory", "Total Memory", "Current Allocs",
    "Start",      "End",       "Elapsed", "Location"};

// The columns in the header's order.
struct Layout {
  std::vector<Column> columns;
  bool Has(Column c) const {
    for (Column k : columns)
      if (k == c) return true;
    return false;
  }
};

TraceError Error(const std::string& name, std::uint64_t offset, std::size_t line, const std::string& message) {
  return TraceError(name, offset, fmt::format("line {}: {}", line, message));
}

Layout ReadHeader(std::string_view header, const std::string& name, std::uint64_t offset, std::size_t line) {
  Layout layout;
  std::size_t index = 0;
  for (std::string_view rest = header;; ++index) {
    const std::size_t comma = rest.find(',');
    const std::string_view field = Trim(rest.substr(0, comma));
    std::size_t c = 0;
    while (c < kColumnCount && kNames[c] != field) ++c;
    if (c == kColumnCount || layout.Has(static_cast<Column>(c)))
      throw Error(name, offset, line,
                  fmt::format("column {} of the RMM 0.x header: {} \"{}\" (expected the columns of rmm::Logger: "
                              "Event Type, Device ID, Address, Stream, Size (bytes), Free Memory, Total Memory, "
                              "Current Allocs, Start, End, Elapsed[, Location])",
                              index + 1, c == kColumnCount ? "unknown column" : "a second", field));
    layout.columns.push_back(static_cast<Column>(c));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  for (Column required : {kEventType, kAddress, kSize})
    if (!layout.Has(required))
      throw Error(name, offset, line, fmt::format("the RMM 0.x header has no \"{}\" column", kNames[required]));
  return layout;
}

std::optional<Action> EventOf(std::string_view text) {
  if (text == "Alloc") return Action::kAllocate;
  if (text == "Free") return Action::kFree;
  if (text == "Realloc") return Action::kRealloc;
  return std::nullopt;
}

// Seconds as std::ostream prints a double ("1.10549", "1234.57", "1.2e-05", "0") in nanoseconds;
// at most 10^9 seconds (31 years) since the logger was made.
std::optional<std::uint64_t> SecondsNs(std::string_view s) {
  double seconds = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), seconds);
  if (error != std::errc() || end != s.data() + s.size() || !(seconds >= 0) || seconds > 1e9) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(seconds * 1e9));
}

// The fields of a row: as many as the header has columns; a last Location column takes the rest
// of the line (a path may hold a comma).
std::vector<std::string_view> Fields(std::string_view row, const Layout& layout) {
  std::vector<std::string_view> fields;
  const bool rest_is_location = layout.columns.back() == kLocation;
  while (true) {
    if (rest_is_location && fields.size() + 1 == layout.columns.size()) {
      fields.push_back(Trim(row));
      break;
    }
    const std::size_t comma = row.find(',');
    fields.push_back(Trim(row.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    row.remove_prefix(comma + 1);
  }
  return fields;
}

// A row as an RMM event, or the problem ("column 5 (Size (bytes)): \"12x\" is not a number").
std::optional<Row> ParseRow(std::string_view line, const Layout& layout, std::string& problem) {
  const std::vector<std::string_view> fields = Fields(line, layout);
  if (fields.size() != layout.columns.size()) {
    problem = fmt::format("{} fields, expected {} (the header's columns)", fields.size(), layout.columns.size());
    return std::nullopt;
  }
  Row row;
  bool alloc = false;
  for (std::size_t i = 0; i < fields.size() && problem.empty(); ++i) {
    const std::string_view f = fields[i];
    const Column column = layout.columns[i];
    auto bad = [&](std::string_view what) {
      problem = fmt::format("column {} ({}): \"{}\" is not {}", i + 1, kNames[column], f, what);
    };
    auto number = [&](std::uint64_t& out) {
      if (const auto v = WholeUint(f)) out = *v;
      else bad("a decimal number");
    };
    std::uint64_t ignored = 0;
    switch (column) {
      case kEventType:
        if (const auto action = EventOf(f)) {
          row.action = *action;
          alloc = *action == Action::kAllocate;
        } else {
          bad("an event type (Alloc, Free or Realloc)");
        }
        break;
      case kDeviceId:
        if (const auto v = WholeUint(f); v && *v <= UINT32_MAX) row.device = static_cast<std::uint32_t>(*v);
        else bad("a device number");
        break;
      case kAddress:
      case kStream:
        if (const auto v = WholeHex(f)) (column == kAddress ? row.pointer : row.stream) = *v;
        else bad("a pointer");
        break;
      case kSize: number(row.size); break;
      case kFreeMemory: number(row.free_memory); break;
      case kTotalMemory: number(row.total_memory); break;
      case kCurrentAllocs: number(ignored); break;
      case kStart:
      case kElapsed:
      case kEnd:
        if (const auto ns = SecondsNs(f)) {
          if (column == kEnd) {
            row.time_ns = *ns;
            row.time_text = f;
          } else if (column == kStart && row.time_text.empty()) {
            row.time_ns = *ns;  // the time where a log has no End column
            row.time_text = f;
          }
        } else {
          bad("a number of seconds");
        }
        break;
      case kLocation: row.location = f; break;
      case kColumnCount: break;
    }
  }
  if (!problem.empty()) return std::nullopt;
  // rmm::alloc logs the request of an allocation that threw with the pointer it never got.
  if (alloc && row.pointer == 0 && row.size > 0) row.action = Action::kFailure;
  // rmm::free takes no size: the allocation's size stands for the 0 it logs.
  row.size_unknown = row.action == Action::kFree && row.size == 0;
  return row;
}

// The text's lines from byte `at` on, each trimmed, with its number and offset.
class Lines {
 public:
  Lines(std::string_view text, std::size_t at, std::size_t number) : text_(text), at_(at), number_(number) {}
  bool Next(std::string_view& line) {
    if (at_ >= text_.size()) return false;
    offset_ = at_;
    const std::size_t nl = text_.find('\n', at_);
    ended_ = nl != std::string_view::npos;
    line = Trim(text_.substr(at_, ended_ ? nl - at_ : std::string_view::npos));
    at_ = ended_ ? nl + 1 : text_.size();
    ++number_;
    return true;
  }
  std::size_t number() const { return number_; }
  std::size_t offset() const { return offset_; }
  bool ended() const { return ended_; }  // the line has its line end

 private:
  std::string_view text_;
  std::size_t at_, number_, offset_ = 0;
  bool ended_ = false;
};

}  // namespace

bool IsV0Header(std::string_view line) { return StartsWith(Trim(line), "Event Type,"); }

std::optional<std::size_t> FindV0Header(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    if (IsV0Header(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at))) return at;
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return std::nullopt;
}

Trace ParseV0(std::string_view text, const std::string& name, const ReadLimits& limits) {
  const std::size_t header_at = FindV0Header(text).value_or(0);
  Trace trace;
  trace.header.producer = "RAPIDS RMM 0.x rmm::Logger (csv_log)";
  trace.header.source_format = "rmm-csv";
  trace.header.metadata.emplace_back("source", name);
  EventBuilder builder(trace, name, limits, text.size());
  // Before the header: the program's own output (the log is printed where the program asks).
  std::size_t number = 0, before = 0, first_before = 0;
  for (std::size_t at = 0; at < header_at;) {
    const std::size_t nl = text.find('\n', at);  // there is one: the header starts after it
    ++number;
    if (!Trim(text.substr(at, nl - at)).empty() && before++ == 0) first_before = number;
    at = nl + 1;
  }
  Lines rows(text, header_at, number);
  std::string_view line;
  rows.Next(line);
  const std::size_t header_line = rows.number();
  const Layout layout = ReadHeader(line, name, rows.offset(), header_line);
  std::size_t read = 0;
  std::size_t after = 0, first_after = 0;
  bool ended = false;
  while (rows.Next(line)) {
    if (line.empty()) continue;
    // The end of the log: the program's output after it, or the log printed again. A line with an
    // event type, or with as many fields as the header, is a row (and an error if it is broken).
    const std::string_view first = line.substr(0, line.find(','));
    const bool row_shaped = EventOf(Trim(first)).has_value() ||
                            static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1 >=
                                layout.columns.size();
    if (ended || !row_shaped || IsV0Header(line)) {
      if (!ended && IsV0Header(line))
        trace.warnings.push_back(fmt::format("{}:{}: the log is printed again from here (a second header): only the "
                                             "first is read",
                                             name, rows.number()));
      if (after++ == 0) first_after = rows.number();
      ended = true;
      continue;
    }
    std::string problem;
    const std::optional<Row> row = ParseRow(line, layout, problem);
    if (!row) {
      if (!rows.ended()) {
        // The last line, with no end: the print was cut. Only this line; one in the middle is an error.
        trace.warnings.push_back(CutLastLine(name, rows.number(), line, problem));
        break;
      }
      throw Error(name, rows.offset(), rows.number(), problem);
    }
    builder.Add(*row, rows.number(), rows.offset());
    ++read;
  }
  if (read == 0)
    throw Error(name, header_at, header_line, "the RMM 0.x header is followed by no row: no log to read");
  if (before > 0)
    trace.warnings.push_back(fmt::format("{}: {} lines before the RMM 0.x log skipped (other output; the first on line "
                                         "{})",
                                         name, before, first_before));
  if (after > 0)
    trace.warnings.push_back(fmt::format("{}: {} lines after the RMM 0.x log not read (the first on line {})", name,
                                         after, first_after));
  builder.Finish();
  return trace;
}

}  // namespace fragscope::traces::rmm
