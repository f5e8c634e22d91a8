// The allocator configuration string: parsing, validation, canonical printing and resolution from
// the command line or the environment. Every key is documented in docs/allocator.md; the table
// below is the single place that lists them, in documentation order.
#include "fragscope/allocator/config.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/did_you_mean.hpp"
#include "pytorch_settings.hpp"

namespace fragscope {
namespace {

// ---------------------------------------------------------------------------------------------
// Text helpers

constexpr bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
constexpr char ToLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToLower(c);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Value parsers. Each throws a ConfigError that names the key, quotes the value and says what is
// expected.

[[noreturn]] void BadValue(std::string_view key, std::string_view value, std::string_view expected) {
  throw ConfigError(std::string(key),
                    fmt::format("bad value '{}' for key '{}': expected {}", value, key, expected));
}

constexpr std::string_view kExpectSwitch = "on or off";
constexpr std::string_view kExpectSize =
    "a size such as 1048576 (bytes), 512MiB, 1.5GiB or 64KB";

// on/off, true/false, yes/no, 1/0; case-insensitive. Returns nullopt for anything else.
std::optional<bool> ParseSwitchWord(std::string_view value) {
  const std::string v = Lower(value);
  if (v == "on" || v == "true" || v == "yes" || v == "1") return true;
  if (v == "off" || v == "false" || v == "no" || v == "0") return false;
  return std::nullopt;
}

bool ParseSwitch(std::string_view key, std::string_view value) {
  const std::optional<bool> on = ParseSwitchWord(value);
  if (!on) BadValue(key, value, kExpectSwitch);
  return *on;
}

std::uint64_t ParseSizeValue(std::string_view key, std::string_view value, std::uint64_t minimum) {
  const std::optional<std::uint64_t> bytes = ParseSize(value);
  if (!bytes && SizeTooLarge(value)) {
    BadValue(key, value, fmt::format("a size of at most {}", FormatSizeExact(traces::kMaxBytes)));
  }
  if (!bytes) BadValue(key, value, kExpectSize);
  if (*bytes < minimum) {
    BadValue(key, value,
             minimum == 1 ? std::string("a size greater than 0")
                          : fmt::format("a size of at least {}", FormatSizeExact(minimum)));
  }
  if (!traces::IsRepresentableSize(*bytes)) {
    BadValue(key, value, fmt::format("a size of at most {}", FormatSizeExact(traces::kMaxBytes)));
  }
  return *bytes;
}

std::string_view BackingChoices() { return "one of sim, host, cuda, vmm, async"; }

void ParseBacking(std::string_view key, std::string_view value, AllocConf& conf) {
  if (!ParseBackingKind(value, &conf.backing)) BadValue(key, value, BackingChoices());
}

void ParseCapacity(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.capacity = ParseSizeValue(key, value, 1);
}

void ParseDevice(std::string_view key, std::string_view value, AllocConf& conf) {
  constexpr std::string_view kExpect = "a CUDA device ordinal (an integer >= 0)";
  if (value.empty()) BadValue(key, value, kExpect);
  int ordinal = 0;
  const char* last = value.data() + value.size();
  auto [end, ec] = std::from_chars(value.data(), last, ordinal);
  if (ec != std::errc() || end != last || ordinal < 0) {
    BadValue(key, value, kExpect);
  }
  conf.device = ordinal;
}

void ParseExternalUse(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.external_use = ParseSizeValue(key, value, 0);
}

void ParseGrowth(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.growth = ParseSwitch(key, value);
}

// True when the decimal text of a number (digits, an optional point, an optional exponent; already
// accepted by from_chars) is above 1 exactly, as written: "1.0000000000000000001" is, though it
// reads as the double 1.0. Only called for text that reads as 1.0.
bool DecimalTextAboveOne(std::string_view text) {
  std::string digits;        // every digit of the mantissa, in order
  long long point = -1;      // digits before the point; -1: no point
  std::size_t i = 0;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      point = static_cast<long long>(digits.size());
    } else if (text[i] >= '0' && text[i] <= '9') {
      digits += text[i];
    }
  }
  if (point < 0) point = static_cast<long long>(digits.size());
  long long exponent = 0;
  if (i < text.size()) {
    ++i;  // 'e'
    bool negative = false;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      exponent = std::min<long long>(exponent * 10 + (text[i] - '0'), 1'000'000'000);
    }
    if (negative) exponent = -exponent;
  }
  // value = 0.DIGITS x 10^(point + exponent); drop leading zeros (each moves the point) and
  // trailing zeros (they change nothing).
  std::size_t first = 0;
  while (first < digits.size() && digits[first] == '0') ++first;
  std::size_t last = digits.size();
  while (last > first && digits[last - 1] == '0') --last;
  if (first == last) return false;  // zero
  const long long magnitude = point + exponent - static_cast<long long>(first);
  // 1 is 0.1 x 10^1: anything with a larger magnitude, or the same magnitude and more digits than
  // a single leading 1, is above it.
  if (magnitude != 1) return magnitude > 1;
  return digits[first] != '1' || last - first > 1;
}

