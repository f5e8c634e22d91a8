// The allocator configuration string: every key's values and default, bad values (the error names
// the key and the value), unknown keys, duplicates, malformed strings, whitespace, combinations,
// the ToString/ParseAllocConf round trip. Resolution from the command line or the environment:
// resolve_conf_test.cpp.
#include "fragscope/allocator/config.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/traces/byte_math.hpp"

namespace fragscope {
namespace {

constexpr std::uint64_t TiB = 1024 * GiB;

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// The ConfigError that parsing `text` throws; a test failure (and nullopt) when none is thrown.
std::optional<ConfigError> ParseError(std::string_view text) {
  try {
    const AllocConf conf = ParseAllocConf(text);
    ADD_FAILURE() << "'" << text << "' parsed without error as '" << conf.ToString() << "'";
  } catch (const ConfigError& e) {
    return e;
  }
  return std::nullopt;
}

// Parsing `text` fails with an error whose key() is `key` and whose message names the key, quotes
// `value` (unless empty) and contains every one of `also`.
void ExpectError(std::string_view text, std::string_view key, std::string_view value,
                 const std::vector<std::string_view>& also = {}) {
  SCOPED_TRACE(::testing::Message() << "configuration: '" << text << "'");
  const std::optional<ConfigError> e = ParseError(text);
  if (!e) return;
  const std::string message = e->what();
  EXPECT_EQ(e->key(), key) << message;
  EXPECT_TRUE(Contains(message, key)) << message;
  if (!value.empty()) {
    EXPECT_TRUE(Contains(message, "'" + std::string(value) + "'")) << message;
  }
  for (std::string_view needle : also) {
    EXPECT_TRUE(Contains(message, needle)) << "'" << needle << "' missing in: " << message;
  }
}

// A bad value: the message reads "bad value 'VALUE' for key 'KEY': expected ...".
void ExpectBadValue(std::string_view key, std::string_view value,
                    const std::vector<std::string_view>& also = {}) {
  const std::string text = std::string(key) + "=" + std::string(value);
  std::vector<std::string_view> needles = also;
  const std::string head = "bad value '" + std::string(value) + "' for key '" + std::string(key) +
                           "': expected ";
  needles.push_back(head);
  ExpectError(text, key, value, needles);
}

// Parsing fails on the shape of the string: key() is "" and the message contains `needles`.
void ExpectMalformed(std::string_view text, const std::vector<std::string_view>& needles) {
  SCOPED_TRACE(::testing::Message() << "configuration: '" << text << "'");
  const std::optional<ConfigError> e = ParseError(text);
  if (!e) return;
  EXPECT_EQ(e->key(), "") << e->what();
  for (std::string_view needle : needles) {
    EXPECT_TRUE(Contains(e->what(), needle)) << "'" << needle << "' missing in: " << e->what();
  }
}

// ---------------------------------------------------------------------------------------------
// Defaults and keys

TEST(AllocConf, Defaults) {
  const AllocConf conf = ParseAllocConf("");
  EXPECT_EQ(conf, AllocConf{});
  EXPECT_EQ(conf.backing, BackingKind::kSim);
  EXPECT_EQ(conf.capacity, std::nullopt);
  EXPECT_EQ(conf.device, 0);
  EXPECT_EQ(conf.external_use, 0u);
  EXPECT_TRUE(conf.growth);
  EXPECT_EQ(conf.preallocate, 0.0);
  EXPECT_EQ(conf.limit, std::nullopt);
  EXPECT_TRUE(conf.virtual_devices.empty());
  EXPECT_TRUE(conf.gc);
  EXPECT_EQ(conf.expandable, std::nullopt) << "unset: the default policy";
  EXPECT_TRUE(conf.Paging()) << "the default pages where the backing can";
  EXPECT_EQ(conf.unmap, UnmapMode::kLazy);
  EXPECT_FALSE(conf.passthrough);
}

// The default policy (docs/allocator.md, "The default policy"): paging with lazy unmapping wherever
// the backing maps pages; the region model with growth where it cannot (cuda) or when a key of the
// region model is given.
TEST(AllocConf, DefaultPolicyPagesWhereTheBackingCan) {
  for (std::string_view backing : {"sim", "host", "vmm"}) {
    EXPECT_TRUE(ParseAllocConf("backing=" + std::string(backing)).Paging()) << backing;
  }
  const AllocConf cuda = ParseAllocConf("backing=cuda");
  EXPECT_FALSE(cuda.Paging()) << "cudaMalloc cannot map pages: regions with growth";
  EXPECT_TRUE(cuda.growth);
  EXPECT_FALSE(ParseAllocConf("backing=async").Paging());
  EXPECT_FALSE(ParseAllocConf("passthrough=on").Paging());
  // A key of the region model selects it, as it always did.
  EXPECT_FALSE(ParseAllocConf("growth=on").Paging());
  EXPECT_FALSE(ParseAllocConf("growth=off").Paging());
  EXPECT_FALSE(ParseAllocConf("preallocate=0.5").Paging());
  EXPECT_TRUE(ParseAllocConf("preallocate=off").Paging()) << "no preallocation is no region key";
  EXPECT_TRUE(ParseAllocConf("growth=on,expandable=on").Paging()) << "expandable wins when given";
  EXPECT_TRUE(ParseAllocConf("limit=1GiB,gc=off").Paging());
}

TEST(AllocConf, UnmapModes) {
  EXPECT_EQ(ParseAllocConf("unmap=eager").unmap, UnmapMode::kEager);
  EXPECT_EQ(ParseAllocConf("unmap=LAZY").unmap, UnmapMode::kLazy);
  EXPECT_EQ(ParseAllocConf("backing=host,expandable=on,unmap=eager").ToString(),
            "backing=host,device=0,external_use=0,growth=on,preallocate=off,gc=on,expandable=on,"
            "unmap=eager,passthrough=off");
  ExpectError("unmap=soon", "unmap", "soon", {"eager", "lazy"});
  ExpectError("growth=on,unmap=eager", "unmap", "", {"does not page"});
  ExpectError("backing=cuda,unmap=lazy", "unmap", "", {"does not page"});
  ExpectError("expandable=on,unmap=eager,preallocate=0.5", "preallocate", "", {"unmap=lazy"});
  EXPECT_TRUE(ParseAllocConf("expandable=on,unmap=lazy,preallocate=0.5").Paging());
}

TEST(AllocConf, BlankStringMeansDefaults) {
  EXPECT_EQ(ParseAllocConf("   "), AllocConf{});
  EXPECT_EQ(ParseAllocConf(" \t\n "), AllocConf{});
}

TEST(AllocConf, KeysInDocumentationOrder) {
  const std::vector<std::string_view> expected = {
      "backing", "capacity",        "device", "external_use", "growth",     "preallocate",
      "limit",   "virtual_devices", "gc",     "expandable",   "unmap", "passthrough", "policy", "preset",
      "expandable_segments", "max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions"};
  EXPECT_EQ(AllocConfKeys(), expected);
}

TEST(AllocConf, DefaultToString) {
  EXPECT_EQ(AllocConf{}.ToString(),
            "backing=sim,device=0,external_use=0,growth=on,preallocate=off,gc=on,"
            "expandable=on,unmap=lazy,passthrough=off");
}

// ---------------------------------------------------------------------------------------------
// backing

TEST(AllocConfBacking, EveryKind) {
  EXPECT_EQ(ParseAllocConf("backing=sim").backing, BackingKind::kSim);
  EXPECT_EQ(ParseAllocConf("backing=host").backing, BackingKind::kHost);
  EXPECT_EQ(ParseAllocConf("backing=cuda").backing, BackingKind::kCuda);
  EXPECT_EQ(ParseAllocConf("backing=vmm").backing, BackingKind::kVmm);
  EXPECT_EQ(ParseAllocConf("backing=async").backing, BackingKind::kAsync);
}

TEST(AllocConfBacking, NamesAreCaseInsensitive) {
  EXPECT_EQ(ParseAllocConf("backing=HOST").backing, BackingKind::kHost);
  EXPECT_EQ(ParseAllocConf("backing=Sim").backing, BackingKind::kSim);
}

TEST(AllocConfBacking, BadValues) {
  for (std::string_view value : {"gpu", "", "simulated", "cudaMalloc", "1"}) {
    ExpectBadValue("backing", value, {"sim, host, cuda, vmm, async"});
  }
}

// ---------------------------------------------------------------------------------------------
// capacity

TEST(AllocConfCapacity, Sizes) {
  EXPECT_EQ(ParseAllocConf("capacity=16GiB").capacity, 16 * GiB);
  EXPECT_EQ(ParseAllocConf("capacity=80GB").capacity, 80'000'000'000u);
  EXPECT_EQ(ParseAllocConf("capacity=1.5GiB").capacity, 3 * GiB / 2);
  EXPECT_EQ(ParseAllocConf("capacity=1048576").capacity, MiB);
  EXPECT_EQ(ParseAllocConf("capacity=1").capacity, 1u);
  EXPECT_EQ(ParseAllocConf("capacity=1 TiB").capacity, TiB);
}

TEST(AllocConfCapacity, BadValues) {
  for (std::string_view value : {"lots", "", "-1GiB", "16EiB", "0.5B", "1.5", "GiB"}) {
    ExpectBadValue("capacity", value, {"size"});
  }
  ExpectBadValue("capacity", "0", {"greater than 0"});
  ExpectBadValue("capacity", "0GiB", {"greater than 0"});
}

// ---------------------------------------------------------------------------------------------
// device

TEST(AllocConfDevice, Ordinals) {
  EXPECT_EQ(ParseAllocConf("device=0").device, 0);
  EXPECT_EQ(ParseAllocConf("device=3").device, 3);
  EXPECT_EQ(ParseAllocConf("device= 7 ").device, 7);
}

TEST(AllocConfDevice, BadValues) {
  for (std::string_view value : {"-1", "1.5", "x", "", "+1", "99999999999", "0x1", "1GiB"}) {
    ExpectBadValue("device", value, {"integer >= 0"});
  }
}

// ---------------------------------------------------------------------------------------------
// external_use

TEST(AllocConfExternalUse, Sizes) {
  EXPECT_EQ(ParseAllocConf("external_use=0").external_use, 0u);
  EXPECT_EQ(ParseAllocConf("external_use=6GiB").external_use, 6 * GiB);
  EXPECT_EQ(ParseAllocConf("backing=host,external_use=512MiB").external_use, 512 * MiB);
}

TEST(AllocConfExternalUse, BadValues) {
  for (std::string_view value : {"-5", "abc", "", "1.5"}) {
    ExpectBadValue("external_use", value, {"size"});
  }
}

TEST(AllocConfExternalUse, OnlySimulatedBackings) {
  for (std::string_view backing : {"cuda", "vmm", "async"}) {
    const std::string text = "backing=" + std::string(backing) + ",external_use=1GiB";
    ExpectError(text, "external_use", "", {"external_use=1GiB", "sim or host", backing});
  }
  // Zero is the default and harmless everywhere (ToString prints it).
  EXPECT_EQ(ParseAllocConf("backing=cuda,external_use=0").external_use, 0u);
  EXPECT_EQ(ParseAllocConf("backing=vmm,external_use=0").backing, BackingKind::kVmm);
}

// ---------------------------------------------------------------------------------------------
// Switches: growth, gc, expandable, passthrough

TEST(AllocConfSwitches, EveryWordForOnAndOff) {
  for (std::string_view key : {"growth", "gc", "expandable", "passthrough"}) {
    for (std::string_view on : {"on", "ON", "On", "true", "TRUE", "yes", "Yes", "1"}) {
      const AllocConf conf = ParseAllocConf(std::string(key) + "=" + std::string(on));
      const bool value = key == "growth"       ? conf.growth
                         : key == "gc"         ? conf.gc
                         : key == "expandable" ? conf.Paging()
                                               : conf.passthrough;
      EXPECT_TRUE(value) << key << "=" << on;
    }
    for (std::string_view off : {"off", "OFF", "false", "False", "no", "NO", "0"}) {
      const AllocConf conf = ParseAllocConf(std::string(key) + "=" + std::string(off));
      const bool value = key == "growth"       ? conf.growth
                         : key == "gc"         ? conf.gc
                         : key == "expandable" ? conf.Paging()
                                               : conf.passthrough;
      EXPECT_FALSE(value) << key << "=" << off;
    }
  }
}

TEST(AllocConfSwitches, BadValues) {
  for (std::string_view key : {"growth", "gc", "expandable", "passthrough"}) {
    for (std::string_view value : {"maybe", "2", "", "onn", "enabled", "o n", "-1"}) {
      ExpectBadValue(key, value, {"expected on or off"});
    }
  }
}

TEST(AllocConfSwitches, ExactMessage) {
  const std::optional<ConfigError> e = ParseError("growth=maybe");
  ASSERT_TRUE(e.has_value());
  EXPECT_STREQ(e->what(), "bad value 'maybe' for key 'growth': expected on or off");
}

// ---------------------------------------------------------------------------------------------
// preallocate

TEST(AllocConfPreallocate, Fractions) {
  EXPECT_EQ(ParseAllocConf("preallocate=0.8").preallocate, 0.8);
  EXPECT_EQ(ParseAllocConf("preallocate=0.25").preallocate, 0.25);
  EXPECT_EQ(ParseAllocConf("preallocate=1").preallocate, 1.0);
  EXPECT_EQ(ParseAllocConf("preallocate=1.0").preallocate, 1.0);
  EXPECT_EQ(ParseAllocConf("preallocate=0.001").preallocate, 0.001);
  EXPECT_EQ(ParseAllocConf("preallocate= 0.5 ").preallocate, 0.5);
}

TEST(AllocConfPreallocate, Off) {
  for (std::string_view off : {"off", "OFF", "0", "0.0", "no", "false"}) {
    EXPECT_EQ(ParseAllocConf("preallocate=" + std::string(off)).preallocate, 0.0) << off;
  }
}

TEST(AllocConfPreallocate, BadValues) {
  for (std::string_view value :
       {"1.5", "2", "-0.1", "-1", "abc", "on", "", "nan", "inf", "80%", "0.8x", "1e", "0.8.1"}) {
    ExpectBadValue("preallocate", value, {"(0, 1]"});
  }
}

// ---------------------------------------------------------------------------------------------
// limit

TEST(AllocConfPreallocate, TextAboveOneIsRefusedEvenWhenItRoundsToOne) {
  for (std::string_view value : {"1.0000000000000000001", "1.00000000000000000000000001",
                                 "1.0000000000000000001e0", "0.10000000000000000001e1",
                                 "10.000000000000000001e-1"}) {
    ExpectBadValue("preallocate", value, {"(0, 1]"});
  }
  // Exactly 1 however written, and just below 1 (it reads as 1.0 too), are fine.
  for (std::string_view value : {"1", "1.0", "1.000000000000000000000", "1e0", "10e-1", "100e-2",
                                 "0.1e1", "0.99999999999999999999", "01.0"}) {
    EXPECT_EQ(ParseAllocConf("preallocate=" + std::string(value)).preallocate, 1.0) << value;
  }
}

TEST(AllocConfLimit, Sizes) {
  EXPECT_EQ(ParseAllocConf("limit=12GiB").limit, 12 * GiB);
  EXPECT_EQ(ParseAllocConf("limit=256").limit, 256u);
  EXPECT_EQ(ParseAllocConf("limit=256B").limit, 256u);
  EXPECT_EQ(ParseAllocConf("limit=1.5GiB").limit, 3 * GiB / 2);
}

TEST(AllocConfLimit, BadValues) {
  for (std::string_view value : {"x", "", "-1", "12 GiBs"}) {
    ExpectBadValue("limit", value, {"size"});
  }
  for (std::string_view value : {"0", "255", "255B"}) {
    ExpectBadValue("limit", value, {"at least 256"});
  }
}

// ---------------------------------------------------------------------------------------------
// virtual_devices

TEST(AllocConfVirtualDevices, Lists) {
  EXPECT_EQ(ParseAllocConf("virtual_devices=2GiB+6GiB").virtual_devices,
            (std::vector<std::uint64_t>{2 * GiB, 6 * GiB}));
  EXPECT_EQ(ParseAllocConf("virtual_devices=4GiB").virtual_devices,
            (std::vector<std::uint64_t>{4 * GiB}));
  EXPECT_EQ(ParseAllocConf("virtual_devices= 1MiB + 2MiB +3MiB ").virtual_devices,
            (std::vector<std::uint64_t>{MiB, 2 * MiB, 3 * MiB}));
  EXPECT_EQ(ParseAllocConf("virtual_devices=1048576+1.5GiB").virtual_devices,
            (std::vector<std::uint64_t>{MiB, 3 * GiB / 2}));
}

TEST(AllocConfVirtualDevices, BadValues) {
  for (std::string_view value :
       {"", "+", "2GiB+", "+2GiB", "2GiB++6GiB", "1023KiB", "2GiB+abc", "0", "2GiB 6GiB",
        "-2GiB"}) {
    ExpectBadValue("virtual_devices", value, {"2GiB+6GiB", "1MiB"});
  }
}

TEST(AllocConfVirtualDevices, ConflictWithLimit) {
  ExpectError("virtual_devices=2GiB+6GiB,limit=8GiB", "virtual_devices", "",
              {"limit", "2GiB+6GiB", "give each device its limit"});
  ExpectError("limit=8GiB,virtual_devices=4GiB", "virtual_devices", "", {"limit"});
}

// ---------------------------------------------------------------------------------------------
// Combinations

TEST(AllocConfExpandable, NeedsAnExpandableBacking) {
  for (std::string_view backing : {"sim", "host", "vmm"}) {
    const AllocConf conf = ParseAllocConf("backing=" + std::string(backing) + ",expandable=on");
    EXPECT_TRUE(conf.Paging()) << backing;
  }
  for (std::string_view backing : {"cuda", "async"}) {
    ExpectError("backing=" + std::string(backing) + ",expandable=on", "expandable", "",
                {"sim, host or vmm", backing});
  }
  EXPECT_FALSE(ParseAllocConf("backing=cuda,expandable=off").Paging());
}

TEST(AllocConfPassthrough, AsyncForcesPassthrough) {
  EXPECT_TRUE(ParseAllocConf("backing=async").passthrough);
  EXPECT_TRUE(ParseAllocConf("backing=async,passthrough=on").passthrough);
  EXPECT_TRUE(ParseAllocConf("passthrough=on,backing=async").passthrough);
  ExpectError("backing=async,passthrough=off", "passthrough", "", {"passthrough=off", "async"});
  ExpectError("passthrough=no,backing=async", "passthrough", "", {"async"});
}

TEST(AllocConfPassthrough, WithCudaAndOthers) {
  const AllocConf conf = ParseAllocConf("backing=cuda,passthrough=on,limit=4GiB");
  EXPECT_TRUE(conf.passthrough);
  EXPECT_EQ(conf.limit, 4 * GiB);
  EXPECT_TRUE(ParseAllocConf("backing=sim,passthrough=on").passthrough);
  EXPECT_TRUE(ParseAllocConf("passthrough=on,virtual_devices=1GiB+1GiB").passthrough);
  EXPECT_TRUE(ParseAllocConf("passthrough=on,preallocate=off").passthrough);
}

TEST(AllocConfPassthrough, NotWithExpandableOrPreallocate) {
  ExpectError("passthrough=on,expandable=on", "expandable", "", {"passthrough"});
  ExpectError("backing=vmm,expandable=on,passthrough=on", "expandable", "", {"passthrough"});
  ExpectError("passthrough=on,preallocate=0.5", "preallocate", "",
              {"preallocate=0.5", "passthrough"});
  ExpectError("backing=async,preallocate=0.8", "preallocate", "",
              {"preallocate=0.8", "passthrough", "async"});
}

TEST(AllocConfCombinations, ValidExamples) {
  const AllocConf a = ParseAllocConf("backing=sim,capacity=16GiB,growth=on,limit=12GiB,gc=on");
  EXPECT_EQ(a.capacity, 16 * GiB);
  EXPECT_EQ(a.limit, 12 * GiB);
  const AllocConf b = ParseAllocConf("backing=host,expandable=on");
  EXPECT_EQ(b.backing, BackingKind::kHost);
  EXPECT_TRUE(b.Paging());
  const AllocConf c = ParseAllocConf("backing=sim,virtual_devices=2GiB+6GiB");
  EXPECT_EQ(c.virtual_devices.size(), 2u);
  const AllocConf d = ParseAllocConf("backing=vmm,expandable=on,preallocate=0.5,gc=off");
  EXPECT_EQ(d.preallocate, 0.5);
  EXPECT_FALSE(d.gc);
}

// ---------------------------------------------------------------------------------------------
// Unknown keys, duplicates, malformed strings, whitespace

TEST(AllocConfSyntax, UnknownKeyListsValidKeys) {
  const std::optional<ConfigError> e = ParseError("foo=1");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->key(), "foo");
  const std::string message = e->what();
  EXPECT_TRUE(Contains(message, "unknown key 'foo' in allocator configuration; valid keys: "
                                "backing, capacity, device, external_use, growth, preallocate, "
                                "limit, virtual_devices, gc, expandable, unmap, passthrough"))
      << message;
  for (std::string_view key : AllocConfKeys()) EXPECT_TRUE(Contains(message, key)) << key;
  EXPECT_FALSE(Contains(message, "did you mean")) << message;
}

TEST(AllocConfSyntax, UnknownKeySuggestsACloseOne) {
  for (auto [text, key, suggestion] :
       {std::tuple{"grwoth=on", "grwoth", "growth"},
        std::tuple{"virtual-devices=1GiB", "virtual-devices", "virtual_devices"},
        std::tuple{"Growth=on", "Growth", "growth"},
        std::tuple{"limits=1GiB", "limits", "limit"},
        std::tuple{"gcc=on", "gcc", "gc"},
        std::tuple{"x=1", "x", ""},
        std::tuple{"expandable_segment=on", "expandable_segment", "expandable_segments"}}) {
    const std::optional<ConfigError> e = ParseError(text);
    ASSERT_TRUE(e.has_value()) << text;
    EXPECT_EQ(e->key(), key);
    EXPECT_TRUE(Contains(e->what(), "valid keys: backing")) << e->what();
    if (std::string_view(suggestion).empty()) {
      EXPECT_FALSE(Contains(e->what(), "did you mean")) << e->what();
    } else {
      EXPECT_TRUE(Contains(e->what(), "did you mean '" + std::string(suggestion) + "'?"))
          << e->what();
    }
  }
}

TEST(AllocConfSyntax, UnknownKeyAmongValidOnes) {
  ExpectError("growth=on,colour=blue,gc=off", "colour", "colour", {"valid keys"});
}

TEST(AllocConfSyntax, DuplicateKey) {
  ExpectError("growth=on,growth=off", "growth", "growth", {"twice"});
  ExpectError(" gc=on , gc =on", "gc", "gc", {"twice"});
  ExpectError("limit=1GiB,backing=sim,limit=1GiB", "limit", "limit", {"twice", "1 and 3"});
}

TEST(AllocConfSyntax, MalformedItems) {
  ExpectMalformed("growth", {"'growth'", "key=value"});
  ExpectMalformed("growth:on", {"'growth:on'", "key=value"});
  ExpectMalformed("gc=on,growth off", {"'growth off'", "position 2"});
  ExpectMalformed("=on", {"'=on'", "key"});
  ExpectMalformed(" = on", {"'= on'"});
}

TEST(AllocConfSyntax, EmptyItems) {
  ExpectMalformed("growth=on,,gc=on", {"empty item at position 2", "growth=on,,gc=on"});
  ExpectMalformed("a=1,,b=2", {"empty item at position 2"});  // before judging the keys
  ExpectMalformed("growth=on,", {"empty item at position 2"});
  ExpectMalformed(",growth=on", {"empty item at position 1"});
  ExpectMalformed("growth=on, ,gc=on", {"empty item at position 2"});
  ExpectMalformed(",", {"empty item at position 1"});
}

TEST(AllocConfSyntax, Whitespace) {
  const AllocConf conf =
      ParseAllocConf("  backing = host ,\tgrowth=off , limit =  512 MiB  ,gc= off ");
  EXPECT_EQ(conf.backing, BackingKind::kHost);
  EXPECT_FALSE(conf.growth);
  EXPECT_EQ(conf.limit, 512 * MiB);
  EXPECT_FALSE(conf.gc);
}

TEST(AllocConfSyntax, ValueMayNotContainAnotherEquals) {
  ExpectBadValue("limit", "1GiB=2GiB", {"size"});
}

TEST(AllocConfSyntax, KeysAreCaseSensitive) {
  ExpectError("GC=on", "GC", "GC", {"unknown key"});
}

TEST(AllocConfSyntax, ErrorsComeInReadingOrder) {
  // The shape first, then the key names, then the values in the order they are written.
  EXPECT_EQ(ParseError("growth=maybe,foo=1,,x").value().key(), "");
  EXPECT_EQ(ParseError("growth=maybe,foo=1").value().key(), "foo");
  EXPECT_EQ(ParseError("growth=maybe,backing=gpu").value().key(), "growth");
  EXPECT_EQ(ParseError("backing=gpu,growth=maybe").value().key(), "backing");
  // A bad value is reported before a bad combination.
  EXPECT_EQ(ParseError("backing=cuda,expandable=on,gc=maybe").value().key(), "gc");
}

// ---------------------------------------------------------------------------------------------
// Canonical form and round trip

TEST(AllocConfToString, EveryKeyInOrder) {
  AllocConf conf;
  conf.backing = BackingKind::kHost;
  conf.capacity = 16 * GiB;
  conf.device = 0;
  conf.external_use = GiB;
  conf.growth = false;
  conf.preallocate = 0.5;
  conf.limit = 12 * GiB;
  conf.gc = true;
  conf.expandable = true;
  EXPECT_EQ(conf.ToString(),
            "backing=host,capacity=16GiB,device=0,external_use=1GiB,growth=off,preallocate=0.5,"
            "limit=12GiB,gc=on,expandable=on,unmap=lazy,passthrough=off");

  AllocConf devices;
  devices.virtual_devices = {2 * GiB, 6 * GiB, 1536 * KiB};
  devices.device = 2;
  EXPECT_EQ(devices.ToString(),
            "backing=sim,device=2,external_use=0,growth=on,preallocate=off,"
            "virtual_devices=2GiB+6GiB+1536KiB,gc=on,expandable=on,unmap=lazy,passthrough=off");

  EXPECT_EQ(ParseAllocConf("backing=async").ToString(),
            "backing=async,device=0,external_use=0,growth=on,preallocate=off,gc=on,"
            "expandable=off,passthrough=on");
}

TEST(AllocConfToString, RoundTrip) {
  std::vector<AllocConf> confs;
  confs.emplace_back();
  {
    AllocConf c;
    c.backing = BackingKind::kHost;
    c.capacity = 64 * GiB;
    c.external_use = 3 * GiB + 5;
    c.limit = 1000;
    c.growth = false;
    confs.push_back(c);
  }
  {
    AllocConf c;
    c.virtual_devices = {MiB, 2 * GiB, 6 * GiB + 256, 1'000'000'000};
    c.gc = false;
    c.preallocate = 1.0;
    confs.push_back(c);
  }
  {
    AllocConf c;
    c.backing = BackingKind::kVmm;
    c.device = 3;
    c.expandable = true;
    c.preallocate = 1.0 / 3.0;
    c.limit = 7 * GiB + 1;
    confs.push_back(c);
  }
  {
    AllocConf c;
    c.backing = BackingKind::kCuda;
    c.passthrough = true;
    c.capacity = 80'000'000'000;
    confs.push_back(c);
  }
  {
    AllocConf c;
    c.backing = BackingKind::kAsync;
    c.passthrough = true;
    c.device = 1;
    confs.push_back(c);
  }
  for (double fraction : {0.8, 0.1, 0.7, 1e-3, 1e-9, 0.123456789012345, 0.9999999999999999}) {
    AllocConf c;
    c.preallocate = fraction;
    confs.push_back(c);
  }
  {
    AllocConf c;
    c.capacity = traces::kMaxBytes;  // the largest size fragscope represents
    c.limit = 256;
    confs.push_back(c);
  }
  for (const AllocConf& conf : confs) {
    const std::string text = conf.ToString();
    EXPECT_EQ(ParseAllocConf(text), conf) << text;
    EXPECT_EQ(ParseAllocConf(text).ToString(), text);
  }
}

TEST(AllocConfSizes, AboveFourExbibytesIsRefusedNamingTheKey) {
  for (const char* text : {"capacity=18446744073709551615", "limit=5EiB", "external_use=4611686018427387905",
                           "virtual_devices=3EiB+2EiB"}) {
    SCOPED_TRACE(text);
    try {
      ParseAllocConf(text);
      FAIL() << "accepted";
    } catch (const ConfigError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("4EiB"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string(text).substr(0, std::string(text).find('='))), std::string::npos) << what;
    }
  }
  EXPECT_EQ(ParseAllocConf("capacity=4EiB").capacity, traces::kMaxBytes);
}

TEST(AllocConfToString, ParsedStringsAreStable) {
  for (std::string_view text :
       {"", "backing=host,growth=off", "capacity=1.5GiB,limit=1000MB", "preallocate=0.8",
        "virtual_devices=2GiB+6GiB,gc=off", "backing=vmm,expandable=on,preallocate=1",
        "backing=async,device=1", "backing=cuda,passthrough=yes,limit=4096MiB",
        "backing=host,external_use=2.5GiB,capacity=16GiB"}) {
    const AllocConf conf = ParseAllocConf(text);
    EXPECT_EQ(ParseAllocConf(conf.ToString()), conf) << text << " -> " << conf.ToString();
  }
}


// ---------------------------------------------------------------------------------------------
// Found by a review of the configuration grammar

TEST(AllocConfReview, SizesPastSixteenExbibytesSayTooLargeNotMalformed) {
  ExpectBadValue("limit", "99999999999GiB", {"at most 4EiB"});
  ExpectBadValue("capacity", "18446744073709551616", {"at most 4EiB"});
  EXPECT_TRUE(SizeTooLarge("99999999999GiB"));
  EXPECT_TRUE(SizeTooLarge("18446744073709551616"));
  EXPECT_FALSE(SizeTooLarge("lots"));
  EXPECT_FALSE(SizeTooLarge("1GiB"));
}

TEST(AllocConfReview, PolicyAndPresetNamesAreCaseInsensitive) {
  EXPECT_EQ(ParseAllocConf("policy=BFC").policy, ParseAllocConf("policy=bfc").policy);
  EXPECT_EQ(ParseAllocConf("preset=PyTorch").policy, "pytorch");
  EXPECT_EQ(ParseAllocConf("preset=TensorFlow").policy, "tensorflow");
  ExpectBadValue("preset", "PyTorches", {"a preset"});
}

// The two errors that used to blame something the user had not written.
TEST(AllocConfReview, ATinyPreallocationIsNamed) {
  try {
    MemorySystem::Create(ParseAllocConf("backing=sim,preallocate=0.0000000001"));
    FAIL() << "created";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "preallocate");
    EXPECT_NE(std::string(error.what()).find("less than the sim backing's granularity (256 B)"), std::string::npos)
        << error.what();
  }
}

TEST(AllocConfReview, AnImplicitLimitBelowOnePageNamesCapacity) {
  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {"backing=sim,capacity=1KiB", "capacity"},
           {"backing=sim,capacity=3MiB,external_use=2MiB", "external_use"},
           {"backing=sim,limit=1KiB", "limit"}}) {
    try {
      MemorySystem::Create(ParseAllocConf(text));
      FAIL() << text << ": created";
    } catch (const ConfigError& error) {
      EXPECT_EQ(error.key(), key) << text << ": " << error.what();
    }
  }
}

}  // namespace
}  // namespace fragscope
