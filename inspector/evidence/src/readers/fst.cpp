// fragscope's own trace files (.fst, docs/trace-format.md): read block by block from disk, or from
// a stream's copy in memory.
#include <span>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::evidence::readers {
namespace {

class FstInput final : public EvidenceInput {
 public:
  FstInput(const std::string& path, const traces::ReadLimits& limits) : reader_(path, limits) {}
  // A trace held in memory (read from a stream); `bytes` stays alive with the input.
  FstInput(const std::string& name, std::shared_ptr<const std::string> bytes, const traces::ReadLimits& limits)
      : bytes_(std::move(bytes)),
        reader_(std::span(reinterpret_cast<const std::uint8_t*>(bytes_->data()), bytes_->size()), name, limits) {}
  const traces::TraceHeader& header() const override { return reader_.header(); }
  const std::vector<std::string>& tags() const override { return reader_.tags(); }
  const std::vector<std::string>& warnings() const override { return reader_.warnings(); }
  std::uint64_t bytes_total() const override { return reader_.file_size(); }
  std::uint64_t bytes_done() const override { return reader_.offset(); }

 protected:
  bool ReadBlock(std::vector<traces::Event>* events) override { return reader_.NextBlock(events); }

 private:
  std::shared_ptr<const std::string> bytes_;  // before reader_: it reads them
  traces::TraceReader reader_;
};

}  // namespace

Reader FstReader() {
  return {
      .name = "fragscope trace",
      .description = "fragscope trace (.fst)",
      .sniff = [](std::string_view head) {
        return head.size() >= 4 && static_cast<unsigned char>(head[0]) == 0x89 && head.substr(1, 3) == "FST";
      },
      .open = [](const Source& source, const traces::ReadLimits& limits) -> std::unique_ptr<EvidenceInput> {
        if (source.is_file()) return std::make_unique<FstInput>(source.file_path(), limits);
        return std::make_unique<FstInput>(source.name(), source.shared_bytes(), limits);
      },
  };
}

}  // namespace fragscope::evidence::readers
