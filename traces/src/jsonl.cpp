#include "fragscope/traces/jsonl.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>
#include <unordered_set>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "block_codec.hpp"
#include "header_json.hpp"

namespace fragscope::traces {
namespace {

using nlohmann::json;

// Field bits, in the order fields are written.
enum Field : unsigned {
  kStream = 1u << 0,
  kAddress = 1u << 1,
  kSize = 1u << 2,
  kRounded = 1u << 3,
  kRegion = 1u << 4,
  kTag = 1u << 5,
  kThread = 1u << 6,
  kAllocId = 1u << 7,
};

// The fields each type uses (event.hpp); those are written even when zero.
unsigned TypeFields(EventType type) {
  switch (type) {
    case EventType::kAlloc: return kStream | kAddress | kSize | kRounded | kRegion | kTag | kThread | kAllocId;
    case EventType::kFree: return kAddress | kSize | kRounded | kAllocId;
    case EventType::kRegionReserve:
    case EventType::kRegionRelease:
    case EventType::kAddressReserve:
    case EventType::kAddressRelease:
    case EventType::kMap:
    case EventType::kUnmap: return kAddress | kSize;
    case EventType::kOom: return kStream | kTag;
    case EventType::kMarker: return kTag;
  }
  return 0;
}

bool KnownType(EventType type) { return IsKnownEventType(type); }

// The oom numbers, in record order (OomField bit i is entry i); an absent one is written as null.
constexpr std::string_view kOomFieldNames[] = {"request",      "rounded",        "limit",           "reserved",
                                               "in_use",       "live_requested", "free_in_regions", "largest_free",
                                               "headroom",     "chunk_count",    "region_count"};
std::uint64_t* OomFieldAt(OomRecord& o, std::size_t i) {
  std::uint64_t* fields[] = {&o.request,      &o.rounded,        &o.limit,           &o.reserved,
                             &o.in_use,       &o.live_requested, &o.free_in_regions, &o.largest_free,
                             &o.headroom,     &o.chunk_count,    &o.region_count};
  return fields[i];
}

class LineWriter {
 public:
  LineWriter(std::ostream& out, std::function<const std::string&(TagId)> tag_name)
      : out_(out), tag_name_(std::move(tag_name)) {}
  ~LineWriter() { Drain(); }
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  void Header(const TraceHeader& header) {
    nlohmann::ordered_json line;
    line["type"] = "header";
    const nlohmann::ordered_json fields = detail::HeaderToJson(header);
    for (const auto& [key, value] : fields.items()) line[key] = value;
    const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace);
    buffer_.append(text.data(), text.data() + text.size());
    buffer_.push_back('\n');
  }

  void Write(const Event& e) {
    auto it = std::back_inserter(buffer_);
    if (KnownType(e.type)) {
      fmt::format_to(it, R"({{"type":"{}")", ToString(e.type));
    } else {
      fmt::format_to(it, R"({{"type":{})", static_cast<unsigned>(e.type));
    }
    fmt::format_to(it, R"(,"seq":{},"time_ns":{},"device":{})", e.seq, e.time_ns, e.device);
    const unsigned native = TypeFields(e.type);
    unsigned present = native;
    if (e.stream != 0) present |= kStream;
    if (e.address != 0) present |= kAddress;
    if (e.size != 0) present |= kSize;
    if (e.rounded != 0) present |= kRounded;
    if (e.region != 0) present |= kRegion;
    if (e.tag != kNoTag) present |= kTag;
    if (e.thread != 0) present |= kThread;
    if (e.alloc_id != 0) present |= kAllocId;
    if (present & kStream) fmt::format_to(it, R"(,"stream":{})", e.stream);
    if (present & kAddress) fmt::format_to(it, R"(,"address":{})", e.address);
    if (present & kSize) fmt::format_to(it, R"(,"size":{})", e.size);
    if (present & kRounded) fmt::format_to(it, R"(,"rounded":{})", e.rounded);
    if (present & kRegion) fmt::format_to(it, R"(,"region":{})", e.region);
    if (present & kTag) fmt::format_to(it, R"(,"tag":{})", EscapedTag(e.tag));
    if (present & kThread) fmt::format_to(it, R"(,"thread":{})", e.thread);
    if (present & kAllocId) fmt::format_to(it, R"(,"alloc_id":{})", e.alloc_id);
    if (e.type == EventType::kOom) {
      OomRecord o = e.oom;
      buffer_.append(std::string_view(R"(,"oom":{)"));
      for (std::size_t i = 0; i < std::size(kOomFieldNames); ++i) {
        if (o.Has(static_cast<std::uint16_t>(1u << i))) {
          fmt::format_to(it, R"("{}":{},)", kOomFieldNames[i], *OomFieldAt(o, i));
        } else {
          fmt::format_to(it, R"("{}":null,)", kOomFieldNames[i]);
        }
      }
      const std::string_view cause = ToString(o.cause);
      if (cause.empty()) {  // a value this version has no name for: kept as its number
        fmt::format_to(it, R"("cause":{}}})", static_cast<unsigned>(o.cause));
      } else {
        fmt::format_to(it, R"("cause":"{}"}})", cause);
      }
    }
    buffer_.append(std::string_view("}\n"));
    if (buffer_.size() > (1 << 16)) Drain();
  }

