// Line scanner for TensorFlow / XLA BFC allocator OOM dumps: finds the dump lines of every format
// era anywhere in a log and collects them per dump. tf_bfc_state.cpp turns a dump's lines into the
// allocator state. No regex: each line is searched for a few fixed keywords.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "tf_bfc_internal.hpp"
#include "tf_text.hpp"

namespace fragscope::traces {
namespace {

using namespace tftext;

constexpr std::string_view kHeader = "ran out of memory trying to allocate ";
constexpr std::string_view kNotFailure = "caller indicates that this is not a failure";

bool HasContent(const TfBfcDump& d) {
  return !d.chunks.empty() || !d.bins.empty() || !d.regions.empty() || d.stats.fields > 0 ||
         !d.occupancy.empty() || d.total_region_allocated.has_value();
}

// Bytes per element of a TensorFlow dtype name as the OOM line prints it ("float", "half", ...).
std::uint64_t DtypeBytes(std::string_view type) {
  if (type == "float" || type == "int32" || type == "uint32" || type == "qint32") return 4;
  if (type == "double" || type == "int64" || type == "uint64" || type == "complex64") return 8;
  if (type == "half" || type == "bfloat16" || type == "int16" || type == "uint16") return 2;
  if (type == "int8" || type == "uint8" || type == "bool" || type == "qint8" || type == "quint8")
    return 1;
  if (type == "complex128") return 16;
  return 0;
}

class Scanner {
 public:
  explicit Scanner(const std::string& name) : name_(name) {}

