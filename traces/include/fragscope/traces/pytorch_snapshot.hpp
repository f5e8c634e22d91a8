// Reads PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot`, a Python pickle) as a
// fragscope trace. The pickle is parsed by fragscope's own reader of the plain-data opcode
// subset; nothing in it is executed. torch >= 2.1 snapshots and the torch 2.0 block-history
// format are read; several devices; expandable segments; oom events. docs/importers.md, section
// "PyTorch memory snapshots", gives the mapping.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

// Reads the snapshot at `path`. Throws TraceError (naming the file, and the byte offset where
// the pickle is malformed) when the file cannot be read or is no snapshot. Inconsistencies
// between the trace and the final state are warnings in Trace::warnings, never silent.
// `limits` caps the events and devices the snapshot describes, memo references counted each time
// they are used (see ReadLimits); more is a TraceError before anything is imported.
Trace ReadPytorchSnapshot(const std::string& path, const ReadLimits& limits = {});
// The same for a snapshot held in memory; `name` stands for the path in messages.
Trace ReadPytorchSnapshot(std::span<const std::uint8_t> bytes, const std::string& name,
                          const ReadLimits& limits = {});

// Content-based detection from the first bytes of a file (64 or more are best): a pickle
// (PROTO opcode 0x80, protocol 2-5) whose top-level dict starts with a snapshot key.
bool LooksLikePytorchSnapshot(std::span<const std::uint8_t> head);

// The segment PyTorch's caching allocator asks the driver for when no cached block fits a request
// of `request` bytes (get_allocation_size in CUDACachingAllocator.cpp): 2 MiB for at most 1 MiB
// (a small-pool segment), 20 MiB below 10 MiB, else the request rounded up to 2 MiB (at most
// kMaxBytes).
std::uint64_t PytorchSegmentSize(std::uint64_t request);

// The cause of a snapshot's oom event from its numbers, by the rule docs/importers.md gives
// ("Out-of-memory events"), with R = numbers.rounded, F = numbers.headroom (the device_free the
// allocator read at the failure), U = reserved - in_use and S = PytorchSegmentSize(R):
// S <= F is unknown (the numbers contradict an out-of-memory: a per-process memory fraction, or a
// refusal that is not about memory); R > F + U is capacity; otherwise fragmentation.
OomCause ClassifySnapshotOom(const OomRecord& numbers);

}  // namespace fragscope::traces
