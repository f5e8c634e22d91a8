// JSON text as a strict parser (nlohmann's) will take it, repaired byte for byte on the fly: the
// flaws real exporters leave in otherwise good files, each replaced by one byte so that every
// offset stays the file's own.
//   - a raw control character (U+0000..U+001F) inside a string (pytorch/pytorch#130622: a tab in an
//     operator name) becomes a space;
//   - a byte that is not part of well-formed UTF-8 inside a string (pytorch/kineto#80: a Latin-1
//     name) becomes '?';
//   - a backslash that starts no valid escape (`\x`, `\u` without four hex digits, a lone UTF-16
//     surrogate) becomes '?';
//   - a comma right before `]` or `}` (a trailing comma) becomes a space.
// Used by the torch.profiler reader (torch_profiler_json.cpp), which needs only some of the events
// and should not lose a whole trace to one bad byte in a name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace fragscope::traces::lenient {

struct Repairs {
  std::uint64_t control = 0;   // raw control characters in strings
  std::uint64_t utf8 = 0;      // bytes that are not well-formed UTF-8 in strings
  std::uint64_t escapes = 0;   // backslashes that start no valid escape
  std::uint64_t commas = 0;    // trailing commas
  std::optional<std::uint64_t> first;  // byte offset of the first repair
  std::uint64_t total() const { return control + utf8 + escapes + commas; }
};

// A single-pass reader of `text` whose iterators (input iterators of char) give the repaired
// bytes; pass begin() and end() to nlohmann::json::sax_parse. One pass only: begin() once.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {
    if (!text_.empty()) Decide();
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = char;

    iterator() = default;
    char operator*() const { return reader_->out_; }
    iterator& operator++() {
      reader_->Advance();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      reader_->Advance();
      return before;
    }
    // Only "at the end or not" is ever asked (nlohmann compares with end()).
    bool operator==(const iterator& other) const { return AtEnd() == other.AtEnd(); }
    bool operator!=(const iterator& other) const { return !(*this == other); }

   private:
    friend class Reader;
    iterator(Reader* reader, bool end) : reader_(reader), end_(end) {}
    bool AtEnd() const { return end_ || reader_ == nullptr || reader_->pos_ >= reader_->text_.size(); }
    Reader* reader_ = nullptr;
    bool end_ = true;
  };

  iterator begin() { return iterator(this, false); }
  iterator end() { return iterator(this, true); }
  const Repairs& repairs() const { return repairs_; }

 private:
  void Advance();
  void Decide();      // out_ for the byte at pos_, entering or leaving strings
  void Repair(std::uint64_t& counter, char replacement);
  std::size_t ValidUtf8(std::size_t at) const;    // length of the well-formed sequence at `at`, 0 if none
  std::size_t ValidEscape(std::size_t at) const;  // length of the valid escape at `at` (a backslash), 0 if none

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t pass_ = 0;  // bytes after pos_ that go through unchanged (the rest of a sequence or escape)
  bool in_string_ = false;
  char out_ = 0;
  Repairs repairs_;
};

}  // namespace fragscope::traces::lenient
