#include "pickle_reader.hpp"

#include <bit>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace fragscope::traces::pickle {
namespace {

struct OpcodeInfo {
  std::uint8_t code;
  const char* name;
};

// Every opcode of pickle protocols 0-5, for messages.
constexpr OpcodeInfo kOpcodes[] = {
    {0x28, "MARK"}, {0x2e, "STOP"}, {0x30, "POP"}, {0x31, "POP_MARK"}, {0x32, "DUP"},
    {0x46, "FLOAT"}, {0x49, "INT"}, {0x4a, "BININT"}, {0x4b, "BININT1"}, {0x4c, "LONG"},
    {0x4d, "BININT2"}, {0x4e, "NONE"}, {0x50, "PERSID"}, {0x51, "BINPERSID"}, {0x52, "REDUCE"},
    {0x53, "STRING"}, {0x54, "BINSTRING"}, {0x55, "SHORT_BINSTRING"}, {0x56, "UNICODE"},
    {0x58, "BINUNICODE"}, {0x61, "APPEND"}, {0x62, "BUILD"}, {0x63, "GLOBAL"}, {0x64, "DICT"},
    {0x7d, "EMPTY_DICT"}, {0x65, "APPENDS"}, {0x67, "GET"}, {0x68, "BINGET"}, {0x69, "INST"},
    {0x6a, "LONG_BINGET"}, {0x6c, "LIST"}, {0x5d, "EMPTY_LIST"}, {0x6f, "OBJ"}, {0x70, "PUT"},
    {0x71, "BINPUT"}, {0x72, "LONG_BINPUT"}, {0x73, "SETITEM"}, {0x74, "TUPLE"},
    {0x29, "EMPTY_TUPLE"}, {0x75, "SETITEMS"}, {0x47, "BINFLOAT"}, {0x80, "PROTO"},
    {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {0x85, "TUPLE1"},
    {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"}, {0x8a, "LONG1"},
    {0x8b, "LONG4"}, {0x42, "BINBYTES"}, {0x43, "SHORT_BINBYTES"}, {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
    {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
};

constexpr ValueId kUnset = std::numeric_limits<ValueId>::max();

class Parser {
 public:
  Parser(std::span<const std::uint8_t> bytes, std::vector<Value>& values)
      : bytes_(bytes), values_(values) {}

  ValueId Run() {
    while (true) {
      if (pos_ >= bytes_.size()) Fail(pos_, "truncated: no STOP opcode before the end of the input");
      op_offset_ = pos_;
      const std::uint8_t op = bytes_[pos_++];
      if (Step(op)) break;
    }
    if (Available() < 1) Fail(op_offset_, "STOP with an empty stack");
    return stack_.back();
  }

 private:
  [[noreturn]] void Fail(std::uint64_t offset, const std::string& message) const {
    throw PickleError(offset, message);
  }

  std::span<const std::uint8_t> Take(std::uint64_t n) {
    if (n > bytes_.size() - pos_) {
      Fail(op_offset_, fmt::format("truncated: opcode {} needs {} more bytes, {} left",
                                   OpcodeName(bytes_[op_offset_]), n, bytes_.size() - pos_));
    }
    auto out = bytes_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  std::uint64_t LittleEndian(std::size_t n) {
    const auto b = Take(n);
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | b[i];
    return v;
  }

  // Items above the innermost mark (what an opcode may pop).
  std::size_t Available() const {
    return stack_.size() - (marks_.empty() ? 0 : marks_.back());
  }
  void Need(std::size_t n) const {
    if (Available() < n) {
      Fail(op_offset_, fmt::format("stack underflow: {} needs {} values, {} available",
                                   OpcodeName(bytes_[op_offset_]), n, Available()));
    }
  }
  // SETITEMS / APPENDS: the container sits just below the mark (and above any outer mark).
  void NeedBelow(std::size_t mark) const {
    if (mark <= (marks_.empty() ? 0 : marks_.back())) {
      Fail(op_offset_, fmt::format("stack underflow: {} has no container below its MARK",
                                   OpcodeName(bytes_[op_offset_])));
    }
  }
  ValueId Pop() {
    Need(1);
    const ValueId v = stack_.back();
    stack_.pop_back();
    return v;
  }
  ValueId New(Kind kind) {
    Value v;
    v.kind = kind;
    v.offset = op_offset_;
    values_.push_back(std::move(v));
    return static_cast<ValueId>(values_.size() - 1);
  }
  void PushNew(Kind kind) { stack_.push_back(New(kind)); }
  void PushInt(bool negative, std::uint64_t magnitude, bool big = false) {
    const ValueId id = New(Kind::kInt);
    values_[id].negative = negative && (magnitude != 0 || big);
    values_[id].magnitude = magnitude;
    values_[id].big = big;
    stack_.push_back(id);
  }
  void PushString(std::span<const std::uint8_t> b) {
    const ValueId id = New(Kind::kString);
    values_[id].text.assign(reinterpret_cast<const char*>(b.data()), b.size());
    stack_.push_back(id);
  }
  // Two's complement little-endian integer of `n` bytes (LONG1, LONG4).
  void PushLong(std::uint64_t n) {
    const auto b = Take(n);
    const bool negative = !b.empty() && (b.back() & 0x80) != 0;
    std::uint64_t magnitude = 0;
    bool big = false;
    unsigned carry = 1;
    for (std::size_t i = 0; i < b.size(); ++i) {
      unsigned byte = b[i];
      if (negative) {
        byte = (~byte & 0xffu) + carry;
        carry = byte >> 8;
        byte &= 0xffu;
      }
      if (i < 8) {
        magnitude |= static_cast<std::uint64_t>(byte) << (8 * i);
      } else if (byte != 0) {
        big = true;
      }
    }
    PushInt(negative, big ? 0 : magnitude, big);
  }
  std::size_t PopMark() {
    if (marks_.empty()) Fail(op_offset_, fmt::format("{} without a MARK", OpcodeName(bytes_[op_offset_])));
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  Value& Container(ValueId id, Kind kind) {
    if (values_[id].kind != kind) {
      Fail(op_offset_, fmt::format("{} on a {}, not a {}", OpcodeName(bytes_[op_offset_]),
                                   KindName(values_[id].kind), KindName(kind)));
    }
    return values_[id];
  }
  void MakeSequence(Kind kind, std::size_t from) {
    const ValueId id = New(kind);
    values_[id].items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    stack_.push_back(id);
  }
  void Memo(std::uint64_t index) {
    Need(1);
    if (index > bytes_.size()) Fail(op_offset_, fmt::format("memo index {} out of range", index));
    if (index >= memo_.size()) memo_.resize(static_cast<std::size_t>(index) + 1, kUnset);
    memo_[static_cast<std::size_t>(index)] = stack_.back();
  }
  void Get(std::uint64_t index) {
    if (index >= memo_.size() || memo_[static_cast<std::size_t>(index)] == kUnset) {
      Fail(op_offset_, fmt::format("memo index {} was never stored", index));
    }
    stack_.push_back(memo_[static_cast<std::size_t>(index)]);
  }

  // Executes one opcode; true at STOP.
  bool Step(std::uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const auto version = LittleEndian(1);
        if (version > 5) Fail(op_offset_, fmt::format("unsupported pickle protocol {}", version));
        return false;
      }
      case 0x95: (void)LittleEndian(8); return false;  // FRAME: a length hint only
      case 0x28: marks_.push_back(stack_.size()); return false;  // MARK
      case 0x2e: return true;                                    // STOP
      case 0x4e: PushNew(Kind::kNone); return false;             // NONE
      case 0x88:                                                 // NEWTRUE
      case 0x89: {                                               // NEWFALSE
        const ValueId id = New(Kind::kBool);
        values_[id].boolean = op == 0x88;
        stack_.push_back(id);
        return false;
      }
      case 0x4a: {  // BININT: signed 32-bit
        const auto v = static_cast<std::int32_t>(static_cast<std::uint32_t>(LittleEndian(4)));
        const std::int64_t wide = v;
        PushInt(wide < 0, static_cast<std::uint64_t>(wide < 0 ? -wide : wide));
        return false;
      }
      case 0x4b: PushInt(false, LittleEndian(1)); return false;  // BININT1
      case 0x4d: PushInt(false, LittleEndian(2)); return false;  // BININT2
      case 0x8a: PushLong(LittleEndian(1)); return false;        // LONG1
      case 0x8b: {                                               // LONG4
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(LittleEndian(4)));
        if (n < 0) Fail(op_offset_, "LONG4 with a negative length");
        PushLong(static_cast<std::uint64_t>(n));
        return false;
      }
      case 0x47: {  // BINFLOAT: big-endian IEEE double
        const auto b = Take(8);
        std::uint64_t bits = 0;
        for (std::uint8_t byte : b) bits = (bits << 8) | byte;
        const ValueId id = New(Kind::kFloat);
        values_[id].real = std::bit_cast<double>(bits);
        stack_.push_back(id);
        return false;
      }
      case 0x8c: PushString(Take(LittleEndian(1))); return false;  // SHORT_BINUNICODE
      case 0x58: PushString(Take(LittleEndian(4))); return false;  // BINUNICODE
      case 0x7d: PushNew(Kind::kDict); return false;               // EMPTY_DICT
      case 0x5d: PushNew(Kind::kList); return false;               // EMPTY_LIST
      case 0x29: PushNew(Kind::kTuple); return false;              // EMPTY_TUPLE
      case 0x64: {  // DICT
        const std::size_t mark = PopMark();
        if ((stack_.size() - mark) % 2 != 0) Fail(op_offset_, "DICT with an odd number of items");
        MakeSequence(Kind::kDict, mark);
        return false;
      }
      case 0x6c: MakeSequence(Kind::kList, PopMark()); return false;   // LIST
      case 0x74: MakeSequence(Kind::kTuple, PopMark()); return false;  // TUPLE
      case 0x85:                                                       // TUPLE1
      case 0x86:                                                       // TUPLE2
      case 0x87: {                                                     // TUPLE3
        const std::size_t n = static_cast<std::size_t>(op - 0x84);
        Need(n);
        MakeSequence(Kind::kTuple, stack_.size() - n);
        return false;
      }
      case 0x73: {  // SETITEM
        Need(3);
        const ValueId value = Pop();
        const ValueId key = Pop();
        Value& dict = Container(stack_.back(), Kind::kDict);
        dict.items.push_back(key);
        dict.items.push_back(value);
        return false;
      }
      case 0x75: {  // SETITEMS
        const std::size_t mark = PopMark();
        if ((stack_.size() - mark) % 2 != 0) Fail(op_offset_, "SETITEMS with an odd number of items");
        NeedBelow(mark);
        Value& dict = Container(stack_[mark - 1], Kind::kDict);
        dict.items.insert(dict.items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(mark),
                          stack_.end());
        stack_.resize(mark);
        return false;
      }
      case 0x61: {  // APPEND
        Need(2);
        const ValueId item = Pop();
        Container(stack_.back(), Kind::kList).items.push_back(item);
        return false;
      }
      case 0x65: {  // APPENDS
        const std::size_t mark = PopMark();
        NeedBelow(mark);
        Value& list = Container(stack_[mark - 1], Kind::kList);
        list.items.insert(list.items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(mark),
                          stack_.end());
        stack_.resize(mark);
        return false;
      }
      case 0x94: Memo(memo_.size()); return false;     // MEMOIZE
      case 0x71: Memo(LittleEndian(1)); return false;  // BINPUT
      case 0x72: Memo(LittleEndian(4)); return false;  // LONG_BINPUT
      case 0x68: Get(LittleEndian(1)); return false;   // BINGET
      case 0x6a: Get(LittleEndian(4)); return false;   // LONG_BINGET
      default: break;
    }
    const std::string_view name = OpcodeName(op);
    Fail(op_offset_, name.empty()
                         ? fmt::format("unknown opcode 0x{:02x}", op)
                         : fmt::format("unsupported opcode 0x{:02x} ({}): only plain data is read, "
                                       "nothing is imported or executed",
                                       op, name));
  }

  std::span<const std::uint8_t> bytes_;
  std::vector<Value>& values_;
  std::size_t pos_ = 0;
  std::size_t op_offset_ = 0;
  std::vector<ValueId> stack_;
  std::vector<std::size_t> marks_;
  std::vector<ValueId> memo_;
};

}  // namespace

PickleError::PickleError(std::uint64_t offset, const std::string& message)
    : std::runtime_error(fmt::format("pickle: at byte {}: {}", offset, message)),
      offset_(offset),
      detail_(message) {}

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
  }
  return "?";
}

std::string_view OpcodeName(std::uint8_t opcode) {
  for (const auto& info : kOpcodes) {
    if (info.code == opcode) return info.name;
  }
  return {};
}

const Value* Document::Get(const Value& dict, std::string_view key) const {
  if (dict.kind != Kind::kDict) return nullptr;
  for (std::size_t i = dict.items.size() / 2; i-- > 0;) {
    const Value& k = values_[dict.items[2 * i]];
    if (k.kind == Kind::kString && k.text == key) return &values_[dict.items[2 * i + 1]];
  }
  return nullptr;
}

std::span<const ValueId> Document::Items(const Value& sequence) const {
  if (sequence.kind != Kind::kList && sequence.kind != Kind::kTuple) return {};
  return sequence.items;
}

Document ParsePickle(std::span<const std::uint8_t> bytes) {
  Document doc;
  Parser parser(bytes, doc.values_);
  doc.root_ = parser.Run();
  return doc;
}

std::optional<std::uint64_t> AsU64(const Value& value) {
  if (value.kind != Kind::kInt || value.big || value.negative) return std::nullopt;
  return value.magnitude;
}

std::optional<std::int64_t> AsI64(const Value& value) {
  if (value.kind != Kind::kInt || value.big) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!value.negative) {
    if (value.magnitude > kMax) return std::nullopt;
    return static_cast<std::int64_t>(value.magnitude);
  }
  if (value.magnitude > kMax + 1) return std::nullopt;
  return value.magnitude == kMax + 1 ? std::numeric_limits<std::int64_t>::min()
                                     : -static_cast<std::int64_t>(value.magnitude);
}

