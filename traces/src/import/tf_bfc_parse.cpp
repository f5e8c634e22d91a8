// Line scanner for TensorFlow / XLA BFC allocator OOM dumps: finds the dump lines of every format
// era anywhere in a log and collects them per dump. tf_bfc_state.cpp turns a dump's lines into the
// allocator state. No regex: each line is searched for a few fixed keywords.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "tf_bfc_internal.hpp"
#include "tf_bfc_lines.hpp"
#include "tf_text.hpp"

namespace fragscope::traces {
namespace {

using namespace tftext;

constexpr std::string_view kHeader = "ran out of memory trying to allocate ";
constexpr std::string_view kOomAfterDump = "Ran out of memory trying to allocate ";  // TF 0.x
constexpr std::string_view kNotFailure = "caller indicates that this is not a failure";

bool HasContent(const TfBfcDump& d) {
  return !d.chunks.empty() || !d.bins.empty() || !d.regions.empty() || d.stats.fields > 0 ||
         !d.occupancy.empty() || d.total_region_allocated.has_value() || d.memory_limit.has_value() ||
         !d.errors.empty() || d.bin_for != 0 || d.summary_lines > 0 || d.summary_total.has_value();
}

using tfline::NumberProblem;
using tfline::ScanBytes;
using tfline::Unit;

class Scanner {
 public:
  explicit Scanner(const std::string& name) : name_(name) {}

  void Line(std::string_view text, std::size_t line) {
    line_ = line;
    if (text.find(kHeader) != std::string_view::npos) return Header(text);
    if (auto p = text.find(kOomAfterDump); p != std::string_view::npos)
      return OomAfterDump(text, text.substr(p + kOomAfterDump.size()));
    if (auto p = text.find("Bin for "); p != std::string_view::npos && text.find(" was ", p) != std::string_view::npos)
      return BinFor(text.substr(p + 8));
    if (ChunkStateLine(text)) return;
    if (auto p = text.find("BFCAllocator dump for "); p != std::string_view::npos)
      return DumpFor(Trim(text.substr(p + 22)));
    if (text.find("allocation summary follows") != std::string_view::npos) return;
    if (ChunkLine(text)) return;
    if (BinLine(text)) return;
    if (SizeSummaryLine(text)) return;
    if (SumTotalLine(text)) return;
    if (auto p = text.find("Next region of size "); p != std::string_view::npos) {
      std::string_view rest = text.substr(p + 20);
      TfBfcDump& d = Open(false);
      if (auto size = TakeSize(d, ScanUint(rest), "region size (\"Next region of size\")")) {
        TfBfcRegion region;
        region.size = *size;
        region.size_printed = true;
        region.line = line_;
        region.first_chunk = d.chunks.size();
        d.regions.push_back(region);
      }
      return;
    }
    if (StatsLine(text)) return;
    for (std::string_view key : {std::string_view("total_region_allocated_bytes_:"),
                                 std::string_view("Total bytes in pool:"), std::string_view("Total size in pool:")})
      if (auto p = text.find(key); p != std::string_view::npos) return PoolLine(text.substr(p + key.size()), key);
    if (const std::optional<tfline::OomLine> oom = tfline::ParseOomLine(text)) return TakeOomLine(text, *oom);
    BarLine(text);
  }

  std::vector<TfBfcDump> Finish() {
    std::vector<TfBfcDump> out;
    for (std::size_t i = 0; i < dumps_.size(); ++i) {
      TfBfcDump& d = dumps_[i];
      if (!HasContent(d) && not_failure_[i]) continue;  // a warning line, not a dump
      FinalizeTfBfcDump(d, name_);
      out.push_back(std::move(d));
    }
    return out;
  }

 private:
  TfBfcDump* Current() { return dumps_.empty() ? nullptr : &dumps_.back(); }

