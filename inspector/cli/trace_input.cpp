#include "trace_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <span>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "fragscope/traces/jsonl.hpp"
#include "fragscope/traces/prefetched_blocks.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"
#include "fragscope/traces/rmm_csv.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::cli {
namespace {

// Process-wide: the limits of the command line and what is being read (for messages about
// failures anywhere, out of host memory above all).
std::mutex g_mutex;
traces::ReadLimits g_limits;
std::optional<InputActivity> g_activity;
// Streams read whole (standard input, pipes), by name: a command that opens its trace twice gets
// the same bytes again.
std::map<std::string, std::shared_ptr<const std::string>> g_streams;

void SetActivity(const InputActivity& activity) {
  std::lock_guard lock(g_mutex);
  g_activity = activity;
}

template <typename F>
void UpdateActivity(const std::string& path, F&& update) {
  std::lock_guard lock(g_mutex);
  if (g_activity && g_activity->path == path) update(*g_activity);
}

class FstInput final : public TraceInput {
 public:
  FstInput(const std::string& path, const traces::ReadLimits& limits) : reader_(path, limits) {
    path_ = path;
    format_ = "fragscope trace";
    limits_ = limits;
  }
  // A trace held in memory (read from a stream); `bytes` stays alive with the input.
  FstInput(const std::string& name, std::shared_ptr<const std::string> bytes, const traces::ReadLimits& limits)
      : bytes_(std::move(bytes)),
        reader_(std::span(reinterpret_cast<const std::uint8_t*>(bytes_->data()), bytes_->size()), name, limits) {
    path_ = name;
    format_ = "fragscope trace";
    limits_ = limits;
  }
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
  const std::vector<std::string>& warnings() const override { return trace_.warnings; }
  std::uint64_t bytes_total() const override { return trace_.events.size(); }
  std::uint64_t bytes_done() const override { return next_; }
  const std::vector<std::string>& stacks() const override { return trace_.stacks; }
  const std::vector<std::uint32_t>& event_stacks() const override { return trace_.event_stacks; }

 protected:
  bool ReadBlock(std::vector<traces::Event>* events) override {
    constexpr std::size_t kBlock = 65536;
    if (next_ >= trace_.events.size()) return false;
    const std::size_t end = std::min(trace_.events.size(), next_ + kBlock);
    events->assign(trace_.events.begin() + static_cast<long>(next_), trace_.events.begin() + static_cast<long>(end));
    next_ = end;
    return true;
  }

 private:
  traces::Trace trace_;
  std::size_t next_ = 0;
};

std::string ReadAll(int fd, const std::string& name) {
  std::string out;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      throw traces::TraceError(name, out.size(), fmt::format("read failed: {}", std::strerror(errno)));
    }
    if (got == 0) break;
    out.append(buffer.data(), static_cast<std::size_t>(got));
  }
  return out;
}

