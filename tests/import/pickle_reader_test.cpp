// The pickle reader of the PyTorch importer, on hand-built byte strings: every opcode of the
// subset, memo get/put, nested structures, and malformed input.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "../../traces/src/import/pickle_reader.hpp"

namespace fragscope::traces::pickle {
namespace {

using Bytes = std::vector<std::uint8_t>;

// Concatenates byte pieces and strings into one pickle.
struct Builder {
  Bytes bytes;
  Builder() {  // PROTO 4
    bytes.push_back(0x80);
    bytes.push_back(0x04);
  }
  Builder& Op(std::initializer_list<int> b) {
    for (int v : b) bytes.push_back(static_cast<std::uint8_t>(v));
    return *this;
  }
  Builder& Short(const std::string& s) {  // SHORT_BINUNICODE
    Op({0x8c, static_cast<int>(s.size())});
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  Bytes Stop() {
    bytes.push_back(0x2e);
    return bytes;
  }
};

Document Parse(const Bytes& b) { return ParsePickle(b); }

std::string ErrorOf(const Bytes& b, std::uint64_t* offset = nullptr) {
  try {
    (void)ParsePickle(b);
  } catch (const PickleError& e) {
    if (offset != nullptr) *offset = e.offset();
    return e.what();
  }
  return "(no error)";
}

TEST(PickleReader, SmallIntegers) {
  EXPECT_EQ(AsU64(Parse(Builder().Op({0x4b, 200}).Stop()).root()), 200u);           // BININT1
  EXPECT_EQ(AsU64(Parse(Builder().Op({0x4d, 0x34, 0x12}).Stop()).root()), 0x1234u);  // BININT2
  const Document neg = Parse(Builder().Op({0x4a, 0xfe, 0xff, 0xff, 0xff}).Stop());    // BININT -2
  EXPECT_EQ(AsI64(neg.root()), -2);
  EXPECT_EQ(AsU64(neg.root()), std::nullopt);
  EXPECT_EQ(AsI64(Parse(Builder().Op({0x4a, 0, 0, 0, 0x80}).Stop()).root()),
            std::numeric_limits<std::int32_t>::min());
}

TEST(PickleReader, Long1OfAnyLength) {
  EXPECT_EQ(AsU64(Parse(Builder().Op({0x8a, 0}).Stop()).root()), 0u);
  EXPECT_EQ(AsI64(Parse(Builder().Op({0x8a, 1, 0xff}).Stop()).root()), -1);
  // 2^63 + 5 needs 9 bytes (a zero sign byte): an address above 2^63 stays exact.
  const Document high = Parse(Builder().Op({0x8a, 9, 5, 0, 0, 0, 0, 0, 0, 0x80, 0}).Stop());
  EXPECT_EQ(AsU64(high.root()), (std::uint64_t{1} << 63) + 5);
  EXPECT_EQ(AsI64(high.root()), std::nullopt);
  const Document max = Parse(Builder().Op({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}).Stop());
  EXPECT_EQ(AsU64(max.root()), std::numeric_limits<std::uint64_t>::max());
  // 2^64 does not fit: kept as "big", refused where a uint64 is needed.
  const Document big = Parse(Builder().Op({0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1}).Stop());
  EXPECT_TRUE(big.root().big);
  EXPECT_EQ(AsU64(big.root()), std::nullopt);
  // -2^63 in 8 bytes; a 12-byte negative with sign extension.
  EXPECT_EQ(AsI64(Parse(Builder().Op({0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80}).Stop()).root()),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(AsI64(Parse(Builder().Op({0x8a, 12, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                      0xff, 0xff, 0xff, 0xff}).Stop()).root()),
            -3);
  // LONG4 with 2 bytes: 0x0102.
  EXPECT_EQ(AsU64(Parse(Builder().Op({0x8b, 2, 0, 0, 0, 0x02, 0x01}).Stop()).root()), 0x0102u);
}

TEST(PickleReader, ScalarsAndStrings) {
  const Document f = Parse(Builder().Op({0x47, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}).Stop());  // BINFLOAT
  EXPECT_EQ(f.root().kind, Kind::kFloat);
  EXPECT_DOUBLE_EQ(f.root().real, 1.5);
  EXPECT_EQ(Parse(Builder().Op({0x88}).Stop()).root().boolean, true);   // NEWTRUE
  EXPECT_EQ(Parse(Builder().Op({0x89}).Stop()).root().kind, Kind::kBool);  // NEWFALSE
  EXPECT_EQ(Parse(Builder().Op({0x4e}).Stop()).root().kind, Kind::kNone);  // NONE
  EXPECT_EQ(Parse(Builder().Short("héllo").Stop()).root().text, "héllo");
  EXPECT_EQ(Parse(Builder().Op({0x58, 3, 0, 0, 0, 'a', 'b', 'c'}).Stop()).root().text, "abc");
  // FRAME is a length hint and is skipped.
  EXPECT_EQ(AsU64(Parse(Builder().Op({0x95, 3, 0, 0, 0, 0, 0, 0, 0, 0x4b, 7}).Stop()).root()), 7u);
}

TEST(PickleReader, ContainersAndNesting) {
  // {"a": [1, 2, (3,)], "b": {"c": True}} with SETITEMS, APPENDS, APPEND, TUPLE1, SETITEM.
  const Document doc = Parse(Builder()
                                 .Op({0x7d, 0x94, 0x28})
                                 .Short("a")
                                 .Op({0x5d, 0x28, 0x4b, 1, 0x4b, 2, 0x65, 0x4b, 3, 0x85, 0x61})
                                 .Short("b")
                                 .Op({0x7d})
                                 .Short("c")
                                 .Op({0x88, 0x73, 0x75})
                                 .Stop());
  const Value& root = doc.root();
  ASSERT_EQ(root.kind, Kind::kDict);
  const Value* a = doc.Get(root, "a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(doc.Items(*a).size(), 3u);
  EXPECT_EQ(AsU64(doc.at(doc.Items(*a)[1])), 2u);
  const Value& t = doc.at(doc.Items(*a)[2]);
  EXPECT_EQ(t.kind, Kind::kTuple);
  EXPECT_EQ(AsU64(doc.at(doc.Items(t)[0])), 3u);
  const Value* b = doc.Get(root, "b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(doc.Get(*b, "c")->boolean);
  EXPECT_EQ(doc.Get(root, "zz"), nullptr);
  EXPECT_EQ(ToDisplayString(doc, root), "{a: [1, 2, (3)], b: {c: True}}");
}

TEST(PickleReader, MarkBasedBuilders) {
  // (1, 2, 3) TUPLE3, (MARK ... TUPLE), () EMPTY_TUPLE, LIST, DICT, TUPLE2.
  const Document doc = Parse(Builder()
                                 .Op({0x28})
                                 .Op({0x4b, 1, 0x4b, 2, 0x4b, 3, 0x87})
                                 .Op({0x28, 0x4b, 4, 0x4b, 5, 0x74})
                                 .Op({0x29})
                                 .Op({0x28, 0x4b, 6, 0x6c})
                                 .Op({0x28})
                                 .Short("k")
                                 .Op({0x4b, 7, 0x64})
                                 .Op({0x86, 0x86, 0x86, 0x86, 0x6c})
                                 .Stop());
  EXPECT_EQ(ToDisplayString(doc, doc.root(), 8), "[((1, 2, 3), ((4, 5), ((), ([6], {k: 7}))))]");
}

TEST(PickleReader, MemoSharesObjects) {
  // d = {}; memoized as 0 (MEMOIZE); l = [d, d] through BINGET 1 and LONG_BINGET 1; d["x"] = 1
  // after both references exist: both see it.
  const Document doc = Parse(Builder()
                                 .Op({0x5d, 0x94})                          // [] memo 0
                                 .Op({0x7d, 0x94, 0x61})                    // {} memo 1, APPEND
                                 .Op({0x68, 1, 0x61})                       // BINGET 1, APPEND
                                 .Op({0x6a, 1, 0, 0, 0})                    // LONG_BINGET 1
                                 .Short("x")
                                 .Op({0x4b, 1, 0x73, 0x61})                 // SETITEM, APPEND
                                 .Op({0x4b, 9, 0x71, 7, 0x4b, 8, 0x72, 8, 0, 0, 0})  // BINPUT 7, LONG_BINPUT 8
                                 .Op({0x68, 7, 0x68, 8, 0x86, 0x86, 0x86, 0x86})
                                 .Stop());
  const Value& root = doc.root();
  ASSERT_EQ(root.kind, Kind::kTuple);
  const Value& list = doc.at(root.items[0]);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[0], list.items[1]);
  EXPECT_EQ(list.items[1], list.items[2]);
  EXPECT_EQ(AsU64(*doc.Get(doc.at(list.items[0]), "x")), 1u);
  EXPECT_EQ(ToDisplayString(doc, doc.at(root.items[1]), 3), "(9, (8, (9, 8)))");
}

TEST(PickleReader, SelfReferenceIsBounded) {
  // l = []; l.append(l): a cycle; reading and printing it terminates.
  const Document doc = Parse(Builder().Op({0x5d, 0x94, 0x68, 0, 0x61}).Stop());
  EXPECT_EQ(ToDisplayString(doc, doc.root(), 3), "[[[[...]]]]");
}

TEST(PickleReader, UnknownOpcodeNamesOffsetAndOpcode) {
  std::uint64_t offset = 0;
  std::string message = ErrorOf(Builder().Op({0x4b, 1, 0xff}).Stop(), &offset);
  EXPECT_EQ(offset, 4u);
  EXPECT_NE(message.find("at byte 4"), std::string::npos) << message;
  EXPECT_NE(message.find("0xff"), std::string::npos) << message;
  // GLOBAL and REDUCE are refused by name: nothing is imported or called.
  message = ErrorOf(Builder().Op({'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n'}).Stop(), &offset);
  EXPECT_EQ(offset, 2u);
  EXPECT_NE(message.find("0x63 (GLOBAL)"), std::string::npos) << message;
  EXPECT_NE(ErrorOf(Builder().Op({0x4e, 0x85, 0x52}).Stop()).find("REDUCE"), std::string::npos);
}

TEST(PickleReader, TruncatedInput) {
  EXPECT_NE(ErrorOf(Builder().Op({0x4b, 1}).bytes).find("no STOP"), std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x58, 100, 0, 0, 0, 'a'}).bytes).find("truncated"), std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x8a, 9, 1, 2}).bytes).find("truncated"), std::string::npos);
  EXPECT_NE(ErrorOf(Bytes{}).find("truncated"), std::string::npos);
  EXPECT_NE(ErrorOf(Bytes{0x80}).find("truncated"), std::string::npos);
}