void ParsePreallocate(std::string_view key, std::string_view value, AllocConf& conf) {
  constexpr std::string_view kExpect = "a fraction of the capacity in (0, 1] such as 0.8, or off";
  if (const std::optional<bool> word = ParseSwitchWord(value); word.has_value() && !*word) {
    conf.preallocate = 0.0;  // off, false, no, 0
    return;
  }
  if (value.empty()) BadValue(key, value, kExpect);
  double fraction = 0.0;
  const char* last = value.data() + value.size();
  auto [end, ec] = std::from_chars(value.data(), last, fraction, std::chars_format::general);
  if (ec != std::errc() || end != last || !std::isfinite(fraction) ||
      fraction < 0.0 || fraction > 1.0 || (fraction == 1.0 && DecimalTextAboveOne(value))) {
    BadValue(key, value, kExpect);
  }
  conf.preallocate = fraction;  // 0 (written as "0.0") means off as well
}

void ParseLimit(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.limit = ParseSizeValue(key, value, 256);
}

void ParseVirtualDevices(std::string_view key, std::string_view value, AllocConf& conf) {
  constexpr std::string_view kExpect =
      "one or more sizes joined by '+', such as 2GiB+6GiB, each at least 1MiB, together at most "
      "4EiB";
  std::vector<std::uint64_t> limits;
  std::uint64_t total = 0;
  std::string_view rest = value;
  while (true) {
    const std::size_t plus = rest.find('+');
    const std::string_view piece = Trim(rest.substr(0, plus));
    const std::optional<std::uint64_t> bytes = ParseSize(piece);
    if (!bytes || *bytes < MiB) BadValue(key, value, kExpect);
    const std::optional<std::uint64_t> sum = traces::CheckedAdd(total, *bytes);
    if (!sum || !traces::IsRepresentableSize(*sum)) BadValue(key, value, kExpect);
    total = *sum;
    limits.push_back(*bytes);
    if (plus == std::string_view::npos) break;
    rest.remove_prefix(plus + 1);
  }
  conf.virtual_devices = std::move(limits);
}

void ParseGc(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.gc = ParseSwitch(key, value);
}

void ParseExpandable(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.expandable = ParseSwitch(key, value);
}

void ParseUnmap(std::string_view key, std::string_view value, AllocConf& conf) {
  const std::string v = Lower(value);
  if (v == "eager") conf.unmap = UnmapMode::kEager;
  else if (v == "lazy") conf.unmap = UnmapMode::kLazy;
  else BadValue(key, value, "eager (unmap free pages at once) or lazy (only when memory is needed)");
}

// A policy's registered name as written, or else in lower case: values are case-insensitive
// (policy=BFC), while a policy registered with capitals is still found by its own spelling.
std::string PolicyName(std::string_view value) {
  return FindPolicy(value) != nullptr ? std::string(value) : Lower(value);
}

void ParsePolicy(std::string_view key, std::string_view written, AllocConf& conf) {
  const std::string value = PolicyName(written);
  if (!conf.policy.empty() && conf.policy != value) {
    throw ConfigError("policy", fmt::format("policy={} contradicts preset={}", value, conf.policy));
  }
  if (FindPolicy(value) == nullptr) {
    std::string names;
    for (const std::string& name : PolicyNames()) names += (names.empty() ? "" : ", ") + name;
    BadValue(key, written, fmt::format("a registered policy: {}", names));
  }
  conf.policy = value;  // "bfc" and "passthrough" are settled in CheckCombination
}

