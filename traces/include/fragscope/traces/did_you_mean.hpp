// "did you mean": the closest of a few known words to a misspelt one (an allocator configuration
// key, a command name).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace fragscope::traces {

// Levenshtein distance, ignoring ASCII case. Quadratic: for short words.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate nearest to `word` if it is a plausible misspelling of it (one edit for a word of up
// to 3 characters, two otherwise); empty if none is. Ties go to the first candidate.
std::string_view DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace fragscope::traces