// A stream (standard input, a pipe, a character device) read whole, once per name.
std::shared_ptr<const std::string> StreamBytes(const std::string& path, const std::string& name) {
  {
    std::lock_guard lock(g_mutex);
    if (auto it = g_streams.find(path); it != g_streams.end()) return it->second;
  }
  std::shared_ptr<const std::string> bytes;
  if (path == "-") {
    bytes = std::make_shared<const std::string>(ReadAll(STDIN_FILENO, name));
  } else {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw traces::TraceError(name, fmt::format("cannot open: {}", std::strerror(errno)));
    try {
      bytes = std::make_shared<const std::string>(ReadAll(fd, name));
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }
  std::lock_guard lock(g_mutex);
  return g_streams.emplace(path, std::move(bytes)).first->second;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw traces::TraceError(path, fmt::format("cannot open: {}", std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw traces::TraceError(path, fmt::format("read failed: {}", std::strerror(errno)));
  return std::move(buffer).str();
}

// The formats fragscope reads, told apart by the first bytes (a megabyte: a TF dump may follow
// pages of log).
enum class Format { kFst, kPytorch, kJsonl, kRmm, kTf };

Format Sniff(std::string_view all, const std::string& name) {
  const std::string_view head = all.substr(0, std::min<std::size_t>(all.size(), 1 << 20));
  if (head.empty()) throw traces::TraceError(name, 0, "the file is empty");
  const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(head.data()), head.size());
  if (head.size() >= 4 && static_cast<unsigned char>(head[0]) == 0x89 && head.substr(1, 3) == "FST") {
    return Format::kFst;
  }
  if (traces::LooksLikePytorchSnapshot(bytes)) return Format::kPytorch;
  std::size_t first = 0;
  while (first < head.size() && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
  if (first < head.size() && head[first] == '{') return Format::kJsonl;
  if (traces::LooksLikeRmmCsv(head)) return Format::kRmm;
  if (traces::LooksLikeTfBfcLog(head)) return Format::kTf;
  throw traces::TraceError(
      name, 0,
      "unknown format: not a fragscope trace (.fst), JSON Lines, PyTorch memory snapshot "
      "(torch.cuda.memory._dump_snapshot), RMM CSV log or TensorFlow BFC OOM log");
}

const char* FormatName(Format format) {
  switch (format) {
    case Format::kFst: return "fragscope trace";
    case Format::kPytorch: return "PyTorch memory snapshot";
    case Format::kJsonl: return "JSON Lines";
    case Format::kRmm: return "RMM log (CSV)";
    case Format::kTf: return "TensorFlow BFC log";
  }
  return "";
}

// A format read whole, from its text in memory.
traces::Trace Import(Format format, std::string_view text, const std::string& name,
                     const traces::ReadLimits& limits) {
  switch (format) {
    case Format::kPytorch:
      return traces::ReadPytorchSnapshot(
          std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), name, limits);
    case Format::kJsonl: return traces::ParseJsonl(text, name, limits);
    case Format::kRmm: return traces::ParseRmmCsv(text, name, limits);
    case Format::kTf:
      // One line or more per event (a dump's chunks; its frees of the dump before): never more
      // events than bytes. The event cap is checked as the blocks are read. A number the dump
      // cannot be read without is an error naming its line (ParseTfBfcLogToTrace).
      return traces::ParseTfBfcLogToTrace(text, name);
    case Format::kFst: break;
  }
  throw traces::TraceError(name, 0, "internal: not a format read whole");
}

}  // namespace

std::string InputActivity::Describe() const {
  if (events > 0) {
    return fmt::format("{} events on {} device{}{}", events, devices, devices == 1 ? "" : "s",
                       reading ? " so far" : "");
  }
  return fmt::format("{} of {} bytes", format.empty() ? "an input" : "a " + format, file_bytes);
}

const std::vector<std::string> TraceInput::kNoStacks;
const std::vector<std::uint32_t> TraceInput::kNoEventStacks;

void TraceInput::SetDefaultLimits(const traces::ReadLimits& limits) {
  std::lock_guard lock(g_mutex);
  g_limits = limits;
}

traces::ReadLimits TraceInput::DefaultLimits() {
  std::lock_guard lock(g_mutex);
  return g_limits;
}

std::optional<InputActivity> TraceInput::CurrentActivity() {
  std::lock_guard lock(g_mutex);
  return g_activity;
}

std::unique_ptr<TraceInput> TraceInput::Open(const std::string& path) { return Open(path, DefaultLimits()); }

std::unique_ptr<TraceInput> TraceInput::Open(const std::string& path, const traces::ReadLimits& limits) {
  const std::string name = path == "-" ? "<stdin>" : path;
  InputActivity activity;
  activity.path = name;
  SetActivity(activity);

  // Regular files are read from disk (a .fst block by block); anything else that can be read —
  // standard input, a pipe, /dev/stdin, a character device — is read whole into memory once.
  std::shared_ptr<const std::string> stream;
  std::string text;  // a regular file of a format read whole
  std::optional<Format> format;
  if (path != "-") {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) throw traces::TraceError(path, 0, "cannot open the file (does it exist?)");
      throw traces::TraceError(path, fmt::format("cannot open: {}", std::strerror(errno)));
    }
    if (S_ISDIR(st.st_mode)) throw traces::TraceError(path, "is a directory");
    if (S_ISREG(st.st_mode)) {
      std::ifstream file(path, std::ios::binary);
      if (!file) throw traces::TraceError(path, fmt::format("cannot open: {}", std::strerror(errno)));
      std::string head(1 << 20, '\0');
      file.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<std::size_t>(file.gcount()));
      format = Sniff(head, name);
      UpdateActivity(name, [&](InputActivity& a) {
        a.format = FormatName(*format);
        a.file_bytes = static_cast<std::uint64_t>(st.st_size);
      });
      if (*format == Format::kFst) return std::make_unique<FstInput>(path, limits);
      text = ReadFile(path);
    }
  }
  if (!format) {
    stream = StreamBytes(path, name);
    format = Sniff(*stream, name);
    UpdateActivity(name, [&](InputActivity& a) {
      a.format = FormatName(*format);
      a.file_bytes = stream->size();
    });
    if (*format == Format::kFst) return std::make_unique<FstInput>(name, stream, limits);
  }
  const std::string_view bytes = stream ? std::string_view(*stream) : std::string_view(text);
  auto input = std::make_unique<InMemoryInput>(name, FormatName(*format), Import(*format, bytes, name, limits));
  input->limits_ = limits;
  return input;
}

bool TraceInput::NextBlock(std::vector<traces::Event>* events) {
  const bool more = ReadBlock(events);
  if (!more) {
    UpdateActivity(path_, [](InputActivity& a) { a.reading = false; });
    return false;
  }
  events_ += events->size();
  if (events_ > limits_.max_events) {
    throw traces::TraceError(path_, traces::TooManyEventsMessage(events_, "read so far", 0, 1, limits_));
  }
  // Every reader checks its sizes where it parses them; this is the one check for all of them
  // (an importer that builds events from a state, say), naming the file and the event.
  for (const traces::Event& e : *events) {
    if (const char* problem = traces::EventSizeProblem(e)) {
      throw traces::TraceError(path_, fmt::format("event {} ({}, device {}, {} bytes at {:#x}): {}", e.seq,
                                                  traces::ToString(e.type), e.device, e.size, e.address,
                                                  problem));
    }
  }
  for (const traces::Event& e : *events) {
    if (any_device_ && e.device == last_device_) continue;
    any_device_ = true;
    last_device_ = e.device;
    if (devices_.contains(e.device)) continue;
    if (devices_.size() >= limits_.max_devices) {
      throw traces::TraceError(
          path_, traces::TooManyDevicesMessage(devices_.size() + 1,
                                               fmt::format("device {} at event {} is one more", e.device, e.seq),
                                               limits_));
    }
    devices_.insert(e.device);
  }
  UpdateActivity(path_, [&](InputActivity& a) {
    a.events = events_;
    a.devices = devices_.size();
  });
  return true;
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