// preset=NAME: another framework's allocator, emulated as a registered policy of that name
// (docs/allocator.md, "Presets"). The same as policy=NAME, for the policies that are presets.
void ParsePreset(std::string_view key, std::string_view written, AllocConf& conf) {
  const std::string value = PolicyName(written);
  const auto& presets = PresetNames();
  if (std::find(presets.begin(), presets.end(), value) == presets.end() || FindPolicy(value) == nullptr) {
    std::string names;
    for (std::string_view name : presets) names += fmt::format("{}{}", names.empty() ? "" : ", ", name);
    BadValue(key, written, fmt::format("a preset: {}", names));
  }
  if (!conf.policy.empty() && conf.policy != value) {
    throw ConfigError("preset", fmt::format("preset={} contradicts policy={}", value, conf.policy));
  }
  conf.policy = value;
}

void ParsePassthrough(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.passthrough = ParseSwitch(key, value);
}

// preset=pytorch's settings, under PyTorch's names (pytorch_settings.cpp reads the values).
void ParseExpandableSegments(std::string_view key, std::string_view value, AllocConf& conf) {
  conf.pytorch.expandable_segments = ParseSwitch(key, value);
}
void ParseMaxSplitSizeMb(std::string_view key, std::string_view value, AllocConf& conf) {
  pytorch::ParseMaxSplitSizeMb(key, value, conf.pytorch);
}
void ParseGarbageCollectionThreshold(std::string_view key, std::string_view value, AllocConf& conf) {
  pytorch::ParseGarbageCollectionThreshold(key, value, conf.pytorch);
}
void ParseRoundupPower2Divisions(std::string_view key, std::string_view value, AllocConf& conf) {
  pytorch::ParseRoundupPower2Divisions(key, value, conf.pytorch);
}

// ---------------------------------------------------------------------------------------------
// The keys, in documentation order.

struct KeySpec {
  std::string_view name;
  void (*parse)(std::string_view key, std::string_view value, AllocConf& conf);
};

enum KeyIndex : std::size_t {
  kBackingKey,
  kCapacityKey,
  kDeviceKey,
  kExternalUseKey,
  kGrowthKey,
  kPreallocateKey,
  kLimitKey,
  kVirtualDevicesKey,
  kGcKey,
  kExpandableKey,
  kUnmapKey,
  kPassthroughKey,
  kPolicyKey,
  kPresetKey,
  kExpandableSegmentsKey,
  kMaxSplitSizeMbKey,
  kGarbageCollectionThresholdKey,
  kRoundupPower2DivisionsKey,
  kKeyCount,
};

constexpr std::array<KeySpec, kKeyCount> kKeys = {{
    {"backing", ParseBacking},
    {"capacity", ParseCapacity},
    {"device", ParseDevice},
    {"external_use", ParseExternalUse},
    {"growth", ParseGrowth},
    {"preallocate", ParsePreallocate},
    {"limit", ParseLimit},
    {"virtual_devices", ParseVirtualDevices},
    {"gc", ParseGc},
    {"expandable", ParseExpandable},
    {"unmap", ParseUnmap},
    {"passthrough", ParsePassthrough},
    {"policy", ParsePolicy},
    {"preset", ParsePreset},
    {"expandable_segments", ParseExpandableSegments},
    {"max_split_size_mb", ParseMaxSplitSizeMb},
    {"garbage_collection_threshold", ParseGarbageCollectionThreshold},
    {"roundup_power2_divisions", ParseRoundupPower2Divisions},
}};

