// ParseSize, FormatBytes and FormatSizeExact: every unit, fractions, whitespace, rejection of
// malformed input and overflow, exact output strings, and the FormatSizeExact round trip.
#include "fragscope/allocator/size.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fragscope {
namespace {

constexpr std::uint64_t TiB = 1024 * GiB;
constexpr std::uint64_t PiB = 1024 * TiB;
constexpr std::uint64_t EiB = 1024 * PiB;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

TEST(ParseSize, PlainBytes) {
  EXPECT_EQ(ParseSize("0"), 0u);
  EXPECT_EQ(ParseSize("1"), 1u);
  EXPECT_EQ(ParseSize("256"), 256u);
  EXPECT_EQ(ParseSize("1048576"), 1048576u);
  EXPECT_EQ(ParseSize("007"), 7u);
  EXPECT_EQ(ParseSize("18446744073709551615"), kMax);
}

TEST(ParseSize, ByteUnit) {
  EXPECT_EQ(ParseSize("0B"), 0u);
  EXPECT_EQ(ParseSize("768B"), 768u);
  EXPECT_EQ(ParseSize("768b"), 768u);
  EXPECT_EQ(ParseSize("768 B"), 768u);
}

TEST(ParseSize, BinaryUnits) {
  EXPECT_EQ(ParseSize("1KiB"), KiB);
  EXPECT_EQ(ParseSize("512MiB"), 512 * MiB);
  EXPECT_EQ(ParseSize("6GiB"), 6 * GiB);
  EXPECT_EQ(ParseSize("2TiB"), 2 * TiB);
  EXPECT_EQ(ParseSize("3PiB"), 3 * PiB);
  EXPECT_EQ(ParseSize("15EiB"), 15 * EiB);
}

TEST(ParseSize, DecimalUnits) {
  EXPECT_EQ(ParseSize("64KB"), 64'000u);
  EXPECT_EQ(ParseSize("5MB"), 5'000'000u);
  EXPECT_EQ(ParseSize("80GB"), 80'000'000'000u);
  EXPECT_EQ(ParseSize("2TB"), 2'000'000'000'000u);
  EXPECT_EQ(ParseSize("1PB"), 1'000'000'000'000'000u);
  EXPECT_EQ(ParseSize("18EB"), 18'000'000'000'000'000'000u);
}

TEST(ParseSize, SingleLetterUnitsAreBinaryShorthand) {
  EXPECT_EQ(ParseSize("4K"), 4 * KiB);
  EXPECT_EQ(ParseSize("512M"), 512 * MiB);
  EXPECT_EQ(ParseSize("6G"), 6 * GiB);
  EXPECT_EQ(ParseSize("1T"), TiB);
  EXPECT_EQ(ParseSize("1P"), PiB);
  EXPECT_EQ(ParseSize("1E"), EiB);
}

TEST(ParseSize, UnitsAreCaseInsensitive) {
  for (const char* text : {"1GiB", "1gib", "1GIB", "1gIb", "1g", "1G"}) {
    EXPECT_EQ(ParseSize(text), GiB) << text;
  }
  for (const char* text : {"1GB", "1gb", "1Gb", "1gB"}) {
    EXPECT_EQ(ParseSize(text), 1'000'000'000u) << text;
  }
  EXPECT_EQ(ParseSize("3kib"), 3 * KiB);
  EXPECT_EQ(ParseSize("3kb"), 3'000u);
  EXPECT_EQ(ParseSize("3MIB"), 3 * MiB);
  EXPECT_EQ(ParseSize("3tb"), 3'000'000'000'000u);
}

TEST(ParseSize, Whitespace) {
  EXPECT_EQ(ParseSize(" 512MiB"), 512 * MiB);
  EXPECT_EQ(ParseSize("512MiB "), 512 * MiB);
  EXPECT_EQ(ParseSize("  512   MiB  "), 512 * MiB);
  EXPECT_EQ(ParseSize("1\tGiB"), GiB);
  EXPECT_EQ(ParseSize("\n1048576\n"), 1048576u);
}

TEST(ParseSize, FractionsThatAreWholeBytes) {
  EXPECT_EQ(ParseSize("1.5GiB"), 3 * GiB / 2);
  EXPECT_EQ(ParseSize("1.5KiB"), 1536u);
  EXPECT_EQ(ParseSize("0.5KiB"), 512u);
  EXPECT_EQ(ParseSize("0.25MiB"), 256 * KiB);
  EXPECT_EQ(ParseSize("1.25KB"), 1250u);
  EXPECT_EQ(ParseSize("0.001KB"), 1u);
  EXPECT_EQ(ParseSize("2.0"), 2u);
  EXPECT_EQ(ParseSize("1.0B"), 1u);
  EXPECT_EQ(ParseSize("1.50000GiB"), 3 * GiB / 2);
  EXPECT_EQ(ParseSize("0.0009765625KiB"), 1u);  // 1/1024
  EXPECT_EQ(ParseSize("15.5EiB"), 15 * EiB + EiB / 2);
  EXPECT_EQ(ParseSize("0.000000001GB"), 1u);
}

TEST(ParseSize, RejectsFractionalBytes) {
  EXPECT_EQ(ParseSize("0.5B"), std::nullopt);
  EXPECT_EQ(ParseSize("1.3B"), std::nullopt);
  EXPECT_EQ(ParseSize("1.5"), std::nullopt);
  EXPECT_EQ(ParseSize("0.0001KB"), std::nullopt);
  EXPECT_EQ(ParseSize("1.0001KiB"), std::nullopt);
  EXPECT_EQ(ParseSize("0.1KiB"), std::nullopt);  // 102.4 bytes
}

TEST(ParseSize, RejectsEmptyAndJunk) {
  for (const char* text :
       {"", " ", "\t", "abc", "GiB", "B", "1 2", "1GiB extra", "1GiBs", "1 G iB", "1xB", "1i",
        "1KiBKiB", "0x10", "1e3", "1E3", "1,5GiB", "1_000", "1.", ".5GiB", "1..5GiB", "1.5.2",
        "one", "1 GiB B", "1Kib2", "nan", "inf", "1MiB+1MiB"}) {
    EXPECT_EQ(ParseSize(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(ParseSize, RejectsSigns) {
  EXPECT_EQ(ParseSize("-1"), std::nullopt);
  EXPECT_EQ(ParseSize("-1GiB"), std::nullopt);
  EXPECT_EQ(ParseSize("-0"), std::nullopt);
  EXPECT_EQ(ParseSize("+1"), std::nullopt);
  EXPECT_EQ(ParseSize("+1GiB"), std::nullopt);
}

TEST(ParseSize, RejectsOverflow) {
  EXPECT_EQ(ParseSize("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseSize("99999999999999999999999"), std::nullopt);
  EXPECT_EQ(ParseSize("16EiB"), std::nullopt);
  EXPECT_EQ(ParseSize("16E"), std::nullopt);
  EXPECT_EQ(ParseSize("17179869184GiB"), std::nullopt);  // 2^34 GiB = 2^64
  EXPECT_EQ(ParseSize("17179869183GiB"), kMax - GiB + 1);
  EXPECT_EQ(ParseSize("19EB"), std::nullopt);
  EXPECT_EQ(ParseSize("18446744073709551615KiB"), std::nullopt);
  EXPECT_EQ(ParseSize("15.99999999999EiB"), std::nullopt);  // not whole, and near the top
  EXPECT_EQ(ParseSize("15.9999999999999999999EiB"), std::nullopt);  // not whole either
  // More than 19 significant fractional digits are not held exactly: rejected.
  EXPECT_EQ(ParseSize("1.00000000000000000001KiB"), std::nullopt);
  EXPECT_EQ(ParseSize("1.50000000000000000000000KiB"), 1536u);  // trailing zeros do not count
  // Integer part fits, the fraction pushes it over.
  EXPECT_EQ(ParseSize("18446744073709551615.5KiB"), std::nullopt);
  EXPECT_EQ(ParseSize("18446744073709551.616KB"), std::nullopt);
  EXPECT_EQ(ParseSize("18446744073709551.615KB"), kMax);
}

TEST(FormatBytes, BytesUnderOneKiBAreIntegers) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1), "1 B");
  EXPECT_EQ(FormatBytes(768), "768 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
}

TEST(FormatBytes, TwoDecimalsInBinaryUnits) {
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(512 * MiB), "512.00 MiB");
  EXPECT_EQ(FormatBytes(6 * GiB), "6.00 GiB");
  EXPECT_EQ(FormatBytes(TiB + TiB / 5), "1.20 TiB");
  EXPECT_EQ(FormatBytes(80 * GiB), "80.00 GiB");
  EXPECT_EQ(FormatBytes(1000), "1000 B");
  EXPECT_EQ(FormatBytes(1'000'000), "976.56 KiB");
  EXPECT_EQ(FormatBytes(1'000'000'000), "953.67 MiB");
  EXPECT_EQ(FormatBytes(1023 * KiB), "1023.00 KiB");
  EXPECT_EQ(FormatBytes(3 * PiB), "3.00 PiB");
  EXPECT_EQ(FormatBytes(kMax), "16.00 EiB");
}

TEST(FormatBytes, RoundingUpMovesToTheNextUnit) {
  EXPECT_EQ(FormatBytes(MiB - 1), "1.00 MiB");
  EXPECT_EQ(FormatBytes(GiB - 1), "1.00 GiB");
  EXPECT_EQ(FormatBytes(TiB - 1), "1.00 TiB");
  EXPECT_EQ(FormatBytes(MiB - 6 * KiB), "1018.00 KiB");
}

TEST(FormatSizeExact, ExactStrings) {
  EXPECT_EQ(FormatSizeExact(0), "0");
  EXPECT_EQ(FormatSizeExact(1), "1");
  EXPECT_EQ(FormatSizeExact(256), "256");
  EXPECT_EQ(FormatSizeExact(1000), "1000");
  EXPECT_EQ(FormatSizeExact(1023), "1023");
  EXPECT_EQ(FormatSizeExact(1024), "1KiB");
  EXPECT_EQ(FormatSizeExact(1536 * KiB), "1536KiB");
  EXPECT_EQ(FormatSizeExact(768 * MiB), "768MiB");
  EXPECT_EQ(FormatSizeExact(2 * GiB), "2GiB");
  EXPECT_EQ(FormatSizeExact(80 * GiB), "80GiB");
  EXPECT_EQ(FormatSizeExact(TiB), "1TiB");
  EXPECT_EQ(FormatSizeExact(1025 * GiB), "1025GiB");
  EXPECT_EQ(FormatSizeExact(PiB), "1PiB");
  EXPECT_EQ(FormatSizeExact(15 * EiB), "15EiB");
  EXPECT_EQ(FormatSizeExact(GiB + 1), "1073741825");
  EXPECT_EQ(FormatSizeExact(kMax), "18446744073709551615");
}

TEST(FormatSizeExact, ParseSizeReadsItBack) {
  std::vector<std::uint64_t> values = {0,        1,          255,      256,     1000,    1023,
                                       1024,     1025,       MiB - 1,  MiB,     MiB + 1, 3 * GiB,
                                       GiB / 2,  7 * TiB,    PiB + 42, EiB,     kMax,    kMax - 1,
                                       kMax / 2, 15 * EiB + PiB};
  for (int shift = 0; shift < 64; ++shift) values.push_back(std::uint64_t{1} << shift);
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t v = rng();
    values.push_back(v);
    values.push_back(v >> (v % 64));
    values.push_back((v >> 20) << 20);  // a multiple of 1 MiB
  }
  for (const std::uint64_t v : values) {
    const std::string text = FormatSizeExact(v);
    EXPECT_EQ(ParseSize(text), v) << text;
  }
}

TEST(FormatBytes, ParseSizeReadsExactValuesBack) {
  // FormatBytes is for people and is rounded, but whole values read back exactly.
  for (const std::uint64_t v : {std::uint64_t{0}, std::uint64_t{768}, KiB, std::uint64_t{1536},
                                512 * MiB, 6 * GiB, 2 * TiB}) {
    EXPECT_EQ(ParseSize(FormatBytes(v)), v) << FormatBytes(v);
  }
}

}  // namespace
}  // namespace fragscope
