// A PyTorch snapshot's oom event in PyTorch's terms (snapshot_oom.hpp). The figures are the
// snapshot's own: R the rounded request, F the device_free PyTorch read from the driver at the
// failure, U the free bytes inside its segments (reserved minus allocated), S the segment it asks
// the driver for when no cached block fits. Before it raises the error PyTorch has already returned
// every wholly free cached segment and retried, so F counts that memory and U is what is left in
// partly used segments (CUDACachingAllocator.cpp, the comment beside the error message).
#include "snapshot_oom.hpp"

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"

namespace fragscope::analysis {
namespace {

using traces::FormatBytes;
using traces::OomCause;

constexpr std::uint64_t kSmallRequest = std::uint64_t{1} << 20;  // kSmallSize: the small pool's largest
constexpr std::uint64_t kSmallSegment = std::uint64_t{2} << 20;  // kSmallBuffer: its segments

std::string StreamName(std::uint64_t stream) {
  return stream == 0 ? std::string("the default stream") : fmt::format("stream {:#x}", stream);
}

std::string PoolName(bool small) { return small ? "small" : "large"; }

// Why PyTorch asks the driver for S bytes (get_allocation_size).
std::string SegmentRule(std::uint64_t request) {
  if (request <= kSmallRequest) return "a request of at most 1 MiB gets a 2 MiB small-pool segment";
  if (request < 10 * kSmallRequest) return "a request between 1 and 10 MiB gets a 20 MiB segment";
  return "a request of 10 MiB or more gets a segment of its size rounded up to 2 MiB";
}

// Where the free bytes inside the segments sit, as seen by this request: in segments it may use
// (its own stream and pool), on other streams, or in the other pool. A segment's blocks all share
// its stream (PyTorch splits a block only for a request of the same stream), so a segment with a
// live block has that block's stream; one with none has an unknown stream and counts as usable.
// A 2 MiB segment is a small-pool one (every small-pool segment is 2 MiB, every large-pool one at
// least 10 MiB); under expandable segments sizes say nothing and every segment counts as usable.
struct FreeBySuitability {
  std::uint64_t usable = 0, usable_largest = 0;
  std::uint64_t other_streams = 0, other_pool = 0;
  std::set<std::uint64_t> streams;  // the other streams that hold free bytes
};

FreeBySuitability Classify(const MemoryState& state, std::uint64_t stream, bool small_request, bool expandable) {
  FreeBySuitability out;
  for (const RegionState& region : state.regions) {
    std::uint64_t free = 0, largest = 0;
    for (const Hole& hole : region.holes) {
      free += hole.size;
      largest = std::max(largest, hole.size);
    }
    if (free == 0) continue;
    if (!expandable && (region.size == kSmallSegment) != small_request) {
      out.other_pool += free;
    } else if (!region.chunks.empty() && region.chunks.front().stream != stream) {
      out.other_streams += free;
      out.streams.insert(region.chunks.front().stream);
    } else {
      out.usable += free;
      out.usable_largest = std::max(out.usable_largest, largest);
    }
  }
  return out;
}

std::string StreamList(const std::set<std::uint64_t>& streams) {
  std::string out;
  std::size_t n = 0;
  for (std::uint64_t s : streams) {
    if (n == 3) return out + fmt::format(" and {} more", streams.size() - n);
    out += (n == 0 ? "" : ", ") + StreamName(s);
    ++n;
  }
  return out;
}

// What keeps the cached free bytes from serving the request, in words.
std::string WhyCacheCannotServe(const FreeBySuitability& f, std::uint64_t request, std::uint64_t stream,
                                bool small_request) {
  std::vector<std::string> elsewhere;
  if (f.other_pool > 0) {
    elsewhere.push_back(small_request
                            ? fmt::format("{} is in large-pool segments, and a request of at most 1 MiB is served "
                                          "only from small-pool (2 MiB) segments",
                                          FormatBytes(f.other_pool))
                            : fmt::format("{} is in small-pool (2 MiB) segments, which serve only requests of at "
                                          "most 1 MiB",
                                          FormatBytes(f.other_pool)));
  }
  if (f.other_streams > 0) {
    elsewhere.push_back(fmt::format("{} is cached on {}, and PyTorch serves a request only from blocks cached on "
                                    "its own stream (this one ran on {})",
                                    FormatBytes(f.other_streams), StreamList(f.streams), StreamName(stream)));
  }
  std::string joined;
  for (std::size_t i = 0; i < elsewhere.size(); ++i) joined += (i == 0 ? "" : "; ") + elsewhere[i];
  if (f.usable == 0) return "none of the cached memory can serve it: " + joined;
  std::string out;
  if (f.usable_largest >= request) {
    // The rebuilt layout disagrees with the allocator; say so instead of inventing a reason.
    out = fmt::format("the layout rebuilt from the trace has a free block of {} on its stream and in its pool, "
                      "which should have served it (max_split_size_mb keeps larger cached blocks from serving "
                      "smaller requests; otherwise the trace missed events)",
                      FormatBytes(f.usable_largest));
  } else {
    out = fmt::format("the largest cached block it could use (on {}, in the {} pool) is {}, less than the request "
                      "of {} ({} free in such blocks)",
                      StreamName(stream), PoolName(small_request), FormatBytes(f.usable_largest),
                      FormatBytes(request), FormatBytes(f.usable));
  }
  return joined.empty() ? out : out + "; " + joined;
}

}  // namespace

bool ExplainSnapshotOom(const traces::TraceHeader& header, std::uint32_t device, const traces::Event& oom,
                        const MemoryState& state, OomDiagnosis& diagnosis) {
  const OomCause cause = oom.oom.cause;
  if (cause != OomCause::kUnknown && cause != OomCause::kCapacity && cause != OomCause::kFragmentation) {
    return false;  // not the rule's (a trace converted by an older reader): the general words
  }
  OomReport& report = diagnosis.report;
  report.device = device;
  report.numbers = oom.oom;
  const traces::OomRecord& n = report.numbers;
  const std::uint64_t request = n.rounded != 0 ? n.rounded : n.request;
  const std::uint64_t free = n.headroom;
  const std::uint64_t cached = n.free_in_regions;
  const std::uint64_t segment = traces::PytorchSegmentSize(request);
  const std::uint64_t need = segment > free ? segment - free : 0;
  const std::string S = FormatBytes(segment), F = FormatBytes(free), R = FormatBytes(request);
  const std::string* expandable_setting = header.source.Setting("expandable_segments");
  const bool expandable = expandable_setting != nullptr &&
                          (*expandable_setting == "True" || *expandable_setting == "true" || *expandable_setting == "1");
  diagnosis.framework_advice.framework = "PyTorch";
  switch (n.cause) {
    case OomCause::kUnknown: {
      const std::uint64_t allowed_below = traces::CheckedAdd(n.reserved, segment).value_or(traces::kMaxBytes);
      report.explanation = fmt::format(
          "inconsistent numbers: the {} segment this request needs ({}) fits in the {} the device reported free "
          "at the failure, so it was not refused for lack of device memory; the likely reason is a per-process "
          "memory fraction, under which PyTorch refuses a segment that would take what it reserved ({}) past the "
          "fraction without asking the driver",
          S, SegmentRule(request), F, FormatBytes(n.reserved));
      report.suggestion = fmt::format(
          "a snapshot does not record the fraction: if one was set, it allowed less than {} on this device (the {} "
          "reserved plus the {} segment); otherwise the driver refused one allocation of this size (run it again "
          "alone on the device)",
          FormatBytes(allowed_below), FormatBytes(n.reserved), S);
      diagnosis.framework_advice.advice =
          "check torch.cuda.set_per_process_memory_fraction (and per_process_memory_fraction in "
          "PYTORCH_CUDA_ALLOC_CONF, in releases that have it): raise the fraction, or hold less memory";
      break;
    }
    case OomCause::kCapacity:
      report.explanation = fmt::format(
          "the request of {} is more than the device's free memory ({}) and PyTorch's cached free blocks ({}) "
          "together ({}); {} are in live tensors. A snapshot does not record the device's capacity, so whether "
          "the request could ever fit is not known",
          R, F, FormatBytes(cached), FormatBytes(traces::CheckedAdd(free, cached).value_or(traces::kMaxBytes)),
          FormatBytes(n.in_use));
      report.suggestion = fmt::format(
          "PyTorch needs a fresh {} segment for it ({}): {} more free on the device, by holding less live data "
          "or stopping other processes on the GPU",
          S, SegmentRule(request), FormatBytes(need));
      diagnosis.framework_advice.advice =
          "the live tensors and this request need more than the device had free, and no PYTORCH_CUDA_ALLOC_CONF "
          "setting changes that: a smaller batch, activation checkpointing (torch.utils.checkpoint), or lower "
          "precision (torch.autocast); nvidia-smi shows whether other processes hold part of the GPU";
      break;
    default: {  // fragmentation
      const bool small_request = request <= kSmallRequest;
      const FreeBySuitability where = Classify(state, oom.stream, small_request, expandable);
      if (where.usable == 0 && where.other_pool == 0 && where.other_streams == 0) {
        // Nothing cached at all (U = 0, so R <= F): the request fits in free memory, its segment not.
        report.explanation = fmt::format(
            "the request of {} fits in the {} free on the device, but with no cached block for it PyTorch asks the "
            "driver for a {} segment ({}), which does not fit",
            R, F, S, SegmentRule(request));
      } else {
        report.explanation = fmt::format(
            "{} are cached free inside PyTorch's segments and {} free on the device, together enough for the "
            "request of {}, but {}; and the fresh {} segment it then needs does not fit in the {} free",
            FormatBytes(cached), F, R, WhyCacheCannotServe(where, request, oom.stream, small_request), S, F);
      }
      report.suggestion = fmt::format(
          "{} more free on the device would have let PyTorch allocate that segment ({}); or free tensors so that "
          "a cached block of {} comes free",
          FormatBytes(need), SegmentRule(request), R);
      if (where.other_streams > 0 && where.usable_largest < request) {
        diagnosis.framework_advice.advice =
            "the memory is cached for another stream: allocate and free these tensors on one stream (a tensor "
            "used on a side stream, with record_stream, goes back to the stream that allocated it), or "
            "synchronize and call torch.cuda.empty_cache() after the other stream's tensors are freed";
      } else {
        diagnosis.framework_advice = AdviceInFrameworkTerms(header, OomCause::kFragmentation);
      }
      break;
    }
  }
  return true;
}

}  // namespace fragscope::analysis