  void Drain() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

 private:
  const std::string& EscapedTag(TagId id) {
    if (id >= escaped_.size()) escaped_.resize(id + 1);
    if (escaped_[id].empty()) escaped_[id] = detail::JsonString(tag_name_(id));
    return escaped_[id];
  }

  std::ostream& out_;
  std::function<const std::string&(TagId)> tag_name_;
  std::vector<std::string> escaped_;  // by id: the name as a JSON string
  fmt::memory_buffer buffer_;
};

const std::string kEmpty;

// --- reading -------------------------------------------------------------------------------

constexpr const char* kEventKeys =
    "type, seq, time_ns, device, stream, address, size, rounded, region, tag, thread, alloc_id, oom (oom events)";
constexpr const char* kOomKeys =
    "request, rounded, limit, reserved, in_use, live_requested, free_in_regions, largest_free, headroom, "
    "chunk_count, region_count, cause";

std::uint64_t Unsigned(const json& value, std::string_view key, std::uint64_t max) {
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() > max) {
    throw std::runtime_error(fmt::format("\"{}\" must be an integer from 0 to {}", key, max));
  }
  return value.get<std::uint64_t>();
}

EventType ParseType(const json& value) {
  if (value.is_string()) {
    const std::string& name = value.get_ref<const std::string&>();
    for (auto t = static_cast<unsigned>(EventType::kAlloc); t <= static_cast<unsigned>(kLastEventType); ++t) {
      if (name == ToString(static_cast<EventType>(t))) return static_cast<EventType>(t);
    }
  }
  throw std::runtime_error(fmt::format(
      "unknown event type {}; valid types: header (first line only), alloc, free, region_reserve, region_release, "
      "oom, marker, address_reserve, address_release, map, unmap",
      value.dump()));
}

OomCause ParseCause(const json& value) {
  if (value.is_string()) {
    for (OomCause cause : {OomCause::kCapacity, OomCause::kFragmentation, OomCause::kBacking,
                           OomCause::kRequestTooLarge, OomCause::kUnknown}) {
      if (value.get_ref<const std::string&>() == ToString(cause)) return cause;
    }
  } else if (value.is_number_unsigned() && value.get<std::uint64_t>() <= 0xFF) {
    return static_cast<OomCause>(value.get<std::uint64_t>());
  }
  throw std::runtime_error(fmt::format(
      "unknown oom cause {}; valid causes: capacity, fragmentation, backing, request-too-large, unknown",
      value.dump()));
}

OomRecord ParseOom(const json& in) {
  if (!in.is_object()) throw std::runtime_error("\"oom\" must be an object");
  OomRecord oom;
  for (const auto& [key, value] : in.items()) {
    std::size_t index = std::size(kOomFieldNames);
    for (std::size_t i = 0; i < std::size(kOomFieldNames); ++i) {
      if (key == kOomFieldNames[i]) index = i;
    }
    if (index < std::size(kOomFieldNames)) {
      const auto bit = static_cast<std::uint16_t>(1u << index);
      if (value.is_null()) {  // the evidence did not give this number (oom.hpp, OomField)
        oom.present = static_cast<std::uint16_t>(oom.present & ~bit);
        *OomFieldAt(oom, index) = 0;
      } else {
        *OomFieldAt(oom, index) = Unsigned(value, key, UINT64_MAX);
      }
    } else if (key == "cause") {
      oom.cause = ParseCause(value);
    } else {
      throw std::runtime_error(fmt::format("unknown oom key \"{}\"; valid keys: {}", key, kOomKeys));
    }
  }
  return oom;
}