std::string KeyList() {
  std::string out;
  for (const KeySpec& spec : kKeys) {
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

[[noreturn]] void UnknownKey(std::string_view key) {
  std::string message =
      fmt::format("unknown key '{}' in allocator configuration; valid keys: {}", key, KeyList());
  // Suggest only close misspellings: one edit for a key of up to 3 characters, two otherwise.
  std::vector<std::string_view> names;
  for (const KeySpec& spec : kKeys) names.push_back(spec.name);
  if (const std::string_view best = traces::DidYouMean(key, names); !best.empty()) {
    message += fmt::format(" (did you mean '{}'?)", best);
  }
  throw ConfigError(std::string(key), message);
}

std::string FormatDevices(const std::vector<std::uint64_t>& limits) {
  std::string out;
  for (const std::uint64_t bytes : limits) {
    if (!out.empty()) out += '+';
    out += FormatSizeExact(bytes);
  }
  return out;
}

std::string FormatSwitch(bool on) { return on ? "on" : "off"; }

std::string FormatFraction(double fraction) {
  if (fraction == 0.0) return "off";
  return fmt::format("{}", fraction);  // shortest form that reads back to the same double
}

// policy=bfc and policy=passthrough are the built-ins that passthrough= already selects: the
// configuration keeps one spelling (passthrough=on|off, no policy), so equal configurations compare
// and print equal. Another policy cannot be combined with passthrough=on.
void SettlePolicy(AllocConf& conf, const std::array<bool, kKeyCount>& given) {
  if (conf.policy.empty()) return;
  const bool wants_passthrough = conf.policy == "passthrough";
  if (conf.policy == "bfc" || wants_passthrough) {
    if (given[kPassthroughKey] && conf.passthrough != wants_passthrough) {
      throw ConfigError("policy", fmt::format("policy={} contradicts passthrough={}", conf.policy,
                                              FormatSwitch(conf.passthrough)));
    }
    conf.passthrough = wants_passthrough;
    conf.policy.clear();
    return;
  }
  if (conf.passthrough) {
    throw ConfigError("policy", fmt::format("policy={} cannot be combined with passthrough=on, which "
                                            "selects the passthrough policy",
                                            conf.policy));
  }
}

// Checks the keys against each other, once all are read. `given` says which keys the text set.
void CheckCombination(AllocConf& conf, const std::array<bool, kKeyCount>& given) {
  SettlePolicy(conf, given);
  for (const KeyIndex key : {kExpandableSegmentsKey, kMaxSplitSizeMbKey, kGarbageCollectionThresholdKey,
                             kRoundupPower2DivisionsKey}) {
    if (given[key] && conf.policy != "pytorch") {
      throw ConfigError(std::string(kKeys[key].name),
                        fmt::format("{} is a setting of preset=pytorch (PyTorch's own name for it): add "
                                    "preset=pytorch, or use fragscope's keys{}",
                                    kKeys[key].name,
                                    key == kExpandableSegmentsKey ? " (expandable=on pages here)" : ""));
    }
  }
  if (conf.external_use != 0 && !TraitsOf(conf.backing).simulates_external_use) {
    throw ConfigError(
        "external_use",
        fmt::format("external_use={} needs backing sim or host: it simulates memory that other "
                    "processes hold, which on backing {} is real and already counted",
                    FormatSizeExact(conf.external_use), ToString(conf.backing)));
  }
  if (given[kVirtualDevicesKey] && given[kLimitKey]) {
    throw ConfigError("virtual_devices",
                      fmt::format("virtual_devices={} cannot be combined with limit: give each "
                                  "device its limit in virtual_devices instead",
                                  FormatDevices(conf.virtual_devices)));
  }
  // growth and preallocate are the region policies' keys: giving one without expandable selects
  // the region model, as it always did, rather than the paging default.
  if (!given[kExpandableKey] && (given[kGrowthKey] || conf.preallocate > 0.0)) conf.expandable = false;
  if (conf.expandable.value_or(false) && !TraitsOf(conf.backing).grows_in_place) {
    throw ConfigError("expandable",
                      fmt::format("expandable=on needs backing sim, host or vmm, not backing {}",
                                  ToString(conf.backing)));
  }
  const bool async = TraitsOf(conf.backing).always_passthrough;
  if (async) {
    if (given[kPassthroughKey] && !conf.passthrough) {
      throw ConfigError("passthrough",
                        "passthrough=off is not possible with backing async: cudaMallocAsync "
                        "pools cache on their own, so backing async is always passthrough");
    }
    conf.passthrough = true;
  }
  if (conf.passthrough) {
    const std::string_view why =
        async ? " (backing async is always passthrough)" : std::string_view();
    if (conf.expandable.value_or(false)) {
      throw ConfigError("expandable",
                        fmt::format("expandable=on cannot be combined with passthrough{}: "
                                    "passthrough makes one backing call per request and keeps "
                                    "no region to grow",
                                    why));
    }
    if (conf.preallocate > 0.0) {
      throw ConfigError("preallocate",
                        fmt::format("preallocate={} cannot be combined with passthrough{}: "
                                    "passthrough makes one backing call per request and keeps "
                                    "no cache to preallocate into",
                                    FormatFraction(conf.preallocate), why));
    }
  }
  if (given[kUnmapKey] && !conf.Paging()) {
    throw ConfigError("unmap", fmt::format("unmap={} applies to a paging region, and this "
                                           "configuration does not page (expandable=on pages on "
                                           "backing sim, host or vmm)",
                                           ToString(conf.unmap)));
  }
  if (conf.Paging() && conf.unmap == UnmapMode::kEager && conf.preallocate > 0.0) {
    throw ConfigError("preallocate",
                      fmt::format("preallocate={} maps pages up front that unmap=eager gives back at "
                                  "the first free: use unmap=lazy to keep them",
                                  FormatFraction(conf.preallocate)));
  }
}

// One key=value item of the string, trimmed.
struct Item {
  std::string_view key;
  std::string_view value;
};

// The first comma of `text` outside square brackets (roundup_power2_divisions=[256:1,>:8] keeps
// PyTorch's list form), or npos.
std::size_t TopLevelComma(std::string_view text) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    else if (text[i] == ']' && depth > 0) --depth;
    else if (text[i] == ',' && depth == 0) return i;
  }
  return std::string_view::npos;
}

