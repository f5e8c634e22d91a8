#include "fragscope/evidence/evidence_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/prefetched_blocks.hpp"
#include "fragscope/evidence/text_encoding.hpp"

namespace fragscope::evidence {
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

// A whole trace read up front (formats without blocks), handed out in blocks.
class InMemoryInput final : public EvidenceInput {
 public:
  InMemoryInput(traces::Trace trace, std::vector<traces::OomMessage> messages)
      : trace_(std::move(trace)), messages_(std::move(messages)) {}
  const traces::TraceHeader& header() const override { return trace_.header; }
  const std::vector<std::string>& tags() const override { return trace_.tags; }
  const std::vector<std::string>& warnings() const override { return trace_.warnings; }
  std::uint64_t bytes_total() const override { return trace_.events.size(); }
  std::uint64_t bytes_done() const override { return next_; }
  const std::vector<std::string>& stacks() const override { return trace_.stacks; }
  const std::vector<std::uint32_t>& event_stacks() const override { return trace_.event_stacks; }
  const std::vector<traces::OomMessage>& messages() const override { return messages_; }

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
  std::vector<traces::OomMessage> messages_;
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

// The first registered reader that recognizes `head` (the first kSniffBytes bytes at most).
std::optional<Reader> FindReader(std::string_view head) {
  head = head.substr(0, std::min(head.size(), kSniffBytes));
  for (Reader& reader : Readers()) {
    if (reader.sniff(head)) return std::move(reader);
  }
  return std::nullopt;
}

Reader Sniff(std::string_view head, const std::string& name) {
  if (head.empty()) throw traces::TraceError(name, 0, "the file is empty");
  if (auto reader = FindReader(head)) return std::move(*reader);
  throw traces::TraceError(name, 0, UnknownFormatMessage());
}

// What the first bytes are: text to decode first (text_encoding.hpp: UTF-16 from Windows
// PowerShell, a UTF-8 byte-order mark), or the reader that recognized them as they are. A
// byte-order mark decides; without one, bytes no reader recognizes are decoded when they look like
// UTF-16, so a binary format is never taken for text.
struct Recognized {
  std::optional<TextEncoding> encoding;
  std::optional<Reader> reader;  // when not to decode; nullopt: no reader knows the bytes
};

Recognized Recognize(std::string_view head) {
  if (auto marked = EncodingByMark(head)) return {marked, std::nullopt};
  if (head.empty()) return {};
  auto reader = FindReader(head);
  if (reader) return {std::nullopt, std::move(reader)};
  return {Utf16WithoutMark(head), std::nullopt};
}

}  // namespace

Source Source::File(std::string path, std::uint64_t size) {
  Source source;
  source.name_ = path;
  source.path_ = std::move(path);
  source.size_ = size;
  return source;
}

Source Source::Stream(std::string name, std::shared_ptr<const std::string> bytes) {
  Source source;
  source.name_ = std::move(name);
  source.size_ = bytes->size();
  source.bytes_ = std::move(bytes);
  return source;
}

std::shared_ptr<const std::string> Source::shared_bytes() const {
  if (bytes_ == nullptr) bytes_ = std::make_shared<const std::string>(ReadFile(path_));
  return bytes_;
}

std::string InputActivity::Describe() const {
  if (events > 0) {
    return fmt::format("{} events on {} device{}{}", events, devices, devices == 1 ? "" : "s",
                       reading ? " so far" : "");
  }
  return fmt::format("{} of {} bytes", format.empty() ? "an input" : "a " + format, file_bytes);
}

const std::vector<std::string> EvidenceInput::kNoStacks;
const std::vector<std::uint32_t> EvidenceInput::kNoEventStacks;

std::unique_ptr<EvidenceInput> InputFromTrace(traces::Trace trace, std::vector<traces::OomMessage> messages) {
  return std::make_unique<InMemoryInput>(std::move(trace), std::move(messages));
}

void EvidenceInput::SetDefaultLimits(const traces::ReadLimits& limits) {
  std::lock_guard lock(g_mutex);
  g_limits = limits;
}

traces::ReadLimits EvidenceInput::DefaultLimits() {
  std::lock_guard lock(g_mutex);
  return g_limits;
}

std::optional<InputActivity> EvidenceInput::CurrentActivity() {
  std::lock_guard lock(g_mutex);
  return g_activity;
}

std::unique_ptr<EvidenceInput> EvidenceInput::Open(const std::string& path) { return Open(path, DefaultLimits()); }

std::unique_ptr<EvidenceInput> EvidenceInput::Open(const std::string& path, const traces::ReadLimits& limits) {
  const std::string name = path == "-" ? "<stdin>" : path;
  InputActivity activity;
  activity.path = name;
  SetActivity(activity);

  // Regular files are sniffed from their first bytes on disk and opened by path (a .fst is then
  // read block by block); anything else that can be read — standard input, a pipe, /dev/stdin, a
  // character device — is read whole into memory once.
  std::optional<Source> source;
  std::optional<Reader> reader;
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
      std::string head(kSniffBytes, '\0');
      file.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<std::size_t>(file.gcount()));
      Recognized recognized = Recognize(head);
      if (recognized.encoding) {
        // Decoded whole, once: the readers of text formats read the whole input anyway.
        auto text = std::make_shared<const std::string>(DecodeToUtf8(ReadFile(path), *recognized.encoding, name));
        reader = Sniff(*text, name);
        source = Source::Stream(name, std::move(text));
      } else {
        reader = recognized.reader ? std::move(recognized.reader) : Sniff(head, name);
        source = Source::File(path, static_cast<std::uint64_t>(st.st_size));
      }
    }
  }
  if (!source) {
    auto stream = StreamBytes(path, name);
    Recognized recognized = Recognize(*stream);
    if (recognized.encoding) {
      stream = std::make_shared<const std::string>(DecodeToUtf8(*stream, *recognized.encoding, name));
      recognized.reader = Sniff(*stream, name);
    }
    reader = recognized.reader ? std::move(recognized.reader) : Sniff(*stream, name);
    source = Source::Stream(name, std::move(stream));
  }
  UpdateActivity(name, [&](InputActivity& a) {
    a.format = reader->name;
    a.file_bytes = source->size();
  });
  std::unique_ptr<EvidenceInput> input = reader->open(*source, limits);
  if (input == nullptr) throw traces::TraceError(name, fmt::format("internal: the {} reader opened nothing", reader->name));
  input->path_ = name;
  input->format_ = reader->name;
  input->limits_ = limits;
  return input;
}

