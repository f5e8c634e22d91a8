// A reader of Python pickles that builds a small value tree (dict, list, tuple, int, float, bool,
// None, string) from the opcodes that plain data uses. Nothing is executed: an opcode that would
// import or call anything (GLOBAL, REDUCE, BUILD, ...) or any other opcode outside the subset is
// an error that names its byte offset and opcode.
//
// Supported opcodes: PROTO FRAME MARK STOP NONE NEWTRUE NEWFALSE BININT BININT1 BININT2 LONG1
// LONG4 BINFLOAT SHORT_BINUNICODE BINUNICODE EMPTY_DICT DICT SETITEM SETITEMS EMPTY_LIST LIST
// APPEND APPENDS EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 MEMOIZE BINPUT LONG_BINPUT BINGET
// LONG_BINGET.
//
// Memory is bounded by the input: every opcode creates at most one value or one reference, the
// memo cannot grow past the input size, and values live in one arena (references by index, so
// self-referencing containers cannot leak; consumers walk known paths, never whole graphs).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fragscope::traces::pickle {

// A pickle that cannot be read. what() names the byte offset.
class PickleError : public std::runtime_error {
 public:
  PickleError(std::uint64_t offset, const std::string& message);
  std::uint64_t offset() const { return offset_; }
  const std::string& detail() const { return detail_; }  // the message without the offset

 private:
  std::uint64_t offset_;
  std::string detail_;
};

using ValueId = std::uint32_t;

enum class Kind : std::uint8_t { kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict };

std::string_view KindName(Kind kind);

struct Value {
  Kind kind = Kind::kNone;
  bool boolean = false;
  bool negative = false;        // kInt: sign
  bool big = false;             // kInt: magnitude does not fit in 64 bits
  std::uint64_t magnitude = 0;  // kInt: absolute value (when !big)
  double real = 0;              // kFloat
  std::string text;             // kString (UTF-8 bytes as stored)
  std::vector<ValueId> items;   // kList / kTuple: elements; kDict: key, value, key, value, ...
  // The byte offset of the opcode that made it, for errors about its content; kNoOffset where the
  // source gives none (JSON: its parser reports no positions of values).
  std::uint64_t offset = kNoOffset;
  static constexpr std::uint64_t kNoOffset = UINT64_MAX;
};

// The opcode's name ("GLOBAL", "REDUCE", ...) or "" when the byte is no pickle opcode.
std::string_view OpcodeName(std::uint8_t opcode);

class Document {
 public:
  const Value& root() const { return values_[root_]; }
  const Value& at(ValueId id) const { return values_[id]; }
  std::size_t size() const { return values_.size(); }

  // The value of `key` in `dict` (the last one when the key repeats), or nullptr when `dict` is
  // no dict or has no such key.
  const Value* Get(const Value& dict, std::string_view key) const;
  // Elements of a list or tuple; empty for anything else.
  std::span<const ValueId> Items(const Value& sequence) const;
  ValueId IdOf(const Value& value) const {
    return static_cast<ValueId>(&value - values_.data());
  }

 private:
  friend Document ParsePickle(std::span<const std::uint8_t> bytes);
  friend Document DocumentFromJson(std::string_view text);
  std::vector<Value> values_;
  ValueId root_ = 0;
};

// Parses a whole pickle. Throws PickleError.
Document ParsePickle(std::span<const std::uint8_t> bytes);

// The same value tree from JSON text: what a pickle of plain data becomes when saved with Python's
// json.dump instead (tuples become lists, which Items() takes alike). snapshot_json.cpp. Throws
// PickleError naming the byte offset of a JSON error.
Document DocumentFromJson(std::string_view text);

// Integer helpers: nullopt when `value` is no int or does not fit.
std::optional<std::uint64_t> AsU64(const Value& value);
std::optional<std::int64_t> AsI64(const Value& value);
// A number (int or float) as double; nullopt for anything else.
std::optional<double> AsDouble(const Value& value);
// A short text form of any value (dicts as {k: v}, at most `depth` levels deep), for metadata.
std::string ToDisplayString(const Document& doc, const Value& value, int depth = 4);

}  // namespace fragscope::traces::pickle