  // A line's problem that leaves something out of the dump.
  void Warn(TfBfcDump& d, const std::string& message) {
    d.warnings.push_back(fmt::format("{}:{}: {}", name_, line_, message));
  }
  // A line's problem that makes the dump meaningless (ReadTfBfcLog refuses the log).
  void Error(TfBfcDump& d, std::string message) { d.errors.push_back({line_, std::move(message)}); }

  // The size a dump line prints for `what`: nullopt and an error when it is negative, does not fit
  // in 64 bits or is above kMaxBytes (or a count that is negative or too long); nullopt and a
  // warning when no number stands there.
  std::optional<std::uint64_t> TakeSize(TfBfcDump& d, const ScannedNumber& n, std::string_view what,
                                        Unit unit = Unit::kSize) {
    if (n.kind == NumberKind::kNone) {
      Warn(d, fmt::format("{} is not followed by a number: left out", what));
      return std::nullopt;
    }
    if (const std::string problem = NumberProblem(n, unit); !problem.empty()) {
      Error(d, fmt::format("{}: {}", what, problem));
      return std::nullopt;
    }
    return n.value;
  }

  TfBfcDump& NewDump() {
    dumps_.emplace_back();
    not_failure_.push_back(false);
    addresses_.clear();
    summary_sizes_.clear();
    shapes_warned_.clear();
    in_stats_ = false;
    complete_ = false;
    TfBfcDump& d = dumps_.back();
    d.line = line_;
    return d;
  }

  // The dump that the current line belongs to; a new headerless one when there is none or the
  // current one is complete (its occupancy bar was printed) and `fresh_ok` is false.
  TfBfcDump& Open(bool stats_line) {
    TfBfcDump* d = Current();
    if (d == nullptr || (complete_ && !stats_line)) return NewDump();
    return *d;
  }

  void Header(std::string_view text) {
    TfBfcDump* cur = Current();
    if (cur != nullptr && cur->has_header && !HasContent(*cur)) {
      // The previous header got no dump (e.g. TF's "not a failure" warning): replace it.
      dumps_.pop_back();
      not_failure_.pop_back();
    }
    TfBfcDump& d = NewDump();
    d.has_header = true;
    if (auto t = ParseLogTimestamp(text)) d.time_unix_ns = *t;
    not_failure_.back() = text.find(kNotFailure) != std::string_view::npos;
    if (auto p = text.find("Allocator ("); p != std::string_view::npos) {
      const std::string_view rest = text.substr(p + 11);
      if (auto q = rest.find(')'); q != std::string_view::npos) d.allocator = std::string(rest.substr(0, q));
    }
    TakeRequest(d, text.substr(text.find(kHeader) + kHeader.size()));
  }

  // TF 0.x prints "Ran out of memory trying to allocate 29.91MiB.  See logs for memory state."
  // after its dump (which has no header of its own): the OOM of the dump just printed, until the
  // next dump starts. With no such dump it is an OOM with nothing else (a header-only dump).
  void OomAfterDump(std::string_view text, std::string_view rest) {
    TfBfcDump* cur = Current();
    TfBfcDump& d = cur != nullptr && !cur->has_header && HasContent(*cur) ? *cur : NewDump();
    d.has_header = true;
    if (d.time_unix_ns == 0)
      if (auto t = ParseLogTimestamp(text)) d.time_unix_ns = *t;
    TakeRequest(d, rest);
    complete_ = true;  // what follows is another dump
  }

  // "Bin for 8.49GiB was 256.00MiB, Chunk State:": TF searched its bins for that (rounded) size;
  // the request of a fragment whose "ran out of memory" line was lost.
  void BinFor(std::string_view rest) {
    const ScannedNumber size = ScanHumanBytes(rest);
    if (size.kind != NumberKind::kValue || !IsRepresentableSize(size.value) || size.value == 0) return;
    TfBfcDump& d = Open(false);
    if (d.bin_for != 0) return;
    d.bin_for = size.value;
    d.bin_for_line = line_;
    if (auto p = rest.find(" was "); p != std::string_view::npos) {
      std::string_view r = rest.substr(p + 5);
      if (const ScannedNumber bin = ScanHumanBytes(r); bin.kind == NumberKind::kValue && IsRepresentableSize(bin.value))
        d.bin_for_bin = bin.value;
    }
  }

