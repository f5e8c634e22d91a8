// The paging region (expandable=on): address space apart from physical pages. SLOW PATH.
//
// The allocator reserves one address range of kPagingRangeFactor x the limit, and its chunks tile
// the whole range from the start: best fit runs over address space, where a hole costs nothing.
// Memory is the pages mapped under it (reserved = mapped bytes; the limit, the stats and the
// backing all count them). A chunk goes into use only once every page it touches is mapped; the
// hot path asks the page map and comes here when one is not. Whole pages that no live chunk touches
// are unmapped
//   - under pressure (unmap=lazy): when mapping would pass the limit or the backing refuses, before
//     any OOM is declared, and on ReleaseFreeRegions (gc, empty_cache);
//   - at once (unmap=eager): as a free leaves them untouched, so mapped pages are exactly the pages
//     live chunks touch.
// What can still strand memory is the free part of pages that live chunks share; that is what a
// fragmentation OOM means here (PageFacts).
#include <bit>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bfc_allocator.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/log.hpp"
#include "fragscope/traces/byte_math.hpp"

namespace fragscope::bfc {
namespace {

// One placement of a request on the paging region: inside free chunk `chunk`, at `address`.
struct Placement {
  Chunk* chunk = nullptr;
  std::uint64_t address = 0;
  std::uint64_t new_pages = 0;
};

}  // namespace

void BfcAllocator::InitPaging() {
  expandable_backing_ = backing_.expandable();
  if (expandable_backing_ == nullptr) {
    throw ConfigError("expandable", fmt::format("expandable=on needs a backing that maps pages "
                                                "(sim, host or vmm), not {}",
                                                ToString(backing_.info().kind)));
  }
  const std::uint64_t granularity = expandable_backing_->map_granularity();
  if (granularity < kRoundingUnit || !std::has_single_bit(granularity)) {
    throw BackingError(fmt::format("device {}: the {} backing maps pages of {} bytes; paging needs "
                                   "a power of two of at least 256",
                                   options_.device, ToString(backing_.info().kind), granularity));
  }
  // Address space is cheap (a 320 GiB range of a 80 GiB device costs a 20 KiB page map here and
  // nothing on the device), so ask for kPagingRangeFactor x the limit and settle for less only
  // where the backing has less to give. The page is the backing's granularity unless the range
  // would need more than kMaxTrackedPages of them.
  const std::uint64_t page = PagingPageBytes(granularity, options_.limit);
  // Memory comes in whole pages: under a limit of less than one, not one request could be served
  // (every one would be an OOM that reads like fragmentation). Refused here, by name.
  if (options_.limit < page) {
    throw ConfigError("limit", fmt::format("device {}: limit={} is less than one page of the {} backing "
                                           "({}): a paging allocator could map nothing under it; raise "
                                           "the limit to at least {}, or use the region model (growth=on)",
                                           options_.device, FormatBytes(options_.limit),
                                           ToString(backing_.info().kind), FormatBytes(page), FormatBytes(page)));
  }
  const std::uint64_t limit_pages = (options_.limit + page - 1) / page * page;
  void* base = nullptr;
  std::uint64_t range = 0;
  for (std::uint64_t factor = kPagingRangeFactor; factor >= 1 && base == nullptr; factor /= 2) {
    const std::optional<std::uint64_t> bytes = traces::CheckedMul(limit_pages, factor);
    if (!bytes || *bytes > kMaxRequestBytes) continue;
    base = expandable_backing_->ReserveRange(*bytes);
    range = *bytes;
  }
  if (base == nullptr) {
    throw BackingError(fmt::format("device {}: cannot reserve {} of address space for the paging "
                                   "region",
                                   options_.device, FormatBytes(limit_pages)));
  }
  auto region = std::make_unique<Region>();
  region->base = reinterpret_cast<std::uint64_t>(base);
  region->size = region->max_size = range;
  region->expandable = true;
  Chunk* chunk = pool_.Take();
  chunk->address = region->base;
  chunk->size = range;
  chunk->region = region.get();
  region->first = region->last = chunk;
  ++chunk_count_;
  bins_.Insert(chunk);
  expandable_region_ = region.get();
  regions_.emplace(region->base, std::move(region));
  paging_ = true;
  unmap_eager_ = options_.unmap_eager;
  pages_.Reset(reinterpret_cast<std::uint64_t>(base), range, page);
  cached_.Reset(pages_.pages());
  stats_.regions = stats_.peak_regions = 1;
  stats_.address_space = stats_.peak_address_space = range;

  // preallocate: map the first pages now; lazy mode keeps them until memory is needed elsewhere.
  const std::uint64_t initial = options_.preallocate_bytes / page * page;
  bool refused = false;
  if (initial > 0 && !MapPages(reinterpret_cast<std::uint64_t>(base), initial, &refused)) {
    ReleasePaging();
    throw BackingError(fmt::format("device {}: preallocation of {} refused by the {} backing",
                                   options_.device, FormatBytes(initial),
                                   ToString(backing_.info().kind)));
  }
  cached_.SetWhere(pages_.bits(), 0, pages_.high_water());  // mapped, and no chunk on them yet
}

void BfcAllocator::ReleasePaging() noexcept {
  if (!paging_ || expandable_region_ == nullptr) return;
  void* base = reinterpret_cast<void*>(expandable_region_->base);
  try {
    const std::uint64_t page = pages_.page_bytes();
    pages_.ForEachRun(0, pages_.high_water(), true, [&](std::uint64_t first, std::uint64_t end) {
      expandable_backing_->Unmap(base, first * page, (end - first) * page);
    });
    pages_.Clear(0, pages_.pages());
    cached_.Clear(0, cached_.capacity());
    expandable_backing_->ReleaseRange(base, expandable_region_->max_size);
  } catch (const std::exception& error) {  // called from a destructor: say what leaked
    fragscope::Log().error("device {}: releasing the paging region {}: {}", options_.device, base,
                           error.what());
  }
  paging_ = false;
}

std::uint64_t BfcAllocator::NewPagesFor(std::uint64_t address, std::uint64_t bytes) const {
  const std::uint64_t first = pages_.FirstPage(address), end = pages_.EndPage(address, bytes);
  return (end - first) - pages_.CountSet(first, end);
}

// Maps every page that [address, address + bytes) touches and is not mapped yet. False, with
// nothing changed, when that would pass the limit, or when the backing refuses (then
// *backing_refused). Events and stats only once every page is in.
bool BfcAllocator::MapPages(std::uint64_t address, std::uint64_t bytes, bool* backing_refused) {
  const std::uint64_t first = pages_.FirstPage(address), end = pages_.EndPage(address, bytes);
  const std::uint64_t page = pages_.page_bytes();
  const std::uint64_t missing = (end - first) - pages_.CountSet(first, end);
  if (missing == 0) return true;
  // unmap=lazy: free pages kept mapped elsewhere are recycled before reserved would pass its peak,
  // so reserved peaks where the pages live chunks touch peak, as with unmap=eager, at a fraction
  // of the calls (below the peak, new pages are simply mapped and cached ones kept for reuse).
  if (!unmap_eager_) {
    const std::uint64_t after = stats_.reserved + missing * page;
    if (after > stats_.peak_reserved) {
      RecyclePages(std::min(missing, (after - stats_.peak_reserved + page - 1) / page), first, end);
    }
  }
  if (missing > stats_.headroom() / page) return false;
  void* base = reinterpret_cast<void*>(expandable_region_->base);
  // The unmapped runs are mapped one backing call each. The page map is set only once all are in,
  // so until then the same walk finds the same runs: a refusal gives back the ones before it by
  // walking again (all or nothing), and success records them by walking again, with no list kept
  // (a vector here was a heap allocation on every call).
  std::uint64_t refused_at = end;
  pages_.ForEachRunWhile(first, end, false, [&](std::uint64_t a, std::uint64_t b) {
    if (expandable_backing_->Map(base, a * page, (b - a) * page)) return true;
    refused_at = a;
    return false;
  });
  if (refused_at != end) {
    pages_.ForEachRun(first, refused_at, false, [&](std::uint64_t a, std::uint64_t b) {
      expandable_backing_->Unmap(base, a * page, (b - a) * page);
    });
    *backing_refused = true;
    return false;
  }
  pages_.ForEachRun(first, end, false, [&](std::uint64_t a, std::uint64_t b) {
    stats_.reserved += (b - a) * page;
    ++stats_.maps;
    if (sink_ != nullptr) EmitRegion(traces::EventType::kMap, pages_.AddressOf(a), (b - a) * page);
  });
  pages_.Set(first, end);
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  return true;
}

void BfcAllocator::UnmapPages(std::uint64_t first_page, std::uint64_t end_page) {
  const std::uint64_t page = pages_.page_bytes();
  const std::uint64_t bytes = (end_page - first_page) * page;
  expandable_backing_->Unmap(reinterpret_cast<void*>(expandable_region_->base), first_page * page, bytes);
  pages_.Clear(first_page, end_page);
  cached_.Clear(first_page, end_page);
  stats_.reserved -= bytes;
  ++stats_.unmaps;
  if (sink_ != nullptr) EmitRegion(traces::EventType::kUnmap, pages_.AddressOf(first_page), bytes);
}

// unmap=eager, after a free: the pages the freed chunk touched that now lie wholly inside the
// coalesced free chunk are touched by no live chunk. Constant work besides the backing call.
void BfcAllocator::UnmapFreedPages(std::uint64_t address, std::uint64_t bytes, const Chunk* merged) {
  const std::uint64_t first = std::max(pages_.FirstPage(address), pages_.FirstWholePage(merged->address));
  const std::uint64_t end = std::min(pages_.EndPage(address, bytes),
                                     pages_.EndWholePage(merged->address, merged->size));
  if (first >= end) return;
  pages_.ForEachRun(first, end, true, [this](std::uint64_t a, std::uint64_t b) { UnmapPages(a, b); });
}

// Unmaps up to `wanted` cached pages (mapped, no live chunk on them) outside pages [keep_first,
// keep_end), from the top of the range down (best fit prefers low addresses, so the top is where a
// kept page is least likely to be used again). O(runs unmapped + map words above them).
void BfcAllocator::RecyclePages(std::uint64_t wanted, std::uint64_t keep_first, std::uint64_t keep_end) {
  const auto take_from = [&](std::uint64_t first, std::uint64_t end) {
    cached_.ForEachSetRunDown(first, end, [&](std::uint64_t a, std::uint64_t b) {
      const std::uint64_t take = std::min(wanted, b - a);
      UnmapPages(b - take, b);
      wanted -= take;
      return wanted > 0;
    });
  };
  take_from(std::max(keep_end, keep_first), pages_.high_water());
  if (wanted > 0) take_from(0, std::min(keep_first, pages_.high_water()));
}

// Unmaps every cached page (mapped, no live chunk on it). Returns the bytes given back.
std::uint64_t BfcAllocator::UnmapFreePages() {
  if (!paging_) return 0;
  const std::uint64_t before = stats_.reserved;
  cached_.ForEachSetRunDown(0, pages_.high_water(), [this](std::uint64_t a, std::uint64_t b) {
    UnmapPages(a, b);
    return true;
  });
  return before - stats_.reserved;
}

namespace {

// Where `rounded` bytes need the fewest pages mapped: at the front or the back of each free chunk
// that fits, or at the start of a run of mapped pages inside it. Ties go to the smaller chunk (best
// fit), then the lower address. O(free chunks + mapped pages / 64): the OOM path only.
template <typename NewPages>
Placement FewestNewPages(const BestFitBins& bins, const PageMap& pages, std::uint64_t rounded,
                         NewPages&& new_pages) {
  Placement best;
  bool found = false;
  const auto consider = [&](Chunk* chunk, std::uint64_t address) {
    if (address < chunk->address || address + rounded > chunk->end()) return;
    const std::uint64_t need = new_pages(address, rounded);
    if (!found || need < best.new_pages) {
      best = Placement{chunk, address, need};
      found = true;
    }
  };
  bins.ForEach([&](int, int, const Chunk& free_chunk) {
    if (free_chunk.size < rounded || (found && best.new_pages == 0)) return;
    auto* chunk = const_cast<Chunk*>(&free_chunk);  // the bins hand out their own chunks
    consider(chunk, chunk->address);
    consider(chunk, chunk->end() - rounded);
    const std::uint64_t first = pages.FirstPage(chunk->address);
    const std::uint64_t end = std::min(pages.EndPage(chunk->address, chunk->size), pages.high_water());
    if (first < end) {
      pages.ForEachRun(first, end, true, [&](std::uint64_t a, std::uint64_t) {
        consider(chunk, std::max(chunk->address, pages.AddressOf(a)));
      });
    }
  });
  return best;
}

}  // namespace

// Cuts free chunk `chunk` at `address` (inside it, a multiple of 256 past its start): the front
// keeps the record and stays binned; the returned piece from `address` to the end is binned too.
// Carve takes the piece at once, so the two free neighbours never outlive this slow path.
Chunk* BfcAllocator::SplitAt(Chunk* chunk, std::uint64_t address) {
  if (pool_.Empty()) pool_.Refill();
  bins_.Erase(chunk);
  Chunk* piece = SplitOff(chunk, address - chunk->address);
  bins_.Insert(chunk);
  bins_.Insert(piece);
  return piece;
}

void* BfcAllocator::AllocateOnPages(std::uint64_t rounded, std::uint64_t requested,
                                    const AllocOptions& options, OomReport* report) {
  bool backing_refused = false;
  std::uint64_t released = 0;
  bool unmapped_free_pages = false;  // what paging does in gc's place, whatever gc says
  if (rounded <= options_.limit) {
    // The best fit first: it needs pages mapped, which fits below the limit more often than not.
    if (Chunk* chunk = bins_.FindBestFit(rounded); chunk != nullptr && MapPages(chunk->address, rounded, &backing_refused)) {
      return Carve(chunk, rounded, requested, options);
    }
    // Then the placement on pages already mapped; then, once, give back the free pages (what
    // unmap=lazy keeps) and try again.
    for (int attempt = 0; attempt < 2; ++attempt) {
      const Placement place = FewestNewPages(bins_, pages_, rounded, [this](std::uint64_t a, std::uint64_t b) {
        return NewPagesFor(a, b);
      });
      if (place.chunk == nullptr) break;  // no free range of address space is long enough
      if (place.new_pages <= stats_.headroom() / pages_.page_bytes()) {
        bool refused = false;
        if (MapPages(place.address, rounded, &refused)) {
          Chunk* piece = place.address == place.chunk->address ? place.chunk
                                                               : SplitAt(place.chunk, place.address);
          return Carve(piece, rounded, requested, options);
        }
        backing_refused = backing_refused || refused;
      }
      if (attempt == 0) {
        ++stats_.gc_runs;
        released = UnmapFreePages();
        unmapped_free_pages = true;
        if (released == 0 && !backing_refused) break;  // nothing changed: the same answer again
        backing_refused = false;
      }
    }
  }
  return ReportOom(Diagnose(rounded, requested, options, backing_refused, unmapped_free_pages, released), report);
}

// The largest free extent of memory: the longest stretch of a free chunk that lies on mapped
// pages. Under paging this is what "largest free chunk" means (a free chunk itself may span
// gigabytes of unmapped address space). O(free chunks + mapped pages / 64).
std::uint64_t BfcAllocator::LargestMappedFree() const {
  std::uint64_t largest = 0;
  bins_.ForEach([&](int, int, const Chunk& chunk) {
    const std::uint64_t first = pages_.FirstPage(chunk.address);
    const std::uint64_t end = std::min(pages_.EndPage(chunk.address, chunk.size), pages_.high_water());
    if (first >= end) return;
    pages_.ForEachRun(first, end, true, [&](std::uint64_t a, std::uint64_t b) {
      const std::uint64_t from = std::max(chunk.address, pages_.AddressOf(a));
      const std::uint64_t to = std::min(chunk.end(), pages_.AddressOf(b));
      if (to > from) largest = std::max(largest, to - from);
    });
  });
  return largest;
}

// Where the free memory sits when `rounded` bytes could not be placed (PageFacts). A free chunk's
// bytes in a page it does not cover wholly share that page with a live neighbour (free chunks are
// coalesced, and the range starts and ends on page boundaries): those bytes are stranded.
PageFacts BfcAllocator::StrandedPages(std::uint64_t rounded) const {
  PageFacts facts;
  facts.page_bytes = pages_.page_bytes();
  const std::uint64_t page = facts.page_bytes;
  std::uint64_t last_counted = UINT64_MAX;
  for (const Chunk* chunk = expandable_region_->first; chunk != nullptr; chunk = chunk->next) {
    if (chunk->in_use()) continue;
    const std::uint64_t first = pages_.FirstPage(chunk->address);
    const std::uint64_t end = pages_.EndPage(chunk->address, chunk->size);
    const auto stranded_in = [&](std::uint64_t p) {
      if (!pages_.IsMapped(p)) return;
      const std::uint64_t from = std::max(chunk->address, pages_.AddressOf(p));
      const std::uint64_t to = std::min(chunk->end(), pages_.AddressOf(p) + page);
      facts.stranded_bytes += to - from;
      if (p != last_counted) ++facts.partly_used_pages;
      last_counted = p;
    };
    if (chunk->address % page != 0) stranded_in(first);
    if (chunk->end() % page != 0 && (end - 1 != first || chunk->address % page == 0)) stranded_in(end - 1);
  }
  const Placement place = FewestNewPages(bins_, pages_, rounded, [this](std::uint64_t a, std::uint64_t b) {
    return NewPagesFor(a, b);
  });
  facts.address_space_exhausted = place.chunk == nullptr;
  facts.new_pages_needed = place.new_pages;
  return facts;
}

// Paging invariants: reserved is the mapped bytes, never above the limit; every page a live chunk
// touches is mapped; with unmap=eager and no preallocation, no other page is.
void BfcAllocator::CheckPagesLocked() const {
  const std::uint32_t dev = options_.device;
  const auto fail = [dev](const std::string& what) {
    throw InvariantViolation(fmt::format("device {}: invariant violated: {}", dev, what));
  };
  if (pages_.mapped_bytes() > options_.limit) {
    fail(fmt::format("{} bytes mapped, above the limit {}", pages_.mapped_bytes(), options_.limit));
  }
  // The pages live chunks touch, as a map of the same range: then cached == mapped & ~touched is
  // compared a word at a time (a per-page loop made the million-operation stress test 3x slower).
  PageMap touched;
  touched.Reset(expandable_region_->base, expandable_region_->max_size, pages_.page_bytes());
  for (const Chunk* chunk = expandable_region_->first; chunk != nullptr; chunk = chunk->next) {
    if (!chunk->in_use()) continue;
    // From the bitmap itself, not Covers (whose mapped-prefix shortcut is what is checked below).
    if (!pages_.bits().AllSet(pages_.FirstPage(chunk->address), pages_.EndPage(chunk->address, chunk->size))) {
      fail(fmt::format("live chunk {:#x} ({} bytes) lies on an unmapped page", chunk->address, chunk->size));
    }
    touched.Set(pages_.FirstPage(chunk->address), pages_.EndPage(chunk->address, chunk->size));
  }
  // The mapped prefix that Covers trusts is exact: every page below it mapped, the page at it not.
  const std::uint64_t prefix = pages_.mapped_prefix();
  if (pages_.bits().Next(0, prefix, false) != prefix || (prefix < pages_.pages() && pages_.IsMapped(prefix))) {
    fail(fmt::format("the mapped prefix ends at page {}, but the first unmapped page is {}", prefix,
                     pages_.bits().Next(0, pages_.pages(), false)));
  }
  const std::uint64_t end = pages_.high_water();
  if (const std::uint64_t p = cached_.Next(end, cached_.capacity(), true); p != cached_.capacity()) {
    fail(fmt::format("page {} is cached, above the highest mapped page {}", p, end));
  }
  if (const std::uint64_t p = cached_.FirstMismatch(pages_.bits(), touched.bits(), end); p != end) {
    fail(fmt::format("page {:#x} is {}cached but {}", pages_.AddressOf(p), cached_.Test(p) ? "" : "not ",
                     !pages_.IsMapped(p) ? "unmapped" : touched.IsMapped(p) ? "a live chunk touches it" : "mapped and free"));
  }
  // unmap=eager: mapped pages are exactly the touched ones (none cached).
  if (const std::uint64_t cached = cached_.CountSet(0, end); unmap_eager_ && options_.preallocate_bytes == 0 && cached != 0) {
    fail(fmt::format("unmap=eager keeps {} pages mapped with no live chunk on them", cached));
  }
}

}  // namespace fragscope::bfc
