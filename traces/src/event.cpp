#include "fragscope/traces/event.hpp"

namespace fragscope::traces {

std::string_view ToString(EventType type) {
  switch (type) {
    case EventType::kAlloc: return "alloc";
    case EventType::kFree: return "free";
    case EventType::kRegionReserve: return "region_reserve";
    case EventType::kRegionRelease: return "region_release";
    case EventType::kOom: return "oom";
    case EventType::kMarker: return "marker";
  }
  return "unknown";
}

std::string_view ToString(OomCause cause) {
  switch (cause) {
    case OomCause::kCapacity: return "capacity";
    case OomCause::kFragmentation: return "fragmentation";
    case OomCause::kBacking: return "backing";
    case OomCause::kRequestTooLarge: return "request-too-large";
  }
  return "unknown";
}

OomCause ClassifyOom(const OomRecord& n, bool backing_refused) {
  if (n.rounded > n.limit) return OomCause::kRequestTooLarge;
  if (n.in_use + n.rounded > n.limit) return OomCause::kCapacity;
  if (backing_refused) return OomCause::kBacking;
  // Here in_use + rounded <= limit, so free_in_regions + headroom >= rounded: enough bytes in
  // total, none of them contiguous enough.
  return OomCause::kFragmentation;
}

}  // namespace fragscope::traces