  // A line of the "Chunk State:" table after "Bin for" (tfline::ParseChunkStateLine): a free chunk
  // of the bin TF searched. Only right after "Bin for", before any chunk.
  bool ChunkStateLine(std::string_view text) {
    TfBfcDump* d = Current();
    if (d == nullptr || d->bin_for == 0 || !d->chunks.empty() || !d->regions.empty() || complete_) return false;
    std::optional<TfBfcStateChunk> chunk;
    if (!tfline::ParseChunkStateLine(text, chunk)) return false;
    if (chunk) {
      chunk->line = line_;
      d->chunk_state.push_back(*chunk);
    }
    return true;
  }

  // "7499 Chunks of size 2048 totalling 14.65MiB": TF's summary of the in-use chunks by size, alone
  // a fragment of a dump (a paste of just these lines). A size listed twice starts another dump.
  bool SizeSummaryLine(std::string_view text) {
    std::uint64_t count = 0, size = 0;
    std::string problem;
    if (!tfline::ParseSizeSummaryLine(text, count, size, problem)) return false;
    TfBfcDump* cur = Current();
    TfBfcDump& d = cur != nullptr && !complete_ && problem.empty() && summary_sizes_.count(size) != 0
                       ? NewDump()
                       : Open(false);
    if (!problem.empty()) {
      Warn(d, fmt::format("a \"Chunks of size\" summary line: {}: left out", problem));
      return true;
    }
    summary_sizes_.insert(size);
    ++d.summary_lines;
    d.summary_chunks = CheckedAdd(d.summary_chunks, count).value_or(UINT64_MAX);
    // Each line is at most 4 EiB; their sum is checked where the dump is finalized.
    d.summary_in_use = CheckedAdd(d.summary_in_use, count * size).value_or(UINT64_MAX);
    return true;
  }

  // "Sum Total of in-use chunks: 6.66GiB" (2 decimals): the summary's own total.
  bool SumTotalLine(std::string_view text) {
    ScannedNumber total;
    if (!tfline::ParseSumTotalLine(text, total)) return false;
    TfBfcDump& d = Open(false);
    if (total.kind == NumberKind::kValue && IsRepresentableSize(total.value)) {
      d.summary_total = total.value;
      d.summary_total_margin = total.margin;
    } else {
      Warn(d, fmt::format("\"Sum Total of in-use chunks\": {}: left out", NumberProblem(total)));
    }
    return true;
  }

