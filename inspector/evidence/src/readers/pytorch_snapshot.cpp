// PyTorch memory snapshots (torch.cuda.memory._dump_snapshot pickles), read whole by
// traces::ReadPytorchSnapshot (docs/importers.md).
#include <span>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"

namespace fragscope::evidence::readers {

Reader PytorchSnapshotReader() {
  return {
      .name = "PyTorch memory snapshot",
      .description = "PyTorch memory snapshot (torch.cuda.memory._dump_snapshot)",
      .sniff = [](std::string_view head) {
        return traces::LooksLikePytorchSnapshot(
            std::span(reinterpret_cast<const std::uint8_t*>(head.data()), head.size()));
      },
      .open = [](const Source& source, const traces::ReadLimits& limits) {
        const std::string_view bytes = source.bytes();
        return InputFromTrace(traces::ReadPytorchSnapshot(
            std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), source.name(), limits));
      },
  };
}

}  // namespace fragscope::evidence::readers
