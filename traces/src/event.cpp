#include "fragscope/traces/event.hpp"

#include <algorithm>

#include "fragscope/traces/byte_math.hpp"

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
    case OomCause::kUnknown: return "unknown";
  }
  return "";
}

bool IsKnownCause(OomCause cause) { return !ToString(cause).empty(); }

OomCause ClassifyOom(const OomRecord& n, bool backing_refused) {
  if (n.rounded > n.limit) return OomCause::kRequestTooLarge;
  // rounded <= limit here, so limit - rounded cannot wrap (in_use + rounded could, on evidence).
  if (n.in_use > n.limit - n.rounded) return OomCause::kCapacity;
  if (backing_refused) return OomCause::kBacking;
  // Here in_use + rounded <= limit, so free_in_regions + headroom >= rounded: enough bytes in
  // total, none of them contiguous enough.
  return OomCause::kFragmentation;
}

const char* EventSizeProblem(const Event& e) {
  switch (e.type) {
    case EventType::kAlloc:
    case EventType::kFree:
    case EventType::kRegionReserve:
    case EventType::kRegionRelease:
      break;
    default:
      return nullptr;
  }
  if (!IsRepresentableSize(e.size) || !IsRepresentableSize(e.rounded)) {
    return "size over 4 EiB, the largest size fragscope represents";
  }
  if (!CheckedAdd(e.address, std::max(e.size, e.rounded))) {
    return "address range runs past the end of the 64-bit address space";
  }
  return nullptr;
}

}  // namespace fragscope::traces