  // The request a header (or TF 0.x's line after the dump) prints after "trying to allocate ".
  void TakeRequest(TfBfcDump& d, std::string_view rest) {
    const ScannedNumber request = ScanHumanBytes(rest);
    if (request.kind == NumberKind::kValue) {
      d.request = request.value;
    } else if (request.kind == NumberKind::kTooLong) {
      d.request = UINT64_MAX;  // at least; reported below
    } else {
      Warn(d, fmt::format("the request after \"trying to allocate\"{}: the request is unknown",
                          request.kind == NumberKind::kNegative
                              ? fmt::format(" is {}, negative, not a size", request.text)
                              : std::string(" is not a size")));
    }
    if (auto p = rest.find("(rounded to "); p != std::string_view::npos) {
      std::string_view r = rest.substr(p + 12);
      const ScannedNumber rounded = ScanUint(r);
      if (rounded.kind == NumberKind::kValue)
        d.rounded = rounded.value;
      else
        Warn(d, fmt::format("the rounded size (\"rounded to\"): {}: left out (the request rounded up "
                            "to 256 B stands for it)",
                            NumberProblem(rounded)));
    }
    if (auto p = rest.find("requested by op"); p != std::string_view::npos)
      d.op = std::string(Trim(rest.substr(p + 15)));
    // A whole number of bytes below 1 KiB is printed exactly ("768B").
    d.request_exact = d.request < 1024 && d.request > 0;
    // "740.8KiB (rounded to 758528)": the printed size rounds up past the exact rounded one, and
    // no request exceeds its rounded size.
    if (!d.request_exact && d.rounded > 0 && d.request > d.rounded) d.request = d.rounded;
    // TF prints a negative or overflowed size as such ("16.00EiB (rounded to 18446744073709551360)"):
    // no device holds it, whatever the limit; the OOM is kept, as request-too-large.
    if (request.kind == NumberKind::kTooLong || !IsRepresentableSize(d.request) ||
        !IsRepresentableSize(d.rounded))
      Warn(d, fmt::format("the request ({}{}) is more than 4 EiB ({} bytes), the largest size fragscope "
                          "represents: kept as {} bytes, an OOM of cause request-too-large (a size "
                          "this large is almost always a negative or overflowed size in the program)",
                          request.kind == NumberKind::kTooLong
                              ? fmt::format("{}, which does not fit in 64 bits", request.text)
                              : std::string(request.text.empty() ? "not readable" : request.text),
                          d.rounded > 0 ? fmt::format(", rounded to {}", d.rounded) : std::string(),
                          kMaxBytes, d.request));
  }

  void DumpFor(std::string_view allocator) {
    TfBfcDump* cur = Current();
    if (cur == nullptr || complete_ || !cur->chunks.empty() || !cur->bins.empty() ||
        (!cur->allocator.empty() && cur->allocator != allocator)) {
      NewDump().allocator = std::string(allocator);
      return;
    }
    if (cur->allocator.empty()) cur->allocator = std::string(allocator);
  }

  // "total_region_allocated_bytes_: N memory_limit_: L available bytes: A" and its later
  // spellings (`key`, without the colon, names the first number in messages).
  void PoolLine(std::string_view rest, std::string_view key) {
    TfBfcDump& d = Open(false);
    key.remove_suffix(1);
    const ScannedNumber total = ScanBytes(rest);
    d.total_region_allocated = TakeSize(d, total, key);
    d.total_region_allocated_margin = total.margin;
    d.pool_key = std::string(key);
    if (auto q = rest.find("memory_limit_:"); q != std::string_view::npos) {
      rest.remove_prefix(q + 14);
      const ScannedNumber limit = ScanBytes(rest);
      d.memory_limit = TakeSize(d, limit, "memory_limit_");
      d.memory_limit_margin = limit.margin;
    }
    for (std::string_view available : {std::string_view("available bytes:"), std::string_view("available size:")}) {
      if (auto q = rest.find(available); q != std::string_view::npos) {
        std::string_view r = rest.substr(q + available.size());
        // A cross-check only (memory_limit_ - the pool total): a number it cannot take is left out.
        const ScannedNumber n = ScanBytes(r);
        if (n.kind == NumberKind::kValue && n.margin == 0 && IsRepresentableSize(n.value)) d.available = n.value;
      }
    }
  }

