// libFuzzer target: the TensorFlow / XLA BFC OOM log reader over arbitrary text. Parses the bytes,
// maps the dumps to a trace and checks what the reader promises: regions sorted and disjoint,
// chunks inside their regions, totals that add up, one global order of events, tags in range,
// OOM records whose derived fields follow from the others. Built by `fuzz/run.sh tf_log`. Any
// exception, sanitizer report, hang or runaway memory is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "fuzz_check.hpp"
#include "trace_checks.hpp"

using fragscope::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope::traces;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)LooksLikeTfBfcLog(text);
  const std::vector<TfBfcDump> dumps = ParseTfBfcLog(text, "fuzz.log");
  for (const TfBfcDump& d : dumps) {
    std::uint64_t in_use = 0, reserved = 0, chunks_in_regions = 0;
    for (std::size_t i = 0; i < d.chunks.size(); ++i) {
      if (i > 0) Check(d.chunks[i - 1].address + d.chunks[i - 1].size <= d.chunks[i].address ||
                       d.chunks[i - 1].address + d.chunks[i - 1].size < d.chunks[i - 1].address);
      if (d.chunks[i].in_use) in_use += d.chunks[i].size;
    }
    for (std::size_t i = 0; i < d.regions.size(); ++i) {
      const TfBfcRegion& r = d.regions[i];
      if (i > 0) Check(d.regions[i - 1].address <= r.address);
      Check(r.first_chunk + r.chunk_count <= d.chunks.size());
      for (std::size_t c = r.first_chunk; c < r.first_chunk + r.chunk_count; ++c)
        Check(d.chunks[c].address >= r.address);
      chunks_in_regions += r.chunk_count;
      reserved += r.size;
    }
    Check(chunks_in_regions <= d.chunks.size());
    if (!d.chunks.empty()) {
      // What the listing adds up to is kept as listed; where the allocator's own Stats say more
      // (a cut chunk list), those are the dump's numbers and they are never below the listing.
      Check(d.listed_in_use == in_use);
      Check(d.listed_reserved == reserved);
      if (d.from_stats) {
        Check(d.in_use >= in_use);
        Check(d.reserved >= reserved || d.reserved >= d.in_use);
      } else {
        Check(d.in_use == in_use);
        Check(d.reserved == reserved);
      }
      Check(d.in_use_chunks + d.free_chunks == d.chunks.size());
    }
    Check(d.live_requested <= d.in_use || !d.chunks.empty());
    const OomRecord r = d.ToOomRecord();
    Check(r.headroom == (r.limit > r.reserved ? r.limit - r.reserved : 0));
    Check(r.free_in_regions == (r.reserved > r.in_use ? r.reserved - r.in_use : 0));
  }
  const Trace trace = TfBfcDumpsToTrace(dumps, "fuzz.log");
  fragscope::fuzz::CheckEventOrder(trace);
  for (const std::string& tag : trace.tags) Check(!tag.empty());
  return 0;
}
