// Python values pickled with protocol 4 opcodes (or written as json.dump would), for tests that
// write small PyTorch memory snapshots of their own: pytorch_synthetic_test.cpp,
// pytorch_snapshot_oom_test.cpp and the command-line tests of snapshot reports.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fragscope::testing::pickle_writer {

// A Python value, pickled with protocol 4 opcodes.
struct Py {
  enum class K { kInt, kBigInt, kNegInt, kStr, kList, kDict, kBool } k = K::kInt;
  std::uint64_t i = 0;
  std::string s;
  std::vector<Py> items;
  std::vector<std::pair<std::string, Py>> fields;

  void Encode(std::vector<std::uint8_t>& out) const {
    switch (k) {
      case K::kInt:  // LONG1, 9 bytes: exact for any uint64
        out.push_back(0x8a);
        out.push_back(9);
        for (int b = 0; b < 8; ++b) out.push_back(static_cast<std::uint8_t>(i >> (8 * b)));
        out.push_back(0);
        break;
      case K::kBigInt:  // 2^64 + i
        out.push_back(0x8a);
        out.push_back(9);
        for (int b = 0; b < 8; ++b) out.push_back(static_cast<std::uint8_t>(i >> (8 * b)));
        out.push_back(1);
        break;
      case K::kNegInt:  // -i, two's complement over 9 bytes
        out.push_back(0x8a);
        out.push_back(9);
        for (int b = 0; b < 8; ++b) out.push_back(static_cast<std::uint8_t>((0 - i) >> (8 * b)));
        out.push_back(0xff);
        break;
      case K::kBool: out.push_back(i != 0 ? 0x88 : 0x89); break;
      case K::kStr:
        out.push_back(0x8c);
        out.push_back(static_cast<std::uint8_t>(s.size()));
        out.insert(out.end(), s.begin(), s.end());
        break;
      case K::kList:
        out.push_back(0x5d);
        out.push_back(0x28);
        for (const Py& item : items) item.Encode(out);
        out.push_back(0x65);
        break;
      case K::kDict:
        out.push_back(0x7d);
        out.push_back(0x28);
        for (const auto& [key, value] : fields) {
          Py{K::kStr, 0, key, {}, {}}.Encode(out);
          value.Encode(out);
        }
        out.push_back(0x75);
        break;
    }
  }

  // The same value as Python's json.dump writes it (a list where the pickle has one).
  void Json(std::string& out, const std::string& indent = "") const {
    const std::string inner = indent.empty() ? "" : indent + " ";
    const std::string nl = indent.empty() ? "" : "\n" + inner;
    switch (k) {
      case K::kInt: out += std::to_string(i); break;
      case K::kBigInt: out += "18446744073709551616"; break;  // not in the snapshots converted here
      case K::kNegInt: out += "-" + std::to_string(i); break;
      case K::kBool: out += i != 0 ? "true" : "false"; break;
      case K::kStr: out += "\"" + s + "\""; break;
      case K::kList:
        out += "[";
        for (std::size_t n = 0; n < items.size(); ++n) {
          out += (n > 0 ? ", " : "") + nl;
          items[n].Json(out, inner);
        }
        out += "]";
        break;
      case K::kDict:
        out += "{";
        for (std::size_t n = 0; n < fields.size(); ++n) {
          out += (n > 0 ? ", " : "") + nl + "\"" + fields[n].first + "\": ";
          fields[n].second.Json(out, inner);
        }
        out += "}";
        break;
    }
  }
};

inline Py I(std::uint64_t v) { return Py{Py::K::kInt, v, {}, {}, {}}; }
inline Py S(std::string v) { return Py{Py::K::kStr, 0, std::move(v), {}, {}}; }
inline Py Negative(std::uint64_t magnitude) { return Py{Py::K::kNegInt, magnitude, {}, {}, {}}; }
inline Py B(bool v) { return Py{Py::K::kBool, v ? 1u : 0u, {}, {}, {}}; }
inline Py L(std::vector<Py> v) { return Py{Py::K::kList, 0, {}, std::move(v), {}}; }
inline Py D(std::vector<std::pair<std::string, Py>> v) { return Py{Py::K::kDict, 0, {}, {}, std::move(v)}; }

// The whole pickle: PROTO 4, the value, STOP.
inline std::vector<std::uint8_t> Pickle(const Py& root) {
  std::vector<std::uint8_t> bytes = {0x80, 4};
  root.Encode(bytes);
  bytes.push_back(0x2e);
  return bytes;
}

}  // namespace fragscope::testing::pickle_writer
