// preset=pytorch's settings in the configuration string, under PyTorch's own names: the values of
// max_split_size_mb, garbage_collection_threshold and roundup_power2_divisions, read and written
// back. config.cpp owns the key table; docs/allocator.md documents each key.
#pragma once

#include <string>
#include <string_view>

#include "fragscope/allocator/config.hpp"

namespace fragscope::pytorch {

// Each throws ConfigError naming `key` and saying what is expected.
void ParseMaxSplitSizeMb(std::string_view key, std::string_view value, PytorchSettings& settings);
void ParseGarbageCollectionThreshold(std::string_view key, std::string_view value, PytorchSettings& settings);
// A power of two for every size ("4"), or PyTorch's list of intervals in MiB ("[256:1,512:2,>:8]").
void ParseRoundupPower2Divisions(std::string_view key, std::string_view value, PytorchSettings& settings);

// The values as ParseX reads them back equal; "" for roundup_power2_divisions when it is off.
std::string FormatMaxSplitSizeMb(const PytorchSettings& settings);
std::string FormatGarbageCollectionThreshold(const PytorchSettings& settings);
std::string FormatRoundupPower2Divisions(const PytorchSettings& settings);

}  // namespace fragscope::pytorch
