// Reads TensorFlow / XLA BFC allocator out-of-memory dumps from console logs.
//
// When TensorFlow's (or XLA's, or JAX's) BFC allocator runs out of memory it logs a header
// ("Allocator (GPU_0_bfc) ran out of memory trying to allocate ..."), then, depending on the
// version, the bins, every chunk of every region, a summary, the Stats block and an occupancy bar.
// The format changed across versions; ParseTfBfcLog accepts every era listed in
// docs/importers.md, found anywhere inside a larger log, several dumps per log, and fragments
// (chunk lines without a header). ReadTfBfcLog maps the dumps to a Trace: per dump a marker,
// the regions, an alloc per in-use chunk and an oom event with the allocator state at the OOM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

struct TfBfcChunk {
  std::uint64_t address = 0;
  std::uint64_t size = 0;       // bytes the chunk holds (TF's rounded size)
  std::uint64_t requested = 0;  // client-requested bytes where the log prints them, else 0
  bool in_use = false;
  std::size_t line = 0;         // 1-based line in the log
};

struct TfBfcRegion {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  bool size_printed = false;    // from a "Next region of size N" line (else inferred from chunks)
  std::size_t line = 0;         // 1-based line of that "Next region of size" line, else 0
  std::size_t first_chunk = 0;  // index into TfBfcDump::chunks
  std::size_t chunk_count = 0;
};

// One "Bin (N): Total Chunks: ..." line. Byte counts are printed human-readable (2 decimals).
// TF <= 1.2 counts the free chunks only (every line says "Chunks in use: 0" and "0B in use in
// bin"); later versions every chunk of the bin's size class.
struct TfBfcBin {
  std::uint64_t bin_size = 0;
  std::uint64_t total_chunks = 0;
  std::uint64_t chunks_in_use = 0;
  std::uint64_t bytes_in_bin = 0;      // "X allocated for chunks": approximate
  std::uint64_t bytes_in_use = 0;      // "Y in use in bin": approximate
  std::uint64_t bytes_margin = 0;      // the two are within these many bytes of the truth
  std::uint64_t in_use_margin = 0;
  std::size_t line = 0;
};

// A free chunk of the "Chunk State:" table TF prints after "Bin for N was M" (the free chunks of
// the bin it searched), size as printed ("Size: 6.09GiB | Requested Size: ... | in_use: 0").
struct TfBfcStateChunk {
  std::uint64_t size = 0;
  std::uint64_t margin = 0;            // the size is within this many bytes of the truth
  std::size_t line = 0;
};

// The Stats block: 5 fields (TF 1.x) or 8 (TF 2.x adds Reserved, PeakReserved, LargestFreeBlock).
// Plain bytes, or (XLA 2026) human-readable sizes ("Limit: 89.77GiB").
struct TfBfcStats {
  std::optional<std::uint64_t> limit, in_use, max_in_use, num_allocs, max_alloc_size;
  std::optional<std::uint64_t> reserved, peak_reserved, largest_free_block;
  int fields = 0;
  // A field printed in human-readable units is known to its printed digits only: the truth lies
  // within this many bytes of it (half the last digit, and above KiB one unit below: 0.005 GiB +
  // 1 MiB for "81.00GiB"). 0 when exact.
  // Where the dump gives the same number exactly elsewhere (memory_limit_ in bytes, the listed
  // chunks) the exact one replaces it and its margin is 0.
  std::uint64_t limit_margin = 0, in_use_margin = 0, max_in_use_margin = 0, max_alloc_size_margin = 0;
  std::uint64_t reserved_margin = 0, peak_reserved_margin = 0, largest_free_block_margin = 0;
  bool approximate() const {
    return (limit_margin | in_use_margin | max_in_use_margin | max_alloc_size_margin | reserved_margin |
            peak_reserved_margin | largest_free_block_margin) != 0;
  }
};

// A number the dump cannot be read without that the reader cannot take (a chunk, region or
// Stats size that is negative, does not fit in 64 bits or is above kMaxBytes, a pointer of more
// than 64 bits, regions that add up to more than 4 EiB): the state would be meaningless.
// ParseTfBfcLogToTrace and ReadTfBfcLog throw the first one as a TraceError.
struct TfBfcError {
  std::size_t line = 0;  // 1-based line in the log
  std::string message;   // without the file and line: "chunk size: 9223372036854775808 bytes is ..."
};

