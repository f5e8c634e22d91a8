// libFuzzer target: the pickle reader and the PyTorch snapshot importer over arbitrary bytes
// (from memory, no files). Built by `fuzz/run.sh pickle_reader`. Anything but a PickleError / TraceError
// escaping, a broken invariant of the imported trace, a sanitizer report, a hang or runaway
// memory is a finding.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "../traces/src/import/pickle_reader.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"
#include "fuzz_check.hpp"

using fragscope::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope::traces;
  const std::span<const std::uint8_t> bytes(data, size);
  try {
    const pickle::Document doc = pickle::ParsePickle(bytes);
    Check(doc.size() <= size);  // at most one value per input byte
    (void)pickle::ToDisplayString(doc, doc.root());
  } catch (const pickle::PickleError& e) {
    Check(e.offset() <= size);
  }
  (void)LooksLikePytorchSnapshot(bytes);
  try {
    const Trace trace = ReadPytorchSnapshot(bytes, "fuzz.pickle");
    Check(trace.event_stacks.empty() || trace.event_stacks.size() == trace.events.size());
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
      const Event& e = trace.events[i];
      Check(e.seq == i);
      Check(e.tag <= trace.tags.size());
      if (!trace.event_stacks.empty()) Check(trace.event_stacks[i] <= trace.stacks.size());
    }
    for (const auto& tag : trace.tags) Check(!tag.empty());
    // A device for every event; a snapshot that lists no device (no segments, no trace list) has none.
    Check(!trace.header.devices.empty() || trace.events.empty());
  } catch (const TraceError& e) {
    Check(e.path() == "fuzz.pickle");
  }
  return 0;
}