Event ParseEvent(const json& in, detail::TagDictionary* tags) {
  Event e;
  const auto type = in.find("type");
  if (type == in.end()) throw std::runtime_error("missing \"type\"");
  e.type = ParseType(*type);
  bool has_seq = false;
  for (const auto& [key, value] : in.items()) {
    if (key == "type") continue;
    if (key == "seq") {
      e.seq = Unsigned(value, key, UINT64_MAX);
      has_seq = true;
    } else if (key == "time_ns") {
      e.time_ns = Unsigned(value, key, UINT64_MAX);
    } else if (key == "device") {
      e.device = static_cast<std::uint32_t>(Unsigned(value, key, UINT32_MAX));
    } else if (key == "stream") {
      e.stream = Unsigned(value, key, UINT64_MAX);
    } else if (key == "address") {
      e.address = Unsigned(value, key, UINT64_MAX);
    } else if (key == "size") {
      e.size = Unsigned(value, key, UINT64_MAX);
    } else if (key == "rounded") {
      e.rounded = Unsigned(value, key, UINT64_MAX);
    } else if (key == "region") {
      e.region = Unsigned(value, key, UINT64_MAX);
    } else if (key == "thread") {
      e.thread = static_cast<std::uint32_t>(Unsigned(value, key, UINT32_MAX));
    } else if (key == "alloc_id") {
      e.alloc_id = Unsigned(value, key, UINT64_MAX);
    } else if (key == "tag") {
      if (value.is_null()) continue;
      if (!value.is_string()) throw std::runtime_error("\"tag\" must be a string (the tag's name)");
      e.tag = tags->Intern(value.get_ref<const std::string&>());
    } else if (key == "oom" && e.type == EventType::kOom) {
      e.oom = ParseOom(value);
    } else {
      throw std::runtime_error(
          fmt::format("unknown key \"{}\" in a {} event; valid keys: {}", key, ToString(e.type), kEventKeys));
    }
  }
  if (!has_seq) throw std::runtime_error("missing \"seq\"");
  if (const char* problem = EventSizeProblem(e)) {
    throw std::runtime_error(fmt::format("{} event: {}", ToString(e.type), problem));
  }
  return e;
}

}  // namespace

void WriteJsonl(const Trace& trace, std::ostream& out) {
  LineWriter writer(out, [&trace](TagId id) -> const std::string& {
    return id == kNoTag || id > trace.tags.size() ? kEmpty : trace.tags[id - 1];
  });
  writer.Header(trace.header);
  for (const Event& event : trace.events) writer.Write(event);
}

void WriteJsonl(TraceReader& reader, std::ostream& out) {
  LineWriter writer(out, [&reader](TagId id) -> const std::string& {
    const auto& tags = reader.tags();
    return id == kNoTag || id > tags.size() ? kEmpty : tags[id - 1];
  });
  writer.Header(reader.header());
  std::vector<Event> block;
  while (reader.NextBlock(&block)) {
    for (const Event& event : block) writer.Write(event);
  }
}

Trace ParseJsonl(std::string_view text, const std::string& name, const ReadLimits& limits) {
  Trace trace;
  detail::TagDictionary tags;
  // Devices met so far (header and events): a line that names one more than the cap is refused
  // there, before the analysis sizes anything by devices.
  std::unordered_set<std::uint32_t> devices;
  const auto count_device = [&](std::uint32_t device) {
    if (devices.size() < limits.max_devices) {
      devices.insert(device);
    } else if (!devices.contains(device)) {
      throw std::runtime_error(TooManyDevicesMessage(
          std::uint64_t{limits.max_devices} + 1, fmt::format("device {} is one more", device), limits));
    }
  };
  std::uint64_t number = 0;
  std::size_t offset = 0;
  bool have_header = false;
  while (offset < text.size()) {
    ++number;
    const std::size_t line_offset = offset;
    std::size_t newline = text.find('\n', offset);
    if (newline == std::string_view::npos) newline = text.size();
    std::string_view line = text.substr(offset, newline - offset);
    offset = newline + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    try {
      json value;
      try {
        value = json::parse(line);
      } catch (const json::parse_error& e) {
        // nlohmann says "parse error at line 1, column N: ..."; the column is what helps here.
        const std::string what = e.what();
        const auto column = what.find("column");
        throw std::runtime_error("invalid JSON: " + (column == std::string::npos ? what : what.substr(column)));
      }
      if (!value.is_object()) throw std::runtime_error("each line must be a JSON object");
      const auto type = value.find("type");
      const bool is_header = type != value.end() && type->is_string() && type->get_ref<const std::string&>() == "header";
      if (!have_header) {
        if (!is_header) throw std::runtime_error("the first line must be the header ({\"type\":\"header\",...})");
        trace.header = detail::HeaderFromJson(value, /*strict=*/true, "type");
        for (const DeviceDescription& d : trace.header.devices) count_device(d.index);
        have_header = true;
      } else if (is_header) {
        throw std::runtime_error("a second header line");
      } else {
        if (trace.events.size() >= limits.max_events) {
          throw std::runtime_error(TooManyEventsMessage(trace.events.size() + 1, "one more on this line",
                                                        text.size(), 1, limits));
        }
        trace.events.push_back(ParseEvent(value, &tags));
        count_device(trace.events.back().device);
      }
    } catch (const std::exception& e) {
      throw TraceError(name, line_offset, fmt::format("line {}: {}", number, e.what()));
    }
  }
  if (!have_header) throw TraceError(name, 0, "no header line: not a fragscope JSON Lines trace");
  trace.tags = tags.names();
  return trace;
}

Trace ReadJsonl(const std::string& path, const ReadLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw TraceError(path, 0, fmt::format("read failed: {}", std::strerror(errno)));
  return ParseJsonl(std::move(buffer).str(), path, limits);
}

}  // namespace fragscope::traces
