#include "header_json.hpp"

#include <charconv>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace fragscope::traces::detail {
namespace {

using nlohmann::json;

constexpr const char* kHeaderKeys =
    "producer, source_format, alloc_conf, devices, created_unix_ns, metadata, kind, source";
constexpr const char* kDeviceKeys = "index, name, backing, capacity, limit";

std::string GetString(const json& object, const char* key, const char* where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_string()) throw std::runtime_error(fmt::format("{}\"{}\" must be a string", where, key));
  return it->get<std::string>();
}

std::uint64_t GetUnsigned(const json& object, const char* key, const char* where, std::uint64_t max) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return 0;
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() > max) {
    throw std::runtime_error(fmt::format("{}\"{}\" must be an integer from 0 to {}", where, key, max));
  }
  return it->get<std::uint64_t>();
}

std::optional<std::uint64_t> GetOptional(const json& object, const char* key, const char* where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  return GetUnsigned(object, key, where, UINT64_MAX);
}

// A switch: `fallback` when absent or null.
bool GetBool(const json& object, const char* key, const char* where, bool fallback) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw std::runtime_error(fmt::format("{}\"{}\" must be true or false", where, key));
  return it->get<bool>();
}

const json& ArrayAt(const json& object, const char* key, const char* where) {
  static const json kEmpty = json::array();
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return kEmpty;
  if (!it->is_array()) throw std::runtime_error(fmt::format("{}\"{}\" must be an array", where, key));
  return *it;
}

nlohmann::ordered_json SourceToJson(const SourceFacts& source) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!source.allocator.empty()) out["allocator"] = source.allocator;
  if (!source.settings.empty()) {
    out["settings"] = nlohmann::ordered_json::array();
    for (const auto& [key, value] : source.settings) out["settings"].push_back({key, value});
  }
  if (source.rounding != 0) out["rounding"] = source.rounding;
  if (source.reconstructed_events != 0) out["reconstructed_events"] = source.reconstructed_events;
  for (const auto& b : source.before_recording) {
    out["before_recording"].push_back(
        {{"device", b.device}, {"blocks", b.blocks}, {"bytes", b.bytes}, {"requested", b.requested}});
    if (!b.blocks_known) out["before_recording"].back()["blocks_known"] = false;
  }
  for (std::uint32_t device : source.reserved_without_layout) out["reserved_without_layout"].push_back(device);
  for (const auto& s : source.states) {
    nlohmann::ordered_json state = {{"device", s.device}, {"moment", s.moment}, {"at_seq", s.at_seq}};
    const auto put = [&](const char* key, const std::optional<std::uint64_t>& value) {
      if (value) state[key] = *value;
    };
    put("in_use", s.in_use);
    put("requested", s.requested);
    put("reserved", s.reserved);
    put("limit", s.limit);
    put("max_in_use", s.max_in_use);
    put("largest_free", s.largest_free);
    if (s.in_use_at_least) state["in_use_at_least"] = true;
    put("free_at_least", s.free_at_least);
    state["layout_complete"] = s.layout_complete;
    if (!s.requested_known) state["requested_known"] = false;
    if (!s.missing.empty()) state["missing"] = s.missing;
    put("max_reserved", s.max_reserved);
    put("non_releasable", s.non_releasable);
    put("oom_count", s.oom_count);
    put("alloc_retries", s.alloc_retries);
    for (const auto& [key, pool] : {std::pair{"large_pool", &s.large_pool}, std::pair{"small_pool", &s.small_pool}}) {
      if (!*pool) continue;
      nlohmann::ordered_json p = nlohmann::ordered_json::object();
      if ((*pool)->in_use) p["in_use"] = *(*pool)->in_use;
      if ((*pool)->reserved) p["reserved"] = *(*pool)->reserved;
      if ((*pool)->non_releasable) p["non_releasable"] = *(*pool)->non_releasable;
      state[key] = std::move(p);
    }
    if (s.size_margin != 0) state["size_margin"] = s.size_margin;
    if (s.line != 0) state["line"] = s.line;
    out["states"].push_back(std::move(state));
  }
  return out;
}