  bool ChunkLine(std::string_view text) {
    bool in_use = true;
    std::size_t p = text.find("InUse at ");
    std::size_t skip = 9;
    if (p == std::string_view::npos) {
      p = text.find("Chunk at ");
    }
    if (p == std::string_view::npos) {
      p = text.find("Free ");
      if (p == std::string_view::npos) return false;
      std::size_t q = p + 5;
      while (q < text.size() && text[q] == ' ') ++q;
      if (text.substr(q, 3) != "at ") return false;
      skip = q + 3 - p;
      in_use = false;
    }
    std::string_view rest = text.substr(p + skip);
    const ScannedNumber address = ScanHex(rest);
    const std::size_t of_size = rest.find("of size ");
    // "Free at last": not a chunk line. A line with "of size" is one, whatever its numbers.
    if (of_size == std::string_view::npos) return false;
    if (address.kind != NumberKind::kValue) {
      if (address.kind == NumberKind::kTooLong)
        Error(Open(false), fmt::format("chunk address {} does not fit in 64 bits", address.text));
      else
        Warn(Open(false), "a chunk line whose address is not hexadecimal: left out");
      return true;
    }
    std::string_view r = rest.substr(of_size + 8);
    const ScannedNumber size = ScanUint(r);
    TfBfcChunk chunk;
    chunk.address = address.value;
    chunk.in_use = in_use;
    chunk.line = line_;
    {
      TfBfcDump& d = Open(false);
      const auto value = TakeSize(d, size, fmt::format("the size of the chunk at {}", address.text));
      if (!value) return true;
      if (!CheckedAdd(chunk.address, *value)) {
        Error(d, fmt::format("the chunk at {} of {} bytes runs past the end of the 64-bit address space",
                             address.text, *value));
        return true;
      }
      chunk.size = *value;
    }
    TfBfcDump* cur = Current();
    if (cur == nullptr || complete_ || addresses_.count(chunk.address) != 0) cur = &NewDump();
    for (std::string_view key : {std::string_view("requested size "), std::string_view("requested_size ")}) {
      if (auto q = rest.find(key); q != std::string_view::npos) {
        std::string_view rr = rest.substr(q + key.size());
        const ScannedNumber req = ScanUint(rr);
        std::string problem = NumberProblem(req);
        if (problem.empty() && req.value > chunk.size)
          problem = fmt::format("{} is more than the chunk's {} bytes", req.value, chunk.size);
        if (problem.empty())
          chunk.requested = req.value;
        else
          Warn(*cur, fmt::format("the requested size of the chunk at {}: {}: left out (the chunk size "
                                 "stands for it)",
                                 address.text, problem));
      }
    }
    addresses_.insert(chunk.address);
    cur->chunks.push_back(chunk);
    return true;
  }

  bool BinLine(std::string_view text) {
    TfBfcBin bin;
    std::string problem;
    if (!tfline::ParseBinLine(text, bin, problem)) return false;
    bin.line = line_;
    TfBfcDump& d = Open(false);
    if (!problem.empty()) {
      Warn(d, fmt::format("bin line: {}: left out", problem));
      return true;
    }
    // A second "Bin (256)" in one dump means a new dump whose header was lost.
    for (const TfBfcBin& b : d.bins) {
      if (b.bin_size == bin.bin_size) {
        NewDump().bins.push_back(bin);
        return true;
      }
    }
    d.bins.push_back(bin);
    return true;
  }

  bool StatsLine(std::string_view text) {
    const std::string_view t = Trim(text);
    if (t.size() >= 6 && t.substr(t.size() - 6) == "Stats:") {
      Open(false);
      in_stats_ = true;
      return true;
    }
    if (!in_stats_) return false;
    static constexpr std::pair<std::string_view, int> kKeys[] = {
        {"Limit:", 0},    {"InUse:", 1},    {"MaxInUse:", 2},     {"NumAllocs:", 3},
        {"MaxAllocSize:", 4}, {"Reserved:", 5}, {"PeakReserved:", 6}, {"LargestFreeBlock:", 7}};
    for (const auto& [key, index] : kKeys) {
      if (!StartsWith(t, key)) continue;
      std::string_view rest = t.substr(key.size());
      TfBfcDump& d = dumps_.back();
      // Bytes, or (XLA 2026) a human-readable size, "89.77GiB"; NumAllocs is a count.
      const ScannedNumber n = index == 3 ? ScanUint(rest) : ScanBytes(rest);
      const auto value = TakeSize(d, n, fmt::format("Stats {}", key.substr(0, key.size() - 1)),
                                  index == 3 ? Unit::kCount : Unit::kSize);
      if (!value) return true;
      TfBfcStats& s = d.stats;
      std::optional<std::uint64_t>* fields[] = {&s.limit,    &s.in_use,        &s.max_in_use,
                                                &s.num_allocs, &s.max_alloc_size, &s.reserved,
                                                &s.peak_reserved, &s.largest_free_block};
      std::uint64_t* margins[] = {&s.limit_margin,    &s.in_use_margin,   &s.max_in_use_margin,
                                  nullptr,            &s.max_alloc_size_margin, &s.reserved_margin,
                                  &s.peak_reserved_margin, &s.largest_free_block_margin};
      if (!fields[index]->has_value()) ++s.fields;
      *fields[index] = *value;
      if (margins[index] != nullptr) *margins[index] = n.margin;
      return true;
    }
    if (!t.empty()) in_stats_ = false;
    return false;
  }

