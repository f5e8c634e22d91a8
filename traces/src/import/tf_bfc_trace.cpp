// TensorFlow BFC OOM dumps as a fragscope Trace (docs/importers.md, "TensorFlow / XLA BFC OOM
// logs"), reading the log file, and detecting the format from content.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "tf_bfc_internal.hpp"
#include "tf_text.hpp"
#include "trace_builder.hpp"

namespace fragscope::traces {
namespace {

struct Live {
  std::vector<Event> allocs;  // alloc events of the device's previous dump
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions;
};

}  // namespace

std::optional<std::uint32_t> TfAllocatorDevice(std::string_view allocator) {
  for (std::string_view prefix : {std::string_view("GPU_"), std::string_view("gpu_")}) {
    if (!tftext::StartsWith(allocator, prefix)) continue;
    std::string_view rest = allocator.substr(prefix.size());
    if (rest.empty() || rest.front() < '0' || rest.front() > '9') return std::nullopt;
    const auto index = tftext::TakeUint(rest);
    if (index && *index < 1000000 && tftext::StartsWith(rest, "_bfc"))
      return static_cast<std::uint32_t>(*index);
  }
  return std::nullopt;
}

bool TfHostAllocator(std::string_view allocator) {
  std::string lower(allocator);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower.find("host") != std::string::npos || lower.find("pinned") != std::string::npos;
}

namespace {

// The occupancy bar in words, when nothing else gives bytes: the fractions it shows.
std::string BarFractions(const std::string& bar) {
  if (bar.empty() || bar.front() == '<') return {};
  std::size_t used = 0, run = 0, longest = 0;
  for (char c : bar) {
    if (c != '_') ++used;
    run = c == '_' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const auto percent = [&](std::size_t n) { return static_cast<unsigned>((n * 100 + bar.size() / 2) / bar.size()); };
  return fmt::format("only the occupancy bar gives the memory: {}% in use, {}% free (the longest free run {}%), of "
                     "bytes it does not print",
                     percent(used), percent(bar.size() - used), percent(longest));
}

}  // namespace

// What the dump itself says about the moment: the numbers its Stats block (and the allocator's
// summary lines) printed — the allocator's own counters, whole even when the chunk list was cut —
// and what its listed layout lacks. What the listed layout adds up to is the analysis's job.
static StateSummary StateOf(const TfBfcDump& d, std::uint32_t device, std::uint64_t at_seq) {
  StateSummary s;
  s.device = device;
  s.at_seq = at_seq;
  s.moment = d.has_header ? fmt::format("at the OOM on line {}", d.line) : fmt::format("in the dump on line {}", d.line);
  s.in_use = d.stats.in_use;
  // TensorFlow 2.x prints Reserved and LargestFreeBlock as 0 whatever they are: a 0 there says
  // nothing, so the regions' total stands for reserved and the largest free is left to the layout.
  s.reserved = d.stats.reserved && *d.stats.reserved > 0 ? d.stats.reserved : d.total_region_allocated;
  if (d.limit != 0) s.limit = d.limit;
  s.max_in_use = d.stats.max_in_use;
  if (d.stats.largest_free_block && *d.stats.largest_free_block > 0) s.largest_free = d.stats.largest_free_block;
  // Without Stats InUse, the chunks the bin lines count beyond the list, and the summary of the
  // in-use chunks by size, are in use: exactly so where the summary is whole, else at least.
  const bool summary_beyond = d.summary_in_use > d.listed_in_use;
  if (!s.in_use && (d.unlisted_in_use_chunks > 0 || summary_beyond)) {
    s.in_use = d.in_use;
    s.in_use_at_least = !(SizeSummaryWhole(d) && d.in_use == d.summary_in_use);
  }
  const bool unlisted = d.unlisted_free_chunks > 0 || d.unlisted_in_use_chunks > 0;
  if (d.unlisted_free_chunks > 0) s.free_at_least = d.listed_free + d.unlisted_free_bytes;
  // A cut list without a reserved count: the free bytes its regions hold at least are those the
  // OOM's reserved bound counted (TakeStatsWhereCut), so the state and the OOM give one bound.
  if (d.reserved_at_least && !s.reserved && d.reserved > d.in_use) s.free_at_least = d.reserved - d.in_use;
  std::uint64_t listed = 0, covered = 0, in_regions = 0;
  for (const TfBfcRegion& r : d.regions) {
    listed += r.size;
    in_regions += r.chunk_count;
    for (std::size_t c = r.first_chunk; c < r.first_chunk + r.chunk_count; ++c) covered += d.chunks[c].size;
  }
  const std::size_t outside = d.chunks.size() - std::min<std::size_t>(in_regions, d.chunks.size());
  std::vector<std::string> missing;
  // What the listed layout adds up to (in_use and reserved above are the Stats block's where the
  // chunk list was cut).
  const std::uint64_t printed_reserved =
      d.stats.reserved && *d.stats.reserved > 0 ? *d.stats.reserved : d.total_region_allocated.value_or(0);
  if (d.regions.empty() && d.chunks.empty()) {
    missing.push_back("no region or chunk list (the layout is unknown)");
  } else {
    if (covered < listed) {
      missing.push_back(fmt::format("the chunks listed cover {} of the {} its regions hold (the rest of the "
                                    "chunk list is not in the log)", FormatBytes(covered), FormatBytes(listed)));
    }
    if (d.stats.in_use && *d.stats.in_use != d.listed_in_use) {
      missing.push_back(fmt::format("the chunks listed hold {} in use where its Stats say {}",
                                    FormatBytes(d.listed_in_use), FormatBytes(*d.stats.in_use)));
    }
    if (printed_reserved > d.listed_reserved) {
      missing.push_back(fmt::format("the regions listed hold {} where it counts {} reserved",
                                    FormatBytes(d.listed_reserved), FormatBytes(printed_reserved)));
    }
  }
  if (outside > 0)
    missing.push_back(fmt::format("{} of the chunks it lists lie outside every listed region (the regions that hold "
                                  "them are not in the log)",
                                  outside));
  if (unlisted) {
    const char* about = d.unlisted_margin > 0 ? "about " : "";
    std::string what;
    if (d.unlisted_free_chunks > 0)
      what = fmt::format("{} free chunk{} of {}{}", d.unlisted_free_chunks, d.unlisted_free_chunks == 1 ? "" : "s",
                         about, FormatBytes(d.unlisted_free_bytes));
    if (d.unlisted_in_use_chunks > 0)
      what += fmt::format("{}{} in-use chunk{} of {}{}", what.empty() ? "" : " and ", d.unlisted_in_use_chunks,
                          d.unlisted_in_use_chunks == 1 ? "" : "s", about, FormatBytes(d.unlisted_in_use_bytes));
    missing.push_back(fmt::format("{} show {} that the chunk list lacks",
                                  d.bins.empty()          ? "its Chunk State table"
                                  : d.chunk_state.empty() ? "its bin lines"
                                                          : "its bin lines and Chunk State table",
                                  what));
  }
  if (d.summary_lines > 0 && (d.chunks.empty() || summary_beyond)) {
    missing.push_back(fmt::format(
        "{} summary of in-use chunks by size counts {} chunk{} in {} size{}, {} in use{}",
        d.chunks.empty() ? "only its" : "its", d.summary_chunks, d.summary_chunks == 1 ? "" : "s", d.summary_lines,
        d.summary_lines == 1 ? "" : "s", FormatBytes(d.summary_in_use),
        SizeSummaryWhole(d) ? std::string(" (its \"Sum Total\" agrees: all of them)")
        : !d.chunks.empty() ? fmt::format(" where the chunks listed hold {}", FormatBytes(d.listed_in_use))
        : d.summary_total   ? fmt::format(" at least (its \"Sum Total\" says {}: the list is cut)",
                                          FormatBytes(*d.summary_total))
                            : std::string(" at least (no \"Sum Total\" line says the list is whole)")));
  }
  if (d.from_stats && !s.reserved)
    missing.push_back(fmt::format("no reserved count: its regions hold at least {} (what is in use and the "
                                  "free chunks it shows)", FormatBytes(d.reserved)));
  if (d.stats.fields == 0) missing.push_back("no Stats block");
  if (const std::string fields = ApproximateCounts(d); !fields.empty())
    missing.push_back(fmt::format("exact byte counts: it prints human-readable sizes ({})", fields));
  if (d.limit == 0) missing.push_back("no limit");
  if (d.stats.fields == 0 && !d.total_region_allocated)
    if (std::string bar = BarFractions(d.occupancy); !bar.empty()) missing.push_back(std::move(bar));
  // Most TensorFlow versions print chunk sizes only: the layout's allocations then carry those as
  // requested, which is no measure of what their owners asked for (ToOomRecord leaves it out too).
  s.requested_known = d.in_use_chunks == 0 || d.requested_listed;
  s.layout_complete = (!d.regions.empty() || !d.chunks.empty()) && covered >= listed &&
                      (!d.stats.in_use || *d.stats.in_use == d.listed_in_use) &&
                      printed_reserved <= d.listed_reserved && !unlisted && !summary_beyond && outside == 0;
  // An incomplete layout's holes are not known to be free: the largest free chunk it shows (listed,
  // or in the bin lines and the Chunk State table) is a lower bound.
  if (!s.layout_complete && !s.largest_free) {
    std::uint64_t largest = d.unlisted_largest_free;
    for (const TfBfcChunk& c : d.chunks)
      if (!c.in_use) largest = std::max(largest, c.size);
    if (largest > 0) s.largest_free = largest;
  }
  for (std::size_t i = 0; i < missing.size(); ++i) s.missing += (i == 0 ? "" : "; ") + missing[i];
  return s;
}

Trace TfBfcDumpsToTrace(const std::vector<TfBfcDump>& dumps, const std::string& name) {
  Trace trace;
  trace.header.producer = "TensorFlow BFC allocator log";
  trace.header.source_format = "tensorflow-bfc-log";
  trace.header.metadata.emplace_back("source", name);
  trace.header.metadata.emplace_back("tf.dumps", std::to_string(dumps.size()));
  // A dump is a moment, not a history: what it lists is laid out as events so the inspector can
  // draw it, and the numbers it printed are the state's summary (docs/importers.md).
  trace.header.kind = EvidenceKind::kState;
  trace.header.source.allocator = "TensorFlow BFC allocator";
  trace.header.source.rounding = 256;  // kMinAllocationSize

  // One device per allocator name: GPU_N_bfc is device N, the others take the free indices.
  std::map<std::string, std::uint32_t> devices;
  std::vector<bool> taken;
  auto take = [&](std::uint32_t i) {
    if (taken.size() <= i) taken.resize(i + 1, false);
    taken[i] = true;
  };
  for (const TfBfcDump& d : dumps)
    if (auto i = TfAllocatorDevice(d.allocator); i && !devices.count(d.allocator)) {
      devices[d.allocator] = *i;
      take(*i);
    }
  std::uint32_t next = 0;
  for (const TfBfcDump& d : dumps) {
    if (devices.count(d.allocator)) continue;
    while (next < taken.size() && taken[next]) ++next;
    devices[d.allocator] = next;
    take(next);
  }
  for (const auto& [allocator, index] : devices) {
    DeviceDescription desc;
    desc.index = index;
    desc.name = allocator.empty() ? "unknown TensorFlow allocator" : allocator;
    desc.backing = "tensorflow";
    if (TfHostAllocator(allocator)) {
      // TensorFlow's pinned (page-locked) host pool: host RAM the GPU can copy from, not GPU memory.
      desc.name += " (pinned host memory)";
      desc.backing = "tensorflow pinned host memory";
    }
    for (const TfBfcDump& d : dumps)
      if (d.allocator == allocator && d.limit > 0 && desc.limit == 0) desc.limit = desc.capacity = d.limit;
    trace.header.devices.push_back(desc);
  }
  std::sort(trace.header.devices.begin(), trace.header.devices.end(),
            [](const DeviceDescription& a, const DeviceDescription& b) { return a.index < b.index; });

  TraceBuilder b(trace);
  std::uint64_t t0 = 0;
  for (const TfBfcDump& d : dumps)
    if (d.time_unix_ns != 0) {
      t0 = d.time_unix_ns;
      break;
    }
  trace.header.created_unix_ns = t0;
  std::uint64_t now = 0;
  std::map<std::uint32_t, Live> live;
  std::uint64_t alloc_id = 0;
  for (std::size_t n = 0; n < dumps.size(); ++n) {
    const TfBfcDump& d = dumps[n];
    const std::uint32_t device = devices[d.allocator];
    if (d.time_unix_ns != 0 && d.time_unix_ns >= t0) now = std::max(now, d.time_unix_ns - t0);
    b.Add(EventType::kMarker, device, now).tag = b.Intern(fmt::format("tf dump {} at line {}", n + 1, d.line));
    // A later dump of the same allocator replaces the earlier state.
    Live& state = live[device];
    for (const Event& a : state.allocs) {
      Event& f = b.Add(EventType::kFree, device, now);
      f.address = a.address;
      f.size = a.size;
      f.rounded = a.rounded;
      f.alloc_id = a.alloc_id;
    }
    for (const auto& [address, size] : state.regions) {
      Event& r = b.Add(EventType::kRegionRelease, device, now);
      r.address = address;
      r.size = size;
    }
    state = Live{};
    for (const TfBfcRegion& region : d.regions) {
      Event& r = b.Add(EventType::kRegionReserve, device, now);
      r.address = region.address;
      r.size = region.size;
      state.regions.emplace_back(region.address, region.size);
      for (std::size_t c = region.first_chunk; c < region.first_chunk + region.chunk_count; ++c) {
        const TfBfcChunk& chunk = d.chunks[c];
        if (!chunk.in_use) continue;
        Event& a = b.Add(EventType::kAlloc, device, now);
        a.address = chunk.address;
        a.size = chunk.requested != 0 ? chunk.requested : chunk.size;
        a.rounded = chunk.size;
        a.region = region.address;
        a.alloc_id = ++alloc_id;
        state.allocs.push_back(a);
      }
    }
    // Chunks the dump lists outside every listed region (their region's line was cut from the log):
    // live all the same, laid out with no region.
    std::vector<bool> in_region(d.chunks.size(), false);
    for (const TfBfcRegion& region : d.regions)
      for (std::size_t c = region.first_chunk; c < region.first_chunk + region.chunk_count; ++c) in_region[c] = true;
    for (std::size_t c = 0; c < d.chunks.size(); ++c) {
      const TfBfcChunk& chunk = d.chunks[c];
      if (in_region[c] || !chunk.in_use) continue;
      Event& a = b.Add(EventType::kAlloc, device, now);
      a.address = chunk.address;
      a.size = chunk.requested != 0 ? chunk.requested : chunk.size;
      a.rounded = chunk.size;
      a.alloc_id = ++alloc_id;
      state.allocs.push_back(a);
    }
    if (d.has_header) {
      Event& o = b.Add(EventType::kOom, device, now);
      o.oom = d.ToOomRecord();
      o.tag = b.Intern(d.op);
    }
    trace.header.source.states.push_back(StateOf(d, device, trace.events.back().seq));
    const std::string key = fmt::format("tf.dump{}", n + 1);
    trace.header.metadata.emplace_back(
        key, fmt::format("{} at line {}: {} regions ({}), {} in-use and {} free chunks, in use {}{}",
                         d.allocator.empty() ? "(no header)" : d.allocator, d.line, d.regions.size(),
                         FormatBytes(d.reserved), d.in_use_chunks, d.free_chunks, FormatBytes(d.in_use),
                         !d.has_header     ? std::string()
                         : d.rounded == 0 ? fmt::format(", request unknown, cause {}", ToString(d.cause))
                                          : fmt::format(", request {} (rounded {}), cause {}", d.request, d.rounded,
                                                        ToString(d.cause))));
    if (!d.occupancy.empty()) trace.header.metadata.emplace_back(key + ".occupancy", d.occupancy);
    trace.warnings.insert(trace.warnings.end(), d.warnings.begin(), d.warnings.end());
    for (const TfBfcError& e : d.errors)
      trace.warnings.push_back(fmt::format(
          "{}:{}: error: {} (left out; ParseTfBfcLogToTrace and ReadTfBfcLog refuse this log)", name,
          e.line, e.message));
  }
  return trace;
}

bool IsJaxLog(std::string_view text) {
  // jaxlib's exception (jaxlib.xla_extension.XlaRuntimeError; jax.errors.JaxRuntimeError in later
  // versions) and its module paths: TensorFlow raises none of them, even where it runs XLA.
  for (std::string_view mark : {"jaxlib", "XlaRuntimeError", "JaxRuntimeError", "jax.errors"}) {
    if (text.find(mark) != std::string_view::npos) return true;
  }
  return false;
}

Trace ParseTfBfcLogToTrace(std::string_view text, const std::string& name) {
  const std::vector<TfBfcDump> dumps = ParseTfBfcLog(text, name);
  if (dumps.empty()) {
    if (text.find("ran out of memory trying to allocate ") != std::string_view::npos)
      throw TraceError(name, 0, "no TensorFlow BFC allocator dump found: its \"ran out of memory\" lines are "
                                "warnings that TensorFlow marks \"not a failure\" (no dump follows them), and "
                                "there are no chunk, bin or Stats lines");
    throw TraceError(name, 0, "no TensorFlow BFC allocator dump found (no \"ran out of memory\" "
                              "header, no chunk, bin or Stats lines)");
  }
  // A number the state cannot be built without is an error: the first one, at its line.
  const TfBfcError* first = nullptr;
  std::size_t count = 0;
  for (const TfBfcDump& d : dumps)
    for (const TfBfcError& e : d.errors) {
      ++count;
      if (first == nullptr || e.line < first->line) first = &e;
    }
  if (first != nullptr) {
    std::uint64_t offset = 0;  // of the line
    for (std::size_t line = 1; line < first->line && offset < text.size(); ++line) {
      const std::size_t nl = text.find('\n', offset);
      offset = nl == std::string_view::npos ? text.size() : nl + 1;
    }
    throw TraceError(name, offset,
                     fmt::format("line {}: {}{}", first->line, first->message,
                                 count > 1 ? fmt::format(" (and {} more such errors)", count - 1)
                                           : std::string()));
  }
  Trace trace = TfBfcDumpsToTrace(dumps, name);
  if (IsJaxLog(text)) {
    trace.header.producer = "XLA BFC allocator log (JAX)";
    trace.header.source.allocator = std::string(kJaxBfcAllocator);
  }
  return trace;
}

Trace ReadTfBfcLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw TraceError(path, 0, fmt::format("read failed: {}", std::strerror(errno)));
  return ParseTfBfcLogToTrace(std::move(buffer).str(), path);
}

namespace {

// Whether some "ran out of memory trying to allocate" line in `head` is a header that a dump follows:
// not TensorFlow's warning that the caller can do without the memory ("… The caller indicates that
// this is not a failure …"), which has no dump and is no error.
bool HasDumpHeader(std::string_view head) {
  for (std::size_t begin = 0; begin < head.size();) {
    const std::size_t end = head.find('\n', begin);
    const std::string_view line = head.substr(begin, end == std::string_view::npos ? end : end - begin);
    if (line.find("ran out of memory trying to allocate ") != std::string_view::npos &&
        line.find("this is not a failure") == std::string_view::npos)
      return true;
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return false;
}

}  // namespace

bool LooksLikeTfBfcLog(std::string_view head) {
  if (HasDumpHeader(head)) return true;
  if (head.find("BFCAllocator dump for ") != std::string_view::npos) return true;
  if (head.find('\0') != std::string_view::npos) return false;  // binary
  return !ParseTfBfcLog(head, "").empty();
}

}  // namespace fragscope::traces
