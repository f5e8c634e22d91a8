// The diagnosis of a failed allocation: data first (numbers and a cause), words second. The same
// struct is logged, thrown inside OutOfMemory, written to traces as an `oom` event and printed by
// the command-line tools.
#pragma once

#include <cstdint>
#include <string>

#include "fragscope/traces/event.hpp"

namespace fragscope {

using traces::OomCause;

// Where the free memory of a paging allocator (expandable=on) sits when a request fails. Under
// paging a hole between live chunks costs no memory: its whole pages are unmapped before an OOM is
// declared. What stays stranded is the free part of pages that a live chunk also uses.
struct PageFacts {
  std::uint64_t page_bytes = 0;         // 0: not a paging allocator (the rest is meaningless)
  std::uint64_t stranded_bytes = 0;     // free bytes inside mapped pages that live chunks share
  std::uint64_t partly_used_pages = 0;  // mapped pages that hold a live chunk and free bytes
  std::uint64_t new_pages_needed = 0;   // pages the request must map at its best placement
  bool address_space_exhausted = false; // no free range of the address space is long enough
  bool on() const { return page_bytes != 0; }
};

struct OomReport {
  std::uint32_t device = 0;
  std::uint64_t stream = 0;
  traces::TagId tag = traces::kNoTag;
  traces::OomRecord numbers;   // request, rounded, limit, reserved, in_use, ... and cause
  bool gc_ran = false;         // the slow path released empty regions before giving up
  std::uint64_t gc_released = 0;
  std::string explanation;     // one line, plain words, with the numbers that matter
  std::string suggestion;      // what limit or policy would make it fit
  PageFacts pages;             // paging allocators only (pages.on())

  OomCause cause() const { return numbers.cause; }
  // "out of memory on device 0: fragmentation: <explanation>"
  std::string Summary() const;
  // Several lines: the summary, a table of the numbers, the suggestion.
  std::string Describe() const;
};

// Classifies a failure from its numbers and fills `explanation` and `suggestion`. `backing_refused`
// says that the backing returned no memory for a region that fit below the limit. Used by every
// allocator and by trace analysis, so that a cause means the same everywhere.
// `pages` (optional) says the allocator pages: a fragmentation is then memory stranded in partly
// used pages, or an exhausted address space, and is explained as such.
OomReport DiagnoseOom(std::uint32_t device, const traces::OomRecord& numbers, bool backing_refused,
                      const PageFacts* pages = nullptr);

// What the policy that failed could change for free, as opposed to a higher limit.
struct PolicyFacts {
  bool gc = true;
  bool expandable = false;
  bool backing_can_expand = false;  // the backing grows regions in place (sim, host, vmm)
};

// For a fragmentation OOM, puts the advice that costs nothing before the suggestion of a higher
// limit: gc=on when it was off, else expandable=on where the backing can do it. Used by the
// allocator and by trace analysis, so a recorded OOM gets the same advice as a live one.
void AddPolicyAdvice(OomReport& report, const PolicyFacts& facts);

// The report as one JSON object, the one shape every program prints (fragscope --json,
// fragscope-train --json, the C ABI): device, request, rounded, limit, reserved, in_use,
// live_requested, free_in_regions, largest_free, headroom, chunk_count, region_count, cause,
// explanation, suggestion. Callers add their own context keys to it.
std::string ToJson(const OomReport& report);

// The cause alone: traces::ClassifyOom, the one definition (event.hpp).
using traces::ClassifyOom;

}  // namespace fragscope
