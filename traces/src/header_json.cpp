#include "header_json.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace fragscope::traces::detail {
namespace {

using nlohmann::json;

constexpr const char* kHeaderKeys = "producer, source_format, alloc_conf, devices, created_unix_ns, metadata";
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
  return out;
}

TraceHeader HeaderFromJson(const json& in, bool strict, const char* skip) {
  if (!in.is_object()) throw std::runtime_error("the header must be a JSON object");
  if (strict) {
    for (const auto& [key, value] : in.items()) {
      if (key == "producer" || key == "source_format" || key == "alloc_conf" || key == "devices" ||
          key == "created_unix_ns" || key == "metadata" || (skip != nullptr && key == skip)) {
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
  return header;
}

}  // namespace fragscope::traces::detail
