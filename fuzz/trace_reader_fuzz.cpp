// libFuzzer target: TraceReader over arbitrary bytes (from memory, no files), every block read,
// then the same bytes streamed to JSON Lines. Built by fuzz/run.sh with FRAGSCOPE_FUZZING, which
// makes the reader compute checksums without enforcing them, so that mutated inputs reach the
// decoder. Anything but a TraceError escaping, a sanitizer report, a hang or runaway memory is a
// finding.
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <span>
#include <streambuf>
#include <vector>

#include "fragscope/traces/jsonl.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fuzz_check.hpp"

namespace {

// An ostream that counts bytes and keeps none.
class NullBuffer final : public std::streambuf {
 protected:
  int overflow(int c) override { return c == traits_type::eof() ? 0 : c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

}  // namespace

using fragscope::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope::traces;
  const std::span<const std::uint8_t> bytes(data, size);
  try {
    TraceReader reader(bytes, "fuzz.fst");
    std::vector<Event> events;
    std::uint64_t previous_offset = reader.offset();
    while (reader.NextBlock(&events)) {
      Check(!events.empty());
      for (const Event& e : events) {
        Check(e.type >= EventType::kAlloc && e.type <= EventType::kMarker);
        Check(e.tag <= reader.tags().size());
        (void)reader.TagName(e.tag);
      }
      Check(reader.offset() > previous_offset && reader.offset() <= reader.file_size());
      previous_offset = reader.offset();
    }
    Check(reader.offset() <= reader.file_size());
    for (const auto& tag : reader.tags()) Check(!tag.empty());

    TraceReader again(bytes, "fuzz.fst");
    NullBuffer null;
    std::ostream out(&null);
    WriteJsonl(again, out);
  } catch (const TraceError& e) {
    Check(e.path() == "fuzz.fst");
  }
  return 0;
}
