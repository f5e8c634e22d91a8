#include "fragscope/traces/trace_header.hpp"

namespace fragscope::traces {

std::string_view ToString(EvidenceKind kind) {
  switch (kind) {
    case EvidenceKind::kHistory: return "history";
    case EvidenceKind::kState: return "state";
    case EvidenceKind::kMessage: return "message";
  }
  return "history";
}

std::optional<EvidenceKind> ParseEvidenceKind(std::string_view text) {
  for (EvidenceKind kind : {EvidenceKind::kHistory, EvidenceKind::kState, EvidenceKind::kMessage}) {
    if (ToString(kind) == text) return kind;
  }
  return std::nullopt;
}

bool IsForeignHostMemory(const DeviceDescription& device) {
  return std::string_view(device.backing).ends_with("host memory");
}

std::vector<std::uint32_t> TraceHeader::ForeignHostDevices() const {
  std::vector<std::uint32_t> indices;
  for (const DeviceDescription& device : devices) {
    if (IsForeignHostMemory(device)) indices.push_back(device.index);
  }
  return indices;
}

}  // namespace fragscope::traces