bool EvidenceInput::NextBlock(std::vector<traces::Event>* events) {
  const bool more = ReadBlock(events);
  if (!more) {
    UpdateActivity(path_, [](InputActivity& a) { a.reading = false; });
    return false;
  }
  events_ += events->size();
  if (events_ > limits_.max_events) {
    throw traces::TraceError(path_, traces::TooManyEventsMessage(events_, "read so far", 0, 1, limits_));
  }
  // One pass over the block (a block of 176-byte events is larger than a core's cache) for both
  // checks. Sizes: every reader checks them where it parses them; this is the one check for all of
  // them (an importer that builds events from a state, say), naming the file and the event. And
  // the devices, counted against the limit.
  for (const traces::Event& e : *events) {
    if (const char* problem = traces::EventSizeProblem(e)) [[unlikely]] {
      throw traces::TraceError(path_, fmt::format("event {} ({}, device {}, {} bytes at {:#x}): {}", e.seq,
                                                  traces::ToString(e.type), e.device, e.size, e.address,
                                                  problem));
    }
    if (any_device_ && e.device == last_device_) [[likely]] continue;
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

BlockSource EvidenceInput::Blocks(const Progress& progress, const BlockObserver& observer) {
  // A BlockSource is copyable; the prefetcher (a thread) is shared by the copies and joined
  // when the last one goes.
  auto prefetched = std::make_shared<traces::PrefetchedBlocks>(
      [this, progress, observer](std::vector<traces::Event>* events) {
        const bool more = NextBlock(events);
        if (more && observer) observer(*events);
        const std::uint64_t done = bytes_done(), total = bytes_total();
        // Total and bytes before the count: a reader of all three never sees more events than
        // the bytes it sees account for.
        seen_total_.store(total, std::memory_order_relaxed);
        seen_bytes_.store(more ? done : std::max(done, total), std::memory_order_release);
        seen_events_.store(events_, std::memory_order_release);
        if (progress) progress(done, total);
        return more;
      });
  return [prefetched](std::vector<traces::Event>* events) { return prefetched->Next(events); };
}

std::uint64_t EvidenceInput::ExpectedEvents() const {
  const std::uint64_t events = seen_events_.load(std::memory_order_acquire);
  const std::uint64_t bytes = seen_bytes_.load(std::memory_order_acquire);
  const std::uint64_t total = seen_total_.load(std::memory_order_relaxed);
  if (events == 0 || bytes == 0 || bytes >= total) return events;
  __extension__ using U128 = unsigned __int128;
  const U128 guess = U128{events} * total / bytes;
  return guess > limits_.max_events ? limits_.max_events : static_cast<std::uint64_t>(guess);
}

}  // namespace fragscope::evidence