// Splits the string at commas (outside brackets) and each item at its first '='. Throws ConfigError("") for an empty
// item ("a=1,,b=2", a comma at either end) or an item that is not key=value.
std::vector<Item> SplitItems(std::string_view text) {
  std::vector<Item> items;
  std::string_view rest = text;
  std::size_t offset = 0;  // character offset of the current item in `text`
  while (true) {
    const std::size_t position = items.size() + 1;  // 1-based, for messages
    const std::size_t comma = TopLevelComma(rest);
    const std::string_view item = Trim(rest.substr(0, comma));
    if (item.empty()) {
      throw ConfigError(
          "", fmt::format("empty item at position {} (character {}) of allocator configuration "
                          "'{}': expected key=value pairs separated by single commas",
                          position, offset + 1, text));
    }
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      throw ConfigError("", fmt::format("malformed item '{}' at position {} of allocator "
                                        "configuration: expected key=value, e.g. growth=on",
                                        item, position));
    }
    const std::string_view key = Trim(item.substr(0, equals));
    if (key.empty()) {
      throw ConfigError("", fmt::format("malformed item '{}' at position {} of allocator "
                                        "configuration: the key before '=' is missing",
                                        item, position));
    }
    items.push_back({key, Trim(item.substr(equals + 1))});
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    offset += comma + 1;
  }
  return items;
}

}  // namespace

bool AllocConf::operator==(const AllocConf& o) const {
  return backing == o.backing && capacity == o.capacity && device == o.device &&
         external_use == o.external_use && growth == o.growth && preallocate == o.preallocate &&
         limit == o.limit && virtual_devices == o.virtual_devices && gc == o.gc &&
         Paging() == o.Paging() && (!Paging() || unmap == o.unmap) && passthrough == o.passthrough &&
         policy == o.policy && pytorch == o.pytorch;
}

std::string_view ToString(UnmapMode mode) { return mode == UnmapMode::kEager ? "eager" : "lazy"; }