// Keys a reader of this version knows in "source" and in each of its states; strict readers
// refuse others, as at the top level.
void CheckKeys(const json& object, bool strict, std::initializer_list<std::string_view> known, const char* where) {
  if (!strict) return;
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw std::runtime_error(fmt::format("{}unknown key \"{}\"; valid keys: {}", where, key, list));
    }
  }
}

SourceFacts SourceFromJson(const json& in, bool strict) {
  constexpr const char* kWhere = "header: source: ";
  if (!in.is_object()) throw std::runtime_error("header: \"source\" must be an object");
  CheckKeys(in, strict,
            {"allocator", "settings", "rounding", "reconstructed_events", "before_recording", "reserved_without_layout",
             "states"},
            kWhere);
  SourceFacts out;
  out.allocator = GetString(in, "allocator", kWhere);
  for (const auto& pair : ArrayAt(in, "settings", kWhere)) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
      throw std::runtime_error("header: source: \"settings\" entries must be [\"key\", \"value\"] pairs of strings");
    }
    out.settings.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
  }
  out.rounding = GetUnsigned(in, "rounding", kWhere, UINT64_MAX);
  out.reconstructed_events = GetUnsigned(in, "reconstructed_events", kWhere, UINT64_MAX);
  for (const auto& b : ArrayAt(in, "before_recording", kWhere)) {
    if (!b.is_object()) throw std::runtime_error("header: source: each before_recording entry must be an object");
    constexpr const char* kAt = "header: source: before_recording: ";
    out.before_recording.push_back({static_cast<std::uint32_t>(GetUnsigned(b, "device", kAt, UINT32_MAX)),
                                    GetUnsigned(b, "blocks", kAt, UINT64_MAX),
                                    GetUnsigned(b, "bytes", kAt, UINT64_MAX),
                                    GetUnsigned(b, "requested", kAt, UINT64_MAX)});
    out.before_recording.back().blocks_known = GetBool(b, "blocks_known", kAt, true);
  }
  for (const auto& d : ArrayAt(in, "reserved_without_layout", kWhere)) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > UINT32_MAX) {
      throw std::runtime_error("header: source: \"reserved_without_layout\" must list device indices");
    }
    out.reserved_without_layout.push_back(d.get<std::uint32_t>());
  }
  for (const auto& s : ArrayAt(in, "states", kWhere)) {
    if (!s.is_object()) throw std::runtime_error("header: source: each state must be an object");
    constexpr const char* kAt = "header: source: state: ";
    CheckKeys(s, strict,
              {"device", "moment", "at_seq", "in_use", "requested", "reserved", "limit", "max_in_use", "largest_free",
               "in_use_at_least", "free_at_least", "layout_complete", "requested_known", "missing", "max_reserved",
               "non_releasable", "oom_count", "alloc_retries", "large_pool", "small_pool", "size_margin", "line"},
              kAt);
    StateSummary state;
    state.device = static_cast<std::uint32_t>(GetUnsigned(s, "device", kAt, UINT32_MAX));
    state.moment = GetString(s, "moment", kAt);
    state.at_seq = GetUnsigned(s, "at_seq", kAt, UINT64_MAX);
    state.in_use = GetOptional(s, "in_use", kAt);
    state.requested = GetOptional(s, "requested", kAt);
    state.reserved = GetOptional(s, "reserved", kAt);
    state.limit = GetOptional(s, "limit", kAt);
    state.max_in_use = GetOptional(s, "max_in_use", kAt);
    state.largest_free = GetOptional(s, "largest_free", kAt);
    state.in_use_at_least = GetBool(s, "in_use_at_least", kAt, false);
    state.free_at_least = GetOptional(s, "free_at_least", kAt);
    state.layout_complete = GetBool(s, "layout_complete", kAt, true);
    state.requested_known = GetBool(s, "requested_known", kAt, true);
    state.missing = GetString(s, "missing", kAt);
    state.max_reserved = GetOptional(s, "max_reserved", kAt);
    state.non_releasable = GetOptional(s, "non_releasable", kAt);
    state.oom_count = GetOptional(s, "oom_count", kAt);
    state.alloc_retries = GetOptional(s, "alloc_retries", kAt);
    for (const auto& [key, pool] : {std::pair{"large_pool", &state.large_pool}, std::pair{"small_pool", &state.small_pool}}) {
      const auto it = s.find(key);
      if (it == s.end() || it->is_null()) continue;
      if (!it->is_object()) throw std::runtime_error(fmt::format("{}\"{}\" must be an object", kAt, key));
      constexpr const char* kPoolAt = "header: source: state: pool: ";
      CheckKeys(*it, strict, {"in_use", "reserved", "non_releasable"}, kPoolAt);
      *pool = StateSummary::Pool{GetOptional(*it, "in_use", kPoolAt), GetOptional(*it, "reserved", kPoolAt),
                                 GetOptional(*it, "non_releasable", kPoolAt)};
    }
    state.size_margin = GetUnsigned(s, "size_margin", kAt, UINT64_MAX);
    state.line = GetUnsigned(s, "line", kAt, UINT64_MAX);
    out.states.push_back(std::move(state));
  }
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