struct TfBfcDump {
  // What the log says.
  std::string allocator;             // "GPU_0_bfc"; empty when the dump has no header
  // The dump records an OOM: a "ran out of memory trying to allocate" header was seen, TF 0.x's
  // "Ran out of memory trying to allocate N" after the dump, or (a fragment) a "Bin for N was"
  // line, which TF prints only when it dumps at an OOM.
  bool has_header = false;
  // The OOM came from the OOM line after a fragment ("OOM when allocating tensor", "RESOURCE_EXHAUSTED:
  // failed to allocate memory", XLA's "Out of memory while trying to allocate"), not from a header.
  bool oom_from_line = false;
  std::uint64_t bin_for = 0;         // "Bin for 8.49GiB was 256.00MiB": the first size (0: none)
  std::uint64_t bin_for_bin = 0;     // and the second: the bin the Chunk State table lists
  std::size_t bin_for_line = 0;
  std::vector<TfBfcStateChunk> chunk_state;
  std::size_t line = 0;              // 1-based line where the dump starts
  std::uint64_t time_unix_ns = 0;    // timestamp of that line, 0 when it has none
  std::uint64_t request = 0;         // requested bytes (0 when unknown)
  std::uint64_t rounded = 0;         // rounded bytes (0 when unknown)
  bool request_exact = false;        // false: request from a human-readable size ("286.00MiB")
  std::string op;                    // "requested by op X", or the tensor shape of an OOM line
  std::vector<TfBfcChunk> chunks;    // sorted by address once parsed
  std::vector<TfBfcRegion> regions;  // sorted by address
  std::vector<TfBfcBin> bins;
  TfBfcStats stats;
  // The pool line: "total_region_allocated_bytes_: N memory_limit_: L available bytes: A" (TF 1.15 -
  // 2.12), "Total bytes in pool: N memory_limit_: L available bytes: A" (TF >= 2.13, XLA), "Total
  // size in pool: 89.77GiB memory_limit_: 89.77GiB available size: 153B" (XLA 2026). N is the
  // bytes in regions (reserved), A = L - N.
  std::optional<std::uint64_t> total_region_allocated;
  std::optional<std::uint64_t> memory_limit;
  std::optional<std::uint64_t> available;
  // Where the pool line prints human-readable sizes: within this many bytes of the truth (0: exact).
  std::uint64_t total_region_allocated_margin = 0, memory_limit_margin = 0;
  std::string pool_key;              // how the line names N: "total_region_allocated_bytes_", ...
  // "Summary of in-use Chunks by size": its "N Chunks of size S totalling X" lines (Σ N, Σ N × S:
  // exact) and its "Sum Total of in-use chunks: X" (2 decimals, within summary_total_margin).
  // A paste of these lines alone is a fragment: in use at least the sum, no layout.
  std::size_t summary_lines = 0;
  std::uint64_t summary_chunks = 0;
  std::uint64_t summary_in_use = 0;
  std::optional<std::uint64_t> summary_total;
  std::uint64_t summary_total_margin = 0;
  std::string occupancy;             // the 100-character bar ('_' free, '*' in use, 'x' padding)
  std::vector<std::string> warnings; // "name:LINE: ..." every disagreement and every gap
  std::vector<TfBfcError> errors;    // what the reader could not take; the line is left out