TEST(PickleReader, StackErrors) {
  EXPECT_NE(ErrorOf(Builder().Op({0x61}).Stop()).find("stack underflow"), std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x4b, 1, 0x86}).Stop()).find("stack underflow"), std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x28, 0x4b, 1, 0x4b, 2, 0x75}).Stop()).find("stack underflow"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x7d, 0x4b, 1, 0x75}).Stop()).find("without a MARK"), std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x4b, 1, 0x4b, 2, 0x61}).Stop()).find("not a list"), std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Stop()).find("empty stack"), std::string::npos);
  // Values below a MARK cannot be popped until the mark is closed.
  EXPECT_NE(ErrorOf(Builder().Op({0x5d, 0x28, 0x61}).Stop()).find("stack underflow"), std::string::npos);
}

TEST(PickleReader, MemoErrors) {
  EXPECT_NE(ErrorOf(Builder().Op({0x68, 3}).Stop()).find("never stored"), std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x4e, 0x72, 0xff, 0xff, 0xff, 0xff}).Stop()).find("out of range"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Builder().Op({0x94}).Stop()).find("stack underflow"), std::string::npos);
  EXPECT_NE(ErrorOf(Bytes{0x80, 9, 0x2e}).find("protocol 9"), std::string::npos);
}

}  // namespace
}  // namespace fragscope::traces::pickle
