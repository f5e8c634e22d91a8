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
    case EventType::kAddressReserve: return "address_reserve";
    case EventType::kAddressRelease: return "address_release";
    case EventType::kMap: return "map";
    case EventType::kUnmap: return "unmap";
  }
  return "unknown";
}

bool IsKnownEventType(EventType type) {
  return type >= EventType::kAlloc && type <= kLastEventType;
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
  // A request no device can hold is too large whatever else the evidence lacks.
  if (n.Has(kOomRounded) && !IsRepresentableSize(n.rounded)) return OomCause::kRequestTooLarge;
  // Without the limit, the request or the live bytes, capacity and fragmentation cannot be told
  // apart: an absent number is not a 0.
  if (!n.Has(kOomRounded | kOomLimit | kOomInUse)) return OomCause::kUnknown;
  if (n.rounded > n.limit) return OomCause::kRequestTooLarge;
  // rounded <= limit here, so limit - rounded cannot wrap (in_use + rounded could, on evidence).
  if (n.in_use > n.limit - n.rounded) return OomCause::kCapacity;
  if (backing_refused) return OomCause::kBacking;
  // Here in_use + rounded <= limit, so free_in_regions + headroom >= rounded: enough bytes in
  // total, none of them contiguous enough.
  return OomCause::kFragmentation;
}

const char* EventSizeProblemSlow(const Event& e) {
  switch (e.type) {
    case EventType::kAlloc:
    case EventType::kFree:
    case EventType::kRegionReserve:
    case EventType::kRegionRelease:
    case EventType::kAddressReserve:
    case EventType::kAddressRelease:
    case EventType::kMap:
    case EventType::kUnmap:
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