  void Line(std::string_view text, std::size_t line) {
    line_ = line;
    if (text.find(kHeader) != std::string_view::npos) return Header(text);
    if (auto p = text.find("BFCAllocator dump for "); p != std::string_view::npos)
      return DumpFor(Trim(text.substr(p + 22)));
    if (text.find("allocation summary follows") != std::string_view::npos) return;
    if (ChunkLine(text)) return;
    if (BinLine(text)) return;
    if (auto p = text.find("Next region of size "); p != std::string_view::npos) {
      std::string_view rest = text.substr(p + 20);
      if (auto size = TakeUint(rest)) {
        TfBfcDump& d = Open(false);
        TfBfcRegion region;
        region.size = *size;
        region.size_printed = true;
        region.first_chunk = d.chunks.size();
        d.regions.push_back(region);
      }
      return;
    }
    if (StatsLine(text)) return;
    if (auto p = text.find("total_region_allocated_bytes_:"); p != std::string_view::npos) {
      std::string_view rest = text.substr(p + 30);
      TfBfcDump& d = Open(false);
      d.total_region_allocated = TakeUint(rest);
      if (auto q = rest.find("memory_limit_:"); q != std::string_view::npos) {
        rest.remove_prefix(q + 14);
        d.memory_limit = TakeUint(rest);
      }
      return;
    }
    if (auto p = text.find("OOM when allocating tensor with shape"); p != std::string_view::npos)
      return ShapeLine(text.substr(p + 37));
    if (auto p = text.find("Out of memory while trying to allocate "); p != std::string_view::npos) {
      std::string_view rest = text.substr(p + 39);
      if (auto bytes = TakeUint(rest); bytes && StartsWith(TrimLeft(rest), "bytes"))
        ExactRequest(*bytes, "XLA's \"Out of memory while trying to allocate N bytes\"");
      return;
    }
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

  TfBfcDump& NewDump() {
    dumps_.emplace_back();
    not_failure_.push_back(false);
    addresses_.clear();
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
    std::string_view rest = text.substr(text.find(kHeader) + kHeader.size());
    if (auto bytes = TakeHumanBytes(rest)) d.request = *bytes;
    if (auto p = rest.find("(rounded to "); p != std::string_view::npos) {
      std::string_view r = rest.substr(p + 12);
      if (auto rounded = TakeUint(r)) d.rounded = *rounded;
    }
    if (auto p = rest.find("requested by op"); p != std::string_view::npos)
      d.op = std::string(Trim(rest.substr(p + 15)));
    // A whole number of bytes below 1 KiB is printed exactly ("768B").
    d.request_exact = d.request < 1024 && d.request > 0;
    // "740.8KiB (rounded to 758528)": the printed size rounds up past the exact rounded one, and
    // no request exceeds its rounded size.
    if (!d.request_exact && d.rounded > 0 && d.request > d.rounded) d.request = d.rounded;
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
    const auto address = TakeHex(rest);
    if (!address) return false;
    TfBfcChunk chunk;
    chunk.address = *address;
    chunk.in_use = in_use;
    chunk.line = line_;
    bool have_size = false;
    if (auto q = rest.find("of size "); q != std::string_view::npos) {
      std::string_view r = rest.substr(q + 8);
      if (auto size = TakeUint(r)) {
        chunk.size = *size;
        have_size = true;
      }
    }
    if (!have_size) return false;
    for (std::string_view key : {std::string_view("requested size "), std::string_view("requested_size ")}) {
      if (auto q = rest.find(key); q != std::string_view::npos) {
        std::string_view r = rest.substr(q + key.size());
        if (auto req = TakeUint(r)) chunk.requested = *req;
      }
    }
    TfBfcDump* cur = Current();
    if (cur == nullptr || complete_ || addresses_.count(chunk.address) != 0) cur = &NewDump();
    addresses_.insert(chunk.address);
    cur->chunks.push_back(chunk);
    return true;
  }

  bool BinLine(std::string_view text) {
    const std::size_t p = text.find("Bin (");
    if (p == std::string_view::npos) return false;
    std::string_view rest = text.substr(p + 5);
    const auto bin_size = TakeUint(rest);
    if (!bin_size || !StartsWith(rest, "):")) return false;
    const std::size_t t = rest.find("Total Chunks:");
    if (t == std::string_view::npos) return false;
    rest.remove_prefix(t + 13);
    TfBfcBin bin;
    bin.bin_size = *bin_size;
    bin.line = line_;
    bin.total_chunks = TakeUint(rest).value_or(0);
    if (auto q = rest.find("Chunks in use:"); q != std::string_view::npos) {
      rest.remove_prefix(q + 14);
      bin.chunks_in_use = TakeUint(rest).value_or(0);
      if (StartsWith(rest, ".")) rest.remove_prefix(1);
      bin.bytes_in_bin = TakeHumanBytes(rest).value_or(0);
    }
    TfBfcDump& d = Open(false);
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
      const auto value = TakeUint(rest);
      if (!value) return false;
      TfBfcStats& s = dumps_.back().stats;
      std::optional<std::uint64_t>* fields[] = {&s.limit,    &s.in_use,        &s.max_in_use,
                                                &s.num_allocs, &s.max_alloc_size, &s.reserved,
                                                &s.peak_reserved, &s.largest_free_block};
      if (!fields[index]->has_value()) ++s.fields;
      *fields[index] = *value;
      return true;
    }
    if (!t.empty()) in_stats_ = false;
    return false;
  }

  void ShapeLine(std::string_view rest) {
    TfBfcDump* d = Current();
    if (d == nullptr || !d->has_header) return;
    std::string_view r = rest;
    if (!StartsWith(r, "[")) return;
    const std::size_t close = r.find(']');
    if (close == std::string_view::npos) return;
    std::string_view dims = r.substr(1, close - 1);
    std::string_view after = r.substr(close + 1);
    std::string_view type;
    if (auto q = after.find("type "); q != std::string_view::npos) {
      type = after.substr(q + 5);
      type = type.substr(0, type.find(' '));
    }
    if (d->op.empty()) d->op = fmt::format("shape[{}] {}", dims, type);
    std::uint64_t elements = 1;
    bool ok = !dims.empty();
    while (ok && !dims.empty()) {
      const auto v = TakeUint(dims);
      if (!v || (*v != 0 && elements > UINT64_MAX / *v)) {
        ok = false;
        break;
      }
      elements *= *v;
      dims = TrimLeft(dims);
      if (StartsWith(dims, ",")) dims.remove_prefix(1);
      else if (!dims.empty()) ok = false;
    }
    const std::uint64_t width = DtypeBytes(type);
    if (ok && width != 0 && elements <= UINT64_MAX / width)
      ExactRequest(elements * width, "the tensor shape of the OOM line");
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
    if (d == nullptr || !d->has_header || !d->occupancy.empty()) return;
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