  // The allocator state at the OOM, computed from the above (see docs/importers.md).
  std::uint64_t limit = 0;           // Stats Limit, memory_limit_, else reserved; 0 when unknown
  std::uint64_t reserved = 0;        // sum of region sizes
  std::uint64_t in_use = 0;          // sum of in-use chunk sizes
  std::uint64_t live_requested = 0;  // sum of requested (or chunk) sizes of in-use chunks
  // Some in-use chunk gave its requested size. When none did (most TensorFlow versions print only
  // chunk sizes), live_requested is the chunks' sizes, and the OomRecord leaves it out.
  bool requested_listed = false;
  std::uint64_t free_in_regions = 0; // reserved - in_use
  std::uint64_t largest_free = 0;    // largest free chunk
  std::uint64_t in_use_chunks = 0;
  std::uint64_t free_chunks = 0;
  // What the listed chunks and regions add up to. When they hold less than the Stats block (or
  // total_region_allocated_bytes_) counts, the chunk list was cut: in_use, reserved,
  // free_in_regions, largest_free and live_requested above come from the Stats block instead
  // (`from_stats`), and a warning says so (docs/importers.md).
  std::uint64_t listed_in_use = 0;
  std::uint64_t listed_reserved = 0;
  bool from_stats = false;
  // A cut list without a printed reserved count: `reserved` is a lower bound (what is in use and
  // the free chunks shown), so reserved_known is false and the OOM's reserved, free in regions and
  // headroom are left out.
  bool reserved_at_least = false;
  // Chunks the bin lines and the Chunk State table count that the chunk list lacks (by size
  // class), and their bytes as those lines print them (lower bounds: a chunk of bin N holds more
  // than N / 2 bytes in every era), within `unlisted_margin` of the truth; the bytes are exact where they fill the
  // part of a printed region that no listed chunk covers. unlisted_largest_free: the largest free
  // chunk the Chunk State table shows that the list lacks (0: none).
  std::uint64_t unlisted_free_chunks = 0, unlisted_free_bytes = 0;
  std::uint64_t unlisted_in_use_chunks = 0, unlisted_in_use_bytes = 0;
  std::uint64_t unlisted_margin = 0;
  std::uint64_t unlisted_largest_free = 0;
  std::uint64_t listed_free = 0;     // the free chunks listed
  // Which of the numbers above the dump gives rather than assumes (the OomRecord leaves the others
  // out: null in JSON, not 0). reserved: it lists regions or prints a reserved count (else
  // `reserved` is a bound or the limit, an assumption). in_use: chunks, Stats InUse, the summary
  // by size or the bin lines give it, or the bar over known reserved bytes. largest_free: a free
  // chunk it shows, Stats LargestFreeBlock, a whole chunk list, or the bar over known reserved bytes.
  bool reserved_known = true, in_use_known = true, largest_free_known = true;
  bool host_memory = false;          // a pinned host allocator (cuda_host_bfc, gpu_host_bfc, ...)
  OomCause cause = OomCause::kCapacity;
  bool cause_known = false;          // false for fragments and header-only dumps without numbers

  OomRecord ToOomRecord() const;
};

// Device index of an allocator name: "GPU_3_bfc" -> 3; nullopt for others ("gpu_host_bfc").
std::optional<std::uint32_t> TfAllocatorDevice(std::string_view allocator);

// Whether an allocator name is one of TensorFlow's pinned (page-locked) host memory allocators:
// "cuda_host_bfc", "gpu_host_bfc", "GPU_0_host_bfc", "pinned..." (any case).
bool TfHostAllocator(std::string_view allocator);

// Every dump in `text` (a whole log); `name` prefixes warnings. Never throws on odd text: a line
// it cannot take is a warning, or an error in the dump's `errors` (see TfBfcError) that callers
// must check (ParseTfBfcLogToTrace and ReadTfBfcLog do).
std::vector<TfBfcDump> ParseTfBfcLog(std::string_view text, const std::string& name);

// The dumps as a trace (see docs/importers.md, "TensorFlow / XLA BFC OOM logs"). Never throws;
// a dump's errors become warnings ("name:LINE: error: ...") beside what could be taken: call
// ParseTfBfcLogToTrace to refuse them.
Trace TfBfcDumpsToTrace(const std::vector<TfBfcDump>& dumps, const std::string& name);

// The source allocator of a trace read from a JAX log (SourceFacts::allocator): XLA's BFC
// allocator, whose limit JAX sets (XLA_PYTHON_CLIENT_MEM_FRACTION), so the advice is JAX's.
inline constexpr std::string_view kJaxBfcAllocator = "XLA BFC allocator (JAX)";

// Whether a log is JAX's: it holds jaxlib's exception or module paths (a dump followed by
// "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: ...").
bool IsJaxLog(std::string_view text);

// A whole log's text as a trace: ParseTfBfcLog, then TfBfcDumpsToTrace; from a JAX log
// (IsJaxLog), producer "XLA BFC allocator log (JAX)" and source allocator kJaxBfcAllocator. Throws TraceError when
// the text holds no dump, or when a dump has an error (the first one, naming its line: "NAME: at
// byte B: line N: chunk address 0x12345678901234567890 does not fit in 64 bits"). Readers of
// text in memory (standard input) call this one; `name` stands for the path in messages.
Trace ParseTfBfcLogToTrace(std::string_view text, const std::string& name);

// Reads the log at `path`: ParseTfBfcLogToTrace of its text. Throws TraceError also when the file
// cannot be read.
Trace ReadTfBfcLog(const std::string& path);

// Whether the start of a file (pass 64 KiB or more) looks like a TF/XLA BFC log.
bool LooksLikeTfBfcLog(std::string_view head);

}  // namespace fragscope::traces
