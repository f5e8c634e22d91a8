// TraceHeader <-> JSON, shared by the .fst header record and the JSON Lines header line.
// Internal to traces/src.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fragscope/traces/trace_header.hpp"

namespace fragscope::traces::detail {

// Keys in a fixed order: producer, source_format, alloc_conf, devices, created_unix_ns, metadata.
nlohmann::ordered_json HeaderToJson(const TraceHeader& header);

// Reads the keys above from `json` (an object). A key of the wrong type throws std::runtime_error
// naming it. Keys this version does not know are an error when `strict` (JSON Lines, edited by
// hand, where a typo should not pass silently) and ignored otherwise (.fst, where a later minor
// version may add keys). `skip` names one more key to accept ("type" in JSON Lines).
TraceHeader HeaderFromJson(const nlohmann::json& json, bool strict, const char* skip = nullptr);

// JSON text of `text`, quotes included; invalid UTF-8 becomes U+FFFD.
std::string JsonString(const std::string& text);

}  // namespace fragscope::traces::detail
