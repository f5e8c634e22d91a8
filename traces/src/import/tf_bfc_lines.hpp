// Internal to the TensorFlow BFC log reader: parsers of single dump lines, which know nothing of
// the dump the line belongs to (tf_bfc_parse.cpp's scanner groups the lines into dumps).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "tf_text.hpp"

namespace fragscope::traces::tfline {

enum class Unit { kSize, kCount };

// Why a scanned number cannot be taken as a byte count (above kMaxBytes too) or a count, or ""
// when it can.
std::string NumberProblem(const tftext::ScannedNumber& n, Unit unit = Unit::kSize);

// A byte count as a dump line prints it: plain bytes ("40231108608"), or a human-readable size
// ("89.77GiB", "153B": XLA 2026 prints its Stats block and pool line so), whose margin says how
// near the truth it is.
tftext::ScannedNumber ScanBytes(std::string_view& s);

// Bytes per element of a TensorFlow dtype name as the OOM line prints it ("float", "half", ...);
// 0 when unknown.
std::uint64_t DtypeBytes(std::string_view type);

// The bytes of a tensor of shape `dims` ("1,330,330,64,1"; "" is a scalar) and `type` ("float";
// "" when the line prints none), or nullopt and `problem` ("a negative dimension (-1)", "its size
// in bytes is unknown", "more than 2^64 bytes", above 4 EiB).
std::optional<std::uint64_t> TensorBytes(std::string_view dims, std::string_view type, std::string& problem);

// "Bin (256): \tTotal Chunks: 1, Chunks in use: 0. 256B allocated for chunks. 0B in use in bin. ...":
// false when the line is no bin line; else `bin` (its line left 0) and, when a number cannot be
// taken, `problem` ("bin size -512 is negative, not a size").
bool ParseBinLine(std::string_view text, TfBfcBin& bin, std::string& problem);

// A line of the "Chunk State:" table TF prints after "Bin for": "Size: 6.09GiB | Requested Size:
// 781.2KiB | in_use: 0[ | bin_num: 20], prev: Size: ..., next: ...". False when the line has no
// such entry; else `chunk` is the free chunk it names (its line left 0), or empty when the entry
// is in use (never in this table) or its size cannot be taken (a cross-check, left out).
bool ParseChunkStateLine(std::string_view text, std::optional<TfBfcStateChunk>& chunk);

// "7499 Chunks of size 2048 totalling 14.65MiB" (TF's "Summary of in-use Chunks by size"; after
// a log prefix, a "> " quote, anything): false when the line is none; else the count and the
// size, or `problem` when one of them cannot be taken or their product is above 4 EiB.
bool ParseSizeSummaryLine(std::string_view text, std::uint64_t& count, std::uint64_t& size, std::string& problem);

// "Sum Total of in-use chunks: 6.66GiB": false when the line is none; else the size as printed
// (kind kValue) or what stands there.
bool ParseSumTotalLine(std::string_view text, tftext::ScannedNumber& total);

// The line TensorFlow, XLA or PJRT prints when an allocation fails, right after the BFC dump
// (tf_bfc_oom_line.cpp). The request it gives, if any, is in the fields below its kind.
enum class OomLineKind {
  // "OOM when allocating tensor with shape[8,1000] and type float … by allocator GPU_0_bfc", and
  // "… tensor of shape [32256512,512] and type float" (TF's MakeTensorFromProto): dims × type size.
  kTensorShape,
  kXlaBytes,     // "Out of memory while trying to allocate 2110783616 bytes." (XLA, JAX)
  kPjrtRequest,  // "Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0" (PJRT)
  // "RESOURCE_EXHAUSTED: failed to allocate memory" (TF >= 2.10's op_kernel line after the dump),
  // "ResourceExhaustedError: failed to allocate memory [Op:Mul]" (its Python exception): no size.
  kNoSize,
};

struct OomLine {
  OomLineKind kind = OomLineKind::kNoSize;
  std::string_view wording;       // the words that name the line in warnings
  bool has_shape = false;         // kTensorShape: a "[…]" shape follows (TF 0.x prints "shapedim {…}")
  std::string_view dims, type;    // between the brackets; the type ("" when not printed)
  tftext::ScannedNumber bytes;    // kXlaBytes, kPjrtRequest: the exact bytes (kNone when not printed)
  std::string_view allocator;     // "by allocator GPU_0_bfc" ("" when not printed)
};

// The OOM line in `text`, or nullopt when it is none.
std::optional<OomLine> ParseOomLine(std::string_view text);

}  // namespace fragscope::traces::tfline
