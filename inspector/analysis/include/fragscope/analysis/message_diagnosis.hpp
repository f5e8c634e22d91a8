// The diagnosis of one out-of-memory error message (traces::OomMessage): the numbers it gives,
// what they imply with the arithmetic shown, the cause in fragscope's OOM vocabulary and advice in
// the framework's own terms. Data only: the command line and the inspector print it.
//
// Symbols (docs/importers.md, "Out-of-memory error messages"): R request, T total capacity,
// F free, A allocated by the framework, Rv reserved, U reserved but unallocated (PyTorch's old
// "cached"), P this process's total, O other processes, S the segment PyTorch's caching allocator
// must get from the driver when no cached block fits, outside = T − F − Rv.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fragscope/traces/oom.hpp"
#include "fragscope/traces/oom_message.hpp"

namespace fragscope::analysis {

// One number read from (or derived from) the message.
struct MessageNumber {
  std::string symbol;    // "R", "T", "F", "A", "Rv", "U", "P", "O", "S", "outside", …
  std::string name;      // "requested", "total capacity", …
  std::uint64_t bytes = 0;
  std::string printed;   // as the message prints it; empty for a derived number
};

struct MessageDiagnosis {
  traces::OomCause cause = traces::OomCause::kUnknown;
  std::string explanation;               // one line: the cause in plain words, or why unknown
  std::vector<MessageNumber> numbers;    // read, then derived
  std::vector<std::string> arithmetic;   // "S = 20.00 MiB (1 MiB < R < 10 MiB) > F = 3.56 MiB: …"
  std::vector<std::string> notes;        // what else the numbers show (memory outside, WDDM, near capacity)
  std::vector<std::string> advice;       // in the framework's own terms, only what applies
  std::vector<std::string> fragscope_advice;  // "with fragscope's allocator: …" (second lines)
  bool inconsistent = false;             // the numbers contradict an OOM (the request fits in free)
  bool wddm_spill = false;               // allocated / reserved above the card (Windows shared memory)
  bool host_memory = false;              // pinned host memory, not device memory
  std::optional<std::uint64_t> outside;  // memory held outside this framework's allocator, where known
};

MessageDiagnosis DiagnoseMessage(const traces::OomMessage& message);

// "Tried to allocate" → the segment PyTorch's caching allocator asks the driver for when no cached
// block fits: 2 MiB for R ≤ 1 MiB, 20 MiB below 10 MiB, else R rounded up to 2 MiB.
std::uint64_t PytorchSegmentSize(std::uint64_t request);

}  // namespace fragscope::analysis
