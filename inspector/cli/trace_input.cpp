#include "trace_input.hpp"

#include "fragscope/traces/prefetched_blocks.hpp"

#include <cctype>
#include <fstream>
#include <span>

#include <fmt/format.h>

#include "fragscope/traces/jsonl.hpp"
#include "fragscope/traces/prefetched_blocks.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"
#include "fragscope/traces/rmm_csv.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::cli {
namespace {

class FstInput final : public TraceInput {
 public:
  explicit FstInput(const std::string& path) : reader_(path) {
    path_ = path;
    format_ = "fragscope trace";
  }
  const traces::TraceHeader& header() const override { return reader_.header(); }
  const std::vector<std::string>& tags() const override { return reader_.tags(); }
  bool NextBlock(std::vector<traces::Event>* events) override { return reader_.NextBlock(events); }
  const std::vector<std::string>& warnings() const override { return reader_.warnings(); }
  std::uint64_t bytes_total() const override { return reader_.file_size(); }
  std::uint64_t bytes_done() const override { return reader_.offset(); }

 private:
  traces::TraceReader reader_;
};

// A whole trace read up front (formats without blocks), handed out in blocks.
class InMemoryInput final : public TraceInput {
 public:
  InMemoryInput(const std::string& path, std::string format, traces::Trace trace)
      : trace_(std::move(trace)) {
    path_ = path;
    format_ = std::move(format);
  }
  const traces::TraceHeader& header() const override { return trace_.header; }
  const std::vector<std::string>& tags() const override { return trace_.tags; }
  bool NextBlock(std::vector<traces::Event>* events) override {
    constexpr std::size_t kBlock = 65536;
    if (next_ >= trace_.events.size()) return false;
    const std::size_t end = std::min(trace_.events.size(), next_ + kBlock);
    events->assign(trace_.events.begin() + static_cast<long>(next_), trace_.events.begin() + static_cast<long>(end));
    next_ = end;
    return true;
  }
  const std::vector<std::string>& warnings() const override { return trace_.warnings; }
  std::uint64_t bytes_total() const override { return trace_.events.size(); }
  std::uint64_t bytes_done() const override { return next_; }
  const std::vector<std::string>& stacks() const override { return trace_.stacks; }
  const std::vector<std::uint32_t>& event_stacks() const override { return trace_.event_stacks; }

 private:
  traces::Trace trace_;
  std::size_t next_ = 0;
};

}  // namespace

const std::vector<std::string> TraceInput::kNoStacks;
const std::vector<std::uint32_t> TraceInput::kNoEventStacks;

std::unique_ptr<TraceInput> TraceInput::Open(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw traces::TraceError(path, 0, "cannot open the file (does it exist?)");
  // Enough of the start of the file for every detector (a TF dump may follow pages of log).
  std::string head(1 << 20, '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(file.gcount()));
  if (head.empty()) throw traces::TraceError(path, 0, "the file is empty");
  const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(head.data()), head.size());

  if (head.size() >= 4 && static_cast<unsigned char>(head[0]) == 0x89 && head.compare(1, 3, "FST") == 0) {
    return std::make_unique<FstInput>(path);
  }
  if (traces::LooksLikePytorchSnapshot(bytes)) {
    return std::make_unique<InMemoryInput>(path, "PyTorch memory snapshot", traces::ReadPytorchSnapshot(path));
  }
  std::size_t first = 0;
  while (first < head.size() && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
  if (first < head.size() && head[first] == '{') {
    return std::make_unique<InMemoryInput>(path, "JSON Lines", traces::ReadJsonl(path));
  }
  if (traces::LooksLikeRmmCsv(head)) {
    return std::make_unique<InMemoryInput>(path, "RMM log (CSV)", traces::ReadRmmCsv(path));
  }
  if (traces::LooksLikeTfBfcLog(head)) {
    return std::make_unique<InMemoryInput>(path, "TensorFlow BFC log", traces::ReadTfBfcLog(path));
  }
  throw traces::TraceError(
      path, 0,
      "unknown format: not a fragscope trace (.fst), JSON Lines, PyTorch memory snapshot "
      "(torch.cuda.memory._dump_snapshot), RMM CSV log or TensorFlow BFC OOM log");
}

analysis::BlockSource TraceInput::Blocks(const analysis::Progress& progress,
                                         const BlockObserver& observer) {
  // A BlockSource is copyable; the prefetcher (a thread) is shared by the copies and joined
  // when the last one goes.
  auto prefetched = std::make_shared<traces::PrefetchedBlocks>(
      [this, progress, observer](std::vector<traces::Event>* events) {
        const bool more = NextBlock(events);
        if (more && observer) observer(*events);
        if (progress) progress(bytes_done(), bytes_total());
        return more;
      });
  return [prefetched](std::vector<traces::Event>* events) { return prefetched->Next(events); };
}

}  // namespace fragscope::cli