// Traces converted before the header had "source" (fragscope 0.1, .fst 1.0) carry the PyTorch
// importer's facts as metadata keys: "allocator_settings.KEY" and
// "pytorch.cuda:N.before_recording.{blocks,bytes,requested}". They become typed facts here, the
// one place that still knows those spellings; keys that do not parse stay metadata.
void MigrateLegacyMetadata(TraceHeader& header) {
  std::vector<std::pair<std::string, std::string>> kept;
  for (auto& [key, value] : header.metadata) {
    constexpr std::string_view kSettings = "allocator_settings.";
    constexpr std::string_view kDevice = "pytorch.cuda:";
    constexpr std::string_view kBefore = ".before_recording.";
    if (StartsWith(key, kSettings) && key.size() > kSettings.size()) {
      header.source.settings.emplace_back(key.substr(kSettings.size()), value);
      continue;
    }
    if (StartsWith(key, kDevice)) {
      const std::string_view rest = std::string_view(key).substr(kDevice.size());
      std::uint32_t device = 0;
      std::uint64_t number = 0;
      const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), device);
      const std::string_view tail(end, static_cast<std::size_t>(rest.data() + rest.size() - end));
      const auto parsed = std::from_chars(value.data(), value.data() + value.size(), number);
      if (error == std::errc() && StartsWith(tail, kBefore) && parsed.ec == std::errc() &&
          parsed.ptr == value.data() + value.size()) {
        const std::string_view field = tail.substr(kBefore.size());
        BlocksBeforeRecording* entry = nullptr;
        for (auto& b : header.source.before_recording) if (b.device == device) entry = &b;
        if (field == "blocks" || field == "bytes" || field == "requested") {
          if (entry == nullptr) entry = &header.source.before_recording.emplace_back(BlocksBeforeRecording{device});
          (field == "blocks" ? entry->blocks : field == "bytes" ? entry->bytes : entry->requested) = number;
          continue;
        }
      }
    }
    kept.emplace_back(std::move(key), std::move(value));
  }
  header.metadata = std::move(kept);
  if (header.source_format == "pytorch-snapshot" && header.source.allocator.empty()) {
    header.source.allocator = "PyTorch CUDA caching allocator";
  }
}

}  // namespace

