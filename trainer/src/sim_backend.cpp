// The sim backend: no arithmetic and no data, the allocation schedule of `cpu` (layers allocate,
// backends only compute, and this one asks for the cpu backend's workspaces). Memory comes from the
// allocator's `sim` backing, whose addresses are never dereferenced.
#include "sim_backend.hpp"

namespace fragscope::trainer {

std::uint64_t SimBackend::ConvWorkspaceBytes(const ConvGeom& g, ConvPass) {
  return Im2colWorkspaceBytes(g);
}

}  // namespace fragscope::trainer