std::optional<double> AsDouble(const Value& value) {
  if (value.kind == Kind::kFloat) return value.real;
  if (value.kind == Kind::kInt && !value.big) {
    const double m = static_cast<double>(value.magnitude);
    return value.negative ? -m : m;
  }
  return std::nullopt;
}

std::string ToDisplayString(const Document& doc, const Value& value, int depth) {
  switch (value.kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return value.boolean ? "True" : "False";
    case Kind::kInt:
      if (value.big) return value.negative ? "-(big int)" : "(big int)";
      return fmt::format("{}{}", value.negative ? "-" : "", value.magnitude);
    case Kind::kFloat: return fmt::format("{}", value.real);
    case Kind::kString: return value.text;
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDict: break;
  }
  const bool dict = value.kind == Kind::kDict;
  const char* open = dict ? "{" : value.kind == Kind::kList ? "[" : "(";
  const char* close = dict ? "}" : value.kind == Kind::kList ? "]" : ")";
  if (depth <= 0) return fmt::format("{}...{}", open, close);
  std::string out = open;
  const std::size_t step = dict ? 2 : 1;
  for (std::size_t i = 0; i + step <= value.items.size(); i += step) {
    if (i > 0) out += ", ";
    if (out.size() > 4096) {
      out += "...";
      break;
    }
    out += ToDisplayString(doc, doc.at(value.items[i]), depth - 1);
    if (dict) out += ": " + ToDisplayString(doc, doc.at(value.items[i + 1]), depth - 1);
  }
  return out + close;
}

}  // namespace fragscope::traces::pickle