  // An OOM line of TensorFlow, XLA or PJRT (tfline::ParseOomLine): the OOM of a header-less
  // fragment just printed (OomLineAfterFragment), and the exact request where the line gives one.
  void TakeOomLine(std::string_view text, const tfline::OomLine& oom) {
    OomLineAfterFragment(text, oom);
    switch (oom.kind) {
      case tfline::OomLineKind::kTensorShape:
        if (oom.has_shape) ShapeLine(oom.dims, oom.type);
        return;
      case tfline::OomLineKind::kXlaBytes:
      case tfline::OomLineKind::kPjrtRequest: {
        if (oom.bytes.kind == NumberKind::kNone) return;  // "2.99GiB" without its exact bytes
        const std::string_view what = oom.kind == tfline::OomLineKind::kXlaBytes
                                          ? "XLA's \"Out of memory while trying to allocate N bytes\""
                                          : "PJRT's \"Failed to allocate request for X (NB)\"";
        if (const std::string problem = NumberProblem(oom.bytes); !problem.empty()) {
          TfBfcDump* d = Current();
          if (d != nullptr && d->has_header) Warn(*d, fmt::format("{}: {}: not taken as the request", what, problem));
          return;
        }
        ExactRequest(oom.bytes.value, what);
        return;
      }
      case tfline::OomLineKind::kNoSize:
        return;
    }
  }

  // TensorFlow logs its OOM line ("OP_REQUIRES failed … OOM when allocating tensor with shape[…] …
  // by allocator GPU_0_bfc", "RESOURCE_EXHAUSTED: failed to allocate memory"; XLA's "Out of memory
  // while trying to allocate N bytes") right after its dump. A fragment of a dump whose header was
  // lost (the Stats block and the bar pasted alone) followed by it: the line is that dump's OOM, as
  // TF 0.x's "Ran out of memory" after its dump (OomAfterDump); the request is what the line gives.
  void OomLineAfterFragment(std::string_view text, const tfline::OomLine& oom) {
    TfBfcDump* d = Current();
    if (d == nullptr || d->has_header || !HasContent(*d)) return;
    if (!oom.allocator.empty() && !d->allocator.empty() && d->allocator != oom.allocator) return;  // another allocator's
    d->has_header = true;
    d->oom_from_line = true;
    if (d->allocator.empty()) d->allocator = std::string(oom.allocator);
    if (d->time_unix_ns == 0)
      if (auto t = ParseLogTimestamp(text)) d->time_unix_ns = *t;
    const bool sized = oom.kind == tfline::OomLineKind::kTensorShape ? oom.has_shape : oom.bytes.kind == NumberKind::kValue;
    Warn(*d, fmt::format("no \"ran out of memory\" header: the OOM line after the dump (\"{}\") is its OOM{}",
                         oom.wording,
                         !sized ? "; the line gives no size: the request is unknown"
                         : oom.kind == tfline::OomLineKind::kTensorShape ? ", and its tensor shape the request"
                                                                          : ", and its byte count the request"));
    complete_ = true;  // what follows is another dump
  }