std::string JsonString(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

nlohmann::ordered_json HeaderToJson(const TraceHeader& header) {
  nlohmann::ordered_json out;
  out["producer"] = header.producer;
  out["source_format"] = header.source_format;
  out["alloc_conf"] = header.alloc_conf;
  out["devices"] = nlohmann::ordered_json::array();
  for (const auto& device : header.devices) {
    out["devices"].push_back({{"index", device.index},
                              {"name", device.name},
                              {"backing", device.backing},
                              {"capacity", device.capacity},
                              {"limit", device.limit}});
  }
  out["created_unix_ns"] = header.created_unix_ns;
  // Pairs rather than an object: order and repeated keys survive.
  out["metadata"] = nlohmann::ordered_json::array();
  for (const auto& [key, value] : header.metadata) out["metadata"].push_back({key, value});
  // Written only when they say something, so that a native history's header is what 1.0 wrote.
  if (header.kind != EvidenceKind::kHistory) out["kind"] = ToString(header.kind);
  if (!header.source.empty()) out["source"] = SourceToJson(header.source);
  return out;
}

TraceHeader HeaderFromJson(const json& in, bool strict, const char* skip) {
  if (!in.is_object()) throw std::runtime_error("the header must be a JSON object");
  if (strict) {
    for (const auto& [key, value] : in.items()) {
      if (key == "producer" || key == "source_format" || key == "alloc_conf" || key == "devices" ||
          key == "created_unix_ns" || key == "metadata" || key == "kind" || key == "source" ||
          (skip != nullptr && key == skip)) {
        continue;
      }
      throw std::runtime_error(fmt::format("unknown header key \"{}\"; valid keys: {}", key, kHeaderKeys));
    }
  }
  TraceHeader header;
  header.producer = GetString(in, "producer", "header: ");
  header.source_format = GetString(in, "source_format", "header: ");
  header.alloc_conf = GetString(in, "alloc_conf", "header: ");
  header.created_unix_ns = GetUnsigned(in, "created_unix_ns", "header: ", UINT64_MAX);
  if (const auto it = in.find("devices"); it != in.end() && !it->is_null()) {
    if (!it->is_array()) throw std::runtime_error("header: \"devices\" must be an array");
    for (const auto& d : *it) {
      if (!d.is_object()) throw std::runtime_error("header: each device must be an object");
      if (strict) {
        for (const auto& [key, value] : d.items()) {
          if (key != "index" && key != "name" && key != "backing" && key != "capacity" && key != "limit") {
            throw std::runtime_error(fmt::format("unknown device key \"{}\"; valid keys: {}", key, kDeviceKeys));
          }
        }
      }
      DeviceDescription device;
      device.index = static_cast<std::uint32_t>(GetUnsigned(d, "index", "device: ", UINT32_MAX));
      device.name = GetString(d, "name", "device: ");
      device.backing = GetString(d, "backing", "device: ");
      device.capacity = GetUnsigned(d, "capacity", "device: ", UINT64_MAX);
      device.limit = GetUnsigned(d, "limit", "device: ", UINT64_MAX);
      header.devices.push_back(std::move(device));
    }
  }
  if (const auto it = in.find("metadata"); it != in.end() && !it->is_null()) {
    if (it->is_object()) {  // accepted for hand-written files; written as pairs
      for (const auto& [key, value] : it->items()) {
        if (!value.is_string()) throw std::runtime_error(fmt::format("header: metadata \"{}\" must be a string", key));
        header.metadata.emplace_back(key, value.get<std::string>());
      }
    } else if (it->is_array()) {
      for (const auto& pair : *it) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
          throw std::runtime_error("header: \"metadata\" entries must be [\"key\", \"value\"] pairs of strings");
        }
        header.metadata.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
      }
    } else {
      throw std::runtime_error("header: \"metadata\" must be an array of [key, value] pairs");
    }
  }
  if (const std::string kind = GetString(in, "kind", "header: "); !kind.empty()) {
    const auto parsed = ParseEvidenceKind(kind);
    if (!parsed) {
      throw std::runtime_error(fmt::format("header: \"kind\" must be \"history\", \"state\" or \"message\", not \"{}\"", kind));
    }
    header.kind = *parsed;
  }
  if (const auto it = in.find("source"); it != in.end() && !it->is_null()) {
    header.source = SourceFromJson(*it, strict);
  } else {
    MigrateLegacyMetadata(header);
  }
  return header;
}

}  // namespace fragscope::traces::detail