std::string AllocConf::ToString() const {
  std::string out;
  const auto add = [&out](std::string_view key, std::string_view value) {
    if (!out.empty()) out += ',';
    out += key;
    out += '=';
    out += value;
  };
  add("backing", fragscope::ToString(backing));
  if (capacity) add("capacity", FormatSizeExact(*capacity));
  add("device", fmt::format("{}", device));
  add("external_use", FormatSizeExact(external_use));
  add("growth", FormatSwitch(growth));
  add("preallocate", FormatFraction(preallocate));
  if (limit) add("limit", FormatSizeExact(*limit));
  if (!virtual_devices.empty()) add("virtual_devices", FormatDevices(virtual_devices));
  add("gc", FormatSwitch(gc));
  add("expandable", FormatSwitch(Paging()));
  if (Paging()) add("unmap", fragscope::ToString(unmap));
  add("passthrough", FormatSwitch(passthrough));
  if (!policy.empty()) add("policy", policy);  // a registered policy other than the built-ins
  if (policy == "pytorch") {
    add("expandable_segments", FormatSwitch(pytorch.expandable_segments));
    if (pytorch.max_split_size != UINT64_MAX) add("max_split_size_mb", pytorch::FormatMaxSplitSizeMb(pytorch));
    if (pytorch.garbage_collection_threshold > 0.0) {
      add("garbage_collection_threshold", pytorch::FormatGarbageCollectionThreshold(pytorch));
    }
    if (const std::string divisions = pytorch::FormatRoundupPower2Divisions(pytorch); !divisions.empty()) {
      add("roundup_power2_divisions", divisions);
    }
  }
  return out;
}

const std::vector<std::string_view>& PresetNames() {
  static const std::vector<std::string_view> names = {"tensorflow", "pytorch"};
  return names;
}

bool IsPreset(std::string_view policy) {
  if (policy.empty()) return false;
  const auto& names = PresetNames();
  return std::find(names.begin(), names.end(), policy) != names.end();
}

const std::vector<std::string_view>& AllocConfKeys() {
  static const std::vector<std::string_view> keys = [] {
    std::vector<std::string_view> names;
    names.reserve(kKeys.size());
    for (const KeySpec& spec : kKeys) names.push_back(spec.name);
    return names;
  }();
  return keys;
}

AllocConf ParseAllocConf(std::string_view text) {
  AllocConf conf;
  if (Trim(text).empty()) return conf;

  // Errors come in the order a reader would fix them: the shape of the string first, then the key
  // names, then each value, then how the values combine.
  const std::vector<Item> items = SplitItems(text);

  std::array<bool, kKeyCount> given{};
  std::array<std::size_t, kKeyCount> item_of_key{};
  std::vector<std::size_t> key_of_item(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string_view key = items[i].key;
    const auto spec = std::find_if(kKeys.begin(), kKeys.end(),
                                   [key](const KeySpec& s) { return s.name == key; });
    if (spec == kKeys.end()) UnknownKey(key);
    const auto index = static_cast<std::size_t>(spec - kKeys.begin());
    if (given[index]) {
      throw ConfigError(std::string(key),
                        fmt::format("key '{}' is given twice in allocator configuration '{}' "
                                    "(positions {} and {})",
                                    key, text, item_of_key[index] + 1, i + 1));
    }
    given[index] = true;
    item_of_key[index] = i;
    key_of_item[i] = index;
  }

  for (std::size_t i = 0; i < items.size(); ++i) {
    const KeySpec& spec = kKeys[key_of_item[i]];
    spec.parse(spec.name, items[i].value, conf);
  }

  CheckCombination(conf, given);
  if (const auto& check = PolicyOf(conf).check) check(conf);
  return conf;
}

AllocConf ResolveAllocConf(std::string_view cli, std::string* source) {
  // An empty or all-blank value counts as not given, on the command line and in the environment.
  if (!Trim(cli).empty()) {
    if (source != nullptr) *source = "--alloc-conf";
    return ParseAllocConf(cli);
  }
  const char* env = std::getenv(kAllocConfEnv);
  if (env != nullptr && !Trim(env).empty()) {
    if (source != nullptr) *source = kAllocConfEnv;
    try {
      return ParseAllocConf(env);
    } catch (const ConfigError& e) {
      throw ConfigError(e.key(), fmt::format("{}: {}", kAllocConfEnv, e.what()));
    }
  }
  if (source != nullptr) *source = "defaults";
  return AllocConf{};
}

}  // namespace fragscope
