// A recorded paging OOM in pages (recorded_pages.hpp). The same facts as the allocator's
// StrandedPages and FewestNewPages (allocator/src/bfc_paging.cpp), computed from a trace's state:
// the mapped pieces of each address range, and the live chunks on them.
#include "recorded_pages.hpp"

#include <algorithm>
#include <bit>

#include "fragscope/allocator/paging.hpp"

namespace fragscope::analysis {
namespace {

constexpr std::uint64_t kGranularity = std::uint64_t{2} << 20;  // every backing maps 2 MiB pages

struct Piece {
  std::uint64_t begin = 0, end = 0;
};

// Bytes of [begin, end) that `mapped` (sorted, disjoint) covers.
std::uint64_t MappedBytesIn(const std::vector<Piece>& mapped, std::uint64_t begin, std::uint64_t end) {
  auto it = std::upper_bound(mapped.begin(), mapped.end(), begin,
                             [](std::uint64_t a, const Piece& p) { return a < p.end; });
  std::uint64_t bytes = 0;
  for (; it != mapped.end() && it->begin < end; ++it) {
    bytes += std::min(end, it->end) - std::max(begin, it->begin);
  }
  return bytes;
}

}  // namespace

std::uint64_t RecordedPageBytes(std::uint64_t map_gcd, bool fragscope_trace, std::uint64_t limit) {
  if (map_gcd == 0) return 0;
  std::uint64_t page = map_gcd & (~map_gcd + 1);  // its lowest set bit
  if (fragscope_trace && limit != 0) page = std::min(page, PagingPageBytes(kGranularity, limit));
  return page;
}

std::optional<PageFacts> PageFactsAt(const MemoryState& state,
                                     const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spaces,
                                     std::uint64_t page_bytes, std::uint64_t rounded) {
  if (page_bytes == 0 || !std::has_single_bit(page_bytes) || spaces.empty()) return std::nullopt;
  PageFacts facts;
  facts.page_bytes = page_bytes;
  bool paging = false;
  bool fits_somewhere = false;
  std::uint64_t fewest = UINT64_MAX;
  for (const auto& [base, size] : spaces) {
    const std::uint64_t end = base + size;
    std::vector<Piece> mapped;
    std::vector<const LiveChunk*> chunks;
    for (const RegionState& region : state.regions) {
      if (region.address < base || region.address - base > size || region.size > end - region.address) continue;
      mapped.push_back({region.address, region.address + region.size});
      for (const LiveChunk& chunk : region.chunks) chunks.push_back(&chunk);
    }
    if (mapped.empty()) continue;
    paging = true;
    const auto page_of = [&](std::uint64_t address) { return (address - base) / page_bytes; };

    // Stranded: the free bytes of the pages that live chunks touch (chunks are by address and
    // disjoint, so the pages they touch come in order).
    std::uint64_t current = UINT64_MAX, covered = 0;
    const auto close_page = [&] {
      if (current != UINT64_MAX && covered < page_bytes) {
        facts.stranded_bytes += page_bytes - covered;
        ++facts.partly_used_pages;
      }
    };
    const auto add = [&](std::uint64_t p, std::uint64_t bytes) {
      if (p != current) {
        close_page();
        current = p;
        covered = 0;
      }
      covered += bytes;
    };
    for (const LiveChunk* chunk : chunks) {
      if (chunk->size == 0) continue;
      const std::uint64_t chunk_end = chunk->address + chunk->size;
      const std::uint64_t first = page_of(chunk->address), last = page_of(chunk_end - 1);
      if (first == last) {
        add(first, chunk->size);
      } else {  // the pages between are wholly the chunk's: nothing of them is free
        add(first, base + (first + 1) * page_bytes - chunk->address);
        add(last, chunk_end - (base + last * page_bytes));
      }
    }
    close_page();

    // The placement that needs the fewest new pages: at the front or back of each free range of
    // the address space that is long enough, or at the start of a mapped piece inside it.
    const auto new_pages = [&](std::uint64_t address) {
      const std::uint64_t first = base + page_of(address) * page_bytes;
      const std::uint64_t last = base + (page_of(address + rounded - 1) + 1) * page_bytes;
      return (last - first - MappedBytesIn(mapped, first, last)) / page_bytes;
    };
    std::uint64_t gap_begin = base;
    for (std::size_t i = 0; i <= chunks.size(); ++i) {
      const std::uint64_t gap_end = i < chunks.size() ? chunks[i]->address : end;
      if (gap_end >= gap_begin && gap_end - gap_begin >= rounded && rounded != 0) {
        fits_somewhere = true;
        const auto consider = [&](std::uint64_t address) {
          if (address >= gap_begin && address <= gap_end - rounded) fewest = std::min(fewest, new_pages(address));
        };
        consider(gap_begin);
        consider(gap_end - rounded);
        auto it = std::upper_bound(mapped.begin(), mapped.end(), gap_begin,
                                   [](std::uint64_t a, const Piece& p) { return a < p.end; });
        for (; it != mapped.end() && it->begin < gap_end && fewest != 0; ++it) {
          consider(std::max(gap_begin, it->begin));
        }
      }
      if (i < chunks.size()) gap_begin = std::max(gap_begin, chunks[i]->address + chunks[i]->size);
    }
  }
  if (!paging) return std::nullopt;
  facts.address_space_exhausted = !fits_somewhere;
  facts.new_pages_needed = fits_somewhere ? fewest : 0;
  return facts;
}

}  // namespace fragscope::analysis
