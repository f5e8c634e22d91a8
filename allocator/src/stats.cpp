#include "fragscope/allocator/stats.hpp"

#include <fmt/format.h>

#include "fragscope/allocator/size.hpp"

namespace fragscope {

double ExternalFragmentation(std::uint64_t largest_free, std::uint64_t free_total) {
  if (free_total == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free) / static_cast<double>(free_total);
}

double Utilization(std::uint64_t in_use, std::uint64_t reserved) {
  if (reserved == 0) return 1.0;
  return static_cast<double>(in_use) / static_cast<double>(reserved);
}

double AllocatorStats::external_fragmentation() const {
  return ExternalFragmentation(largest_free, free_in_regions());
}

double AllocatorStats::utilization() const { return Utilization(in_use, reserved); }

std::string AllocatorStats::Describe() const {
  std::string out;
  auto row = [&out](std::string_view name, const std::string& now, const std::string& peak) {
    out += fmt::format("  {:<22} {:>14} {:>14}\n", name, now, peak);
  };
  row("", "current", "peak");
  row("in use", FormatBytes(in_use), FormatBytes(peak_in_use));
  row("reserved", FormatBytes(reserved), FormatBytes(peak_reserved));
  row("live requested (LOAD)", FormatBytes(live_requested), FormatBytes(peak_live_requested));
  row("allocations", fmt::format("{}", allocations), fmt::format("{}", peak_allocations));
  row("regions", fmt::format("{}", regions), fmt::format("{}", peak_regions));
  row("address space", FormatBytes(address_space), FormatBytes(peak_address_space));
  row("largest free chunk", FormatBytes(largest_free), FormatBytes(peak_largest_free));
  row("high water in a region", "", FormatBytes(peak_high_water));
  row("free in regions", FormatBytes(free_in_regions()), "");
  row("internal waste", FormatBytes(internal_waste()), "");
  row("limit", FormatBytes(limit), "");
  row("utilization", fmt::format("{:.3f}", utilization()), "");
  row("external fragmentation", fmt::format("{:.3f}", external_fragmentation()), "");
  out += fmt::format("  {} allocs, {} frees, {} OOMs, {} region reserves, {} releases, {} maps, {} unmaps, {} gc runs\n",
                     total_allocs, total_frees, total_ooms, region_reserves, region_releases, maps, unmaps, gc_runs);
  return out;
}

}  // namespace fragscope