  // The tensor shape of an OOM line ("[8,1000,1000,100]", type "float"): its bytes are the request.
  void ShapeLine(std::string_view dims, std::string_view type) {
    TfBfcDump* d = Current();
    if (d == nullptr || !d->has_header) return;
    if (d->op.empty()) d->op = type.empty() ? fmt::format("shape[{}]", dims) : fmt::format("shape[{}] {}", dims, type);
    // TF <= 1.4 prints the shape without its type ("shape[128,225,225,3]").
    const std::string shape = type.empty() ? fmt::format("the tensor shape [{}] (no element type printed)", dims)
                                           : fmt::format("the tensor shape [{}] of type {}", dims, type);
    std::string problem;
    const std::optional<std::uint64_t> bytes = tfline::TensorBytes(dims, type, problem);
    if (!problem.empty()) {
      // The op's line and the traceback print the same shape: one warning for it.
      std::string message = fmt::format("{}: {}: not taken as the request", shape, problem);
      if (shapes_warned_.insert(message).second) Warn(*d, message);
      return;
    }
    ExactRequest(*bytes, "the tensor shape of the OOM line");
  }

  // An exact request size from a later line; taken when it agrees with the header's sizes.
  void ExactRequest(std::uint64_t bytes, std::string_view source) {
    TfBfcDump* d = Current();
    if (d == nullptr || !d->has_header || d->request_exact) return;
    const bool fits_rounded = d->rounded == 0 || RoundUp256(bytes) == d->rounded;
    // The header's human-readable size has 3 significant digits at least.
    const std::uint64_t diff = bytes > d->request ? bytes - d->request : d->request - bytes;
    const bool fits_header = d->request == 0 || diff <= d->request / 200 + 1;
    if (fits_rounded && fits_header) {
      d->request = bytes;
      d->request_exact = true;
      if (d->rounded == 0) d->rounded = RoundUp256(bytes);
    } else {
      d->warnings.push_back(fmt::format("{}:{}: {} gives {} bytes, which disagrees with the header "
                                        "({} requested, {} rounded); kept the header's",
                                        name_, line_, source, bytes, d->request, d->rounded));
    }
  }

  void BarLine(std::string_view text) {
    TfBfcDump* d = Current();
    // A fragment's bar counts once its Stats block was printed (the bar follows it).
    if (d == nullptr || (!d->has_header && d->stats.fields == 0) || !d->occupancy.empty() || complete_) return;
    std::string_view msg = text;
    if (auto p = msg.rfind("] "); p != std::string_view::npos) msg = msg.substr(p + 2);
    msg = Trim(msg);
    if (msg == "<allocator contains no memory>") {
      d->occupancy = std::string(msg);
      complete_ = true;
      return;
    }
    if (msg.size() < 20 || msg.size() > 200) return;
    for (char c : msg)
      if (c != '_' && c != '*' && c != 'x') return;
    d->occupancy = std::string(msg);
    complete_ = true;
  }

  const std::string& name_;
  std::vector<TfBfcDump> dumps_;
  std::vector<bool> not_failure_;
  std::unordered_set<std::uint64_t> addresses_;  // chunk addresses of the current dump
  std::unordered_set<std::uint64_t> summary_sizes_;  // sizes its "Chunks of size" lines gave
  std::unordered_set<std::string> shapes_warned_;   // tensor shapes it could not take, as warned
  std::size_t line_ = 0;
  bool in_stats_ = false;
  bool complete_ = false;  // the current dump's occupancy bar was printed: nothing more follows
};

}  // namespace

std::vector<TfBfcDump> ParseTfBfcLog(std::string_view text, const std::string& name) {
  Scanner scanner(name);
  std::size_t line = 1;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view physical = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // Progress bars rewrite a line with '\r': each piece is a line of its own.
    while (!physical.empty()) {
      const std::size_t cr = physical.find('\r');
      const std::string_view piece = physical.substr(0, cr);
      physical.remove_prefix(cr == std::string_view::npos ? physical.size() : cr + 1);
      if (!Trim(piece).empty()) scanner.Line(piece, line);
    }
    ++line;
  }
  return scanner.Finish();
}

}  // namespace fragscope::traces
