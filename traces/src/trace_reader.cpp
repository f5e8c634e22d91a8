#include "fragscope/traces/trace_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "block_codec.hpp"
#include "bytes.hpp"
#include "crc32c.hpp"
#include "fst_format.hpp"
#include "header_json.hpp"

namespace fragscope::traces {
namespace {

std::string ComposeMessage(const std::string& path, std::uint64_t offset, const std::string& message) {
  // Messages that already start with the file's name read better without it twice.
  if (!path.empty() && message.rfind(path, 0) == 0) return fmt::format("{} (at byte {})", message, offset);
  return fmt::format("{}: at byte {}: {}", path, offset, message);
}

// Where the bytes come from: a file (pread) or memory (fuzzing, tests).
class Source {
 public:
  virtual ~Source() = default;
  virtual std::uint64_t size() const = 0;
  // Reads exactly `n` bytes at `offset`; false when the source ends first.
  virtual bool ReadAt(std::uint64_t offset, void* dst, std::size_t n) = 0;
};

class FileSource final : public Source {
 public:
  explicit FileSource(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw TraceError(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int error = errno;
      ::close(fd_);
      throw TraceError(path, 0, fmt::format("cannot stat: {}", std::strerror(error)));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw TraceError(path, 0, "not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  std::uint64_t size() const override { return size_; }
  bool ReadAt(std::uint64_t offset, void* dst, std::size_t n) override {
    auto* out = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        throw TraceError(path_, offset, fmt::format("read failed: {}", std::strerror(errno)));
      }
      if (got == 0) return false;  // the file shrank since it was opened
      out += got;
      offset += static_cast<std::uint64_t>(got);
      n -= static_cast<std::size_t>(got);
    }
    return true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

class MemorySource final : public Source {
 public:
  explicit MemorySource(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  bool ReadAt(std::uint64_t offset, void* dst, std::size_t n) override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) return false;
    if (n > 0) std::memcpy(dst, bytes_.data() + offset, n);
    return true;
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

std::string HexBytes(const std::uint8_t* bytes, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("{}{:02x}", i == 0 ? "" : " ", bytes[i]);
  return out;
}

// In a fuzzing build checksums are computed but not enforced, so that the fuzzer reaches the
// decoder behind them. Never defined in a normal build.
#ifdef FRAGSCOPE_FUZZING
constexpr bool kEnforceChecksums = false;
#else
constexpr bool kEnforceChecksums = true;
#endif

}  // namespace

TraceError::TraceError(std::string path, std::uint64_t offset, const std::string& message)
    : std::runtime_error(ComposeMessage(path, offset, message)), path_(std::move(path)), offset_(offset) {}

TraceError::TraceError(std::string path, const std::string& message)
    : std::runtime_error(message.rfind(path + ": ", 0) == 0 ? message : fmt::format("{}: {}", path, message)),
      path_(std::move(path)),
      offset_(0) {}

std::string TooManyEventsMessage(std::uint64_t events, const std::string& what, std::uint64_t file_bytes,
                                 std::uint64_t events_per_byte, const ReadLimits& limits) {
  const std::string counted = what.empty() ? "" : fmt::format(" ({})", what);
  if (events > limits.max_events) {
    return fmt::format("the input describes {} events{}, more than --max-events {} allows; if it is a real "
                       "trace, raise the cap: --max-events {}",
                       events, counted, limits.max_events, events);
  }
  return fmt::format("the input describes {} events{} in {} bytes, more than {} per byte, which no real file of "
                     "its format holds: refused as out of proportion to its size; if it is a real trace, read it "
                     "with --max-events {}",
                     events, counted, file_bytes, events_per_byte, events);
}

std::string TooManyDevicesMessage(std::uint64_t devices, const std::string& what, const ReadLimits& limits) {
  return fmt::format("the input describes {} devices{}, more than --max-devices {} allows; if it is a real "
                     "trace, raise the cap: --max-devices {}",
                     devices, what.empty() ? "" : fmt::format(" ({})", what), limits.max_devices, devices);
}

class TraceReader::Impl {
 public:
  Impl(std::unique_ptr<Source> source, std::string path, const ReadLimits& limits)
      : path_(std::move(path)), source_(std::move(source)), size_(source_->size()),
        event_cap_(limits.EventCap(size_, kEventsPerByte)), limits_(limits) {
    ReadFileHeader();
    if (event_cap_ != std::numeric_limits<std::uint64_t>::max()) CheckClaimedEvents();
  }

  // A .fst event takes more than 1/64 byte of the file (about 1.3 bytes on synth traces; a block
  // compresses to 1/64 only when its events are nearly all alike).
  static constexpr std::uint64_t kEventsPerByte = 64;

  bool NextBlock(std::vector<Event>* events);

  std::string path_;
  std::unique_ptr<Source> source_;
  std::uint64_t size_ = 0;
  std::uint64_t pos_ = 0;
  std::uint16_t major_ = 0;
  std::uint16_t minor_ = 0;
  TraceHeader header_;
  detail::TagDictionary tags_;
  std::vector<std::string> warnings_;

 private:
  enum class HeaderStatus { kOk, kShort, kNoSync, kBad };

  void ReadFileHeader();
  void CheckClaimedEvents();
  [[noreturn]] void RefuseEvents(std::uint64_t at, std::uint64_t events, const std::string& what) const;
  HeaderStatus ReadBlockHeader(std::uint64_t at, detail::BlockHeader* header, const char** reason);
  std::uint64_t FindBlock(std::uint64_t from);
  void Damaged(std::uint64_t at, const char* reason);
  void Truncated(std::uint64_t at);
  void Warn(std::string message) { warnings_.push_back(std::move(message)); }

  detail::BlockDecoder decoder_;
  std::vector<std::uint8_t> payload_;
  bool done_ = false;
  std::uint64_t blocks_read_ = 0;
  std::uint64_t events_read_ = 0;
  std::uint64_t unknown_events_ = 0;
  std::uint64_t event_cap_ = std::numeric_limits<std::uint64_t>::max();
  ReadLimits limits_;
};

void TraceReader::Impl::RefuseEvents(std::uint64_t at, std::uint64_t events, const std::string& what) const {
  throw TraceError(path_, at, TooManyEventsMessage(events, what, size_, kEventsPerByte, limits_));
}

// Sums the event counts of the block headers, hopping from block to block without decoding
// anything, and refuses the trace before it is read when they pass the cap. Stops quietly at the
// first block that is damaged or cut short: NextBlock warns about it and checks the rest as it goes.
void TraceReader::Impl::CheckClaimedEvents() {
  std::uint64_t at = pos_;
  std::uint64_t events = 0;
  std::uint64_t blocks = 0;
  while (at < size_) {
    detail::BlockHeader header;
    const char* reason = nullptr;
    if (ReadBlockHeader(at, &header, &reason) != HeaderStatus::kOk) return;
    if (header.flags & detail::kFlagEnd) return;
    if (header.event_count > detail::kMaxBlockEvents) return;
    const std::uint64_t next = at + header.header_size + header.payload_size;
    if (next > size_) return;
    events += header.event_count;
    ++blocks;
    if (events > event_cap_) {
      // Count the rest too (headers only) so the message says what the file claims in all.
      std::uint64_t rest = next;
      while (rest < size_ && ReadBlockHeader(rest, &header, &reason) == HeaderStatus::kOk &&
             !(header.flags & detail::kFlagEnd) && header.event_count <= detail::kMaxBlockEvents) {
        events += header.event_count;
        ++blocks;
        rest += header.header_size + header.payload_size;
      }
      RefuseEvents(at, events, fmt::format("in {} blocks", blocks));
    }
    at = next;
  }
}

void TraceReader::Impl::ReadFileHeader() {
  if (size_ == 0) throw TraceError(path_, 0, "empty file: not a fragscope trace");
  std::uint8_t fixed[detail::kFileHeaderFixed] = {};
  const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(size_, sizeof fixed));
  if (!source_->ReadAt(0, fixed, have)) throw TraceError(path_, 0, "file shrank while being opened");
  const std::size_t magic_bytes = std::min(have, detail::kMagic.size());
  if (std::memcmp(fixed, detail::kMagic.data(), magic_bytes) != 0) {
    throw TraceError(path_, 0,
                     fmt::format("not a fragscope trace: it starts with {}, a .fst file with {}",
                                 HexBytes(fixed, magic_bytes), HexBytes(detail::kMagic.data(), detail::kMagic.size())));
  }
  if (have < sizeof fixed) {
    throw TraceError(path_, have, fmt::format("truncated in the file header: {} bytes, at least {} needed", have,
                                              detail::kFileHeaderFixed + 4));
  }
  major_ = detail::LoadLe16(fixed + 8);
  minor_ = detail::LoadLe16(fixed + 10);
  if (major_ > detail::kFormatMajor) {
    throw TraceError(path_, 8,
                     fmt::format("{} was written by a newer fragscope (trace format {}.{}); this build reads format {}.x",
                                 path_, major_, minor_, detail::kFormatMajor));
  }
  if (major_ < detail::kFormatMajor) {
    throw TraceError(path_, 8, fmt::format("trace format {}.{} is not supported; this build reads format {}.x",
                                           major_, minor_, detail::kFormatMajor));
  }

  // The header record: JSON, then a CRC-32C of every byte before the CRC.
  const std::uint32_t length = detail::LoadLe32(fixed + 12);
  const char* problem = nullptr;
  std::uint64_t header_end = detail::kFileHeaderFixed + std::uint64_t{length} + 4;
  std::vector<std::uint8_t> record;
  if (length > detail::kMaxHeaderJson) {
    problem = "its length is over the 16 MiB limit";
  } else if (header_end > size_) {
    problem = "it extends past the end of the file";
  } else {
    record.resize(detail::kFileHeaderFixed + length + 4);
    if (!source_->ReadAt(0, record.data(), record.size())) {
      problem = "it extends past the end of the file";
    } else {
      const std::uint32_t stored = detail::LoadLe32(record.data() + detail::kFileHeaderFixed + length);
      if (detail::Crc32c(record.data(), detail::kFileHeaderFixed + length) != stored && kEnforceChecksums) {
        problem = "checksum mismatch";
      }
    }
  }
  if (problem != nullptr) {
    // The blocks after a damaged header still stand on their own: look for the first one.
    const std::uint64_t block = FindBlock(detail::kFileHeaderFixed);
    if (block >= size_) {
      throw TraceError(path_, detail::kFileHeaderFixed,
                       fmt::format("the header record is damaged or truncated ({}; the file has {} bytes) and "
                                   "no block follows it",
                                   problem, size_));
    }
    Warn(fmt::format("{}: at byte {}: the header record is damaged ({}); run information is lost; reading "
                     "blocks from byte {}",
                     path_, detail::kFileHeaderFixed, problem, block));
    pos_ = block;
    return;
  }
  try {
    const auto* text = reinterpret_cast<const char*>(record.data() + detail::kFileHeaderFixed);
    header_ = detail::HeaderFromJson(nlohmann::json::parse(text, text + length), /*strict=*/false);
  } catch (const std::exception& e) {
    header_ = TraceHeader{};
    Warn(fmt::format("{}: at byte {}: the header record cannot be read ({}); run information is lost", path_,
                     detail::kFileHeaderFixed, e.what()));
  }
  pos_ = header_end;
}

TraceReader::Impl::HeaderStatus TraceReader::Impl::ReadBlockHeader(std::uint64_t at, detail::BlockHeader* header,
                                                                   const char** reason) {
  std::uint8_t bytes[detail::kBlockHeaderSize];
  if (size_ - at < detail::kBlockHeaderSize) return HeaderStatus::kShort;
  if (!source_->ReadAt(at, bytes, detail::kBlockHeaderSize)) return HeaderStatus::kShort;
  if (std::memcmp(bytes, detail::kSync.data(), detail::kSync.size()) != 0) {
    *reason = "no block marker";
    return HeaderStatus::kNoSync;
  }
  *header = detail::ParseBlockHeader(bytes);
  if (detail::BlockHeaderCrc(bytes) != header->header_crc && kEnforceChecksums) {
    *reason = "block header checksum mismatch";
    return HeaderStatus::kBad;
  }
  if (header->header_size < detail::kBlockHeaderSize || header->header_size > detail::kMaxBlockHeaderSize) {
    *reason = "impossible block header size";
    return HeaderStatus::kBad;
  }
  return HeaderStatus::kOk;
}

std::uint64_t TraceReader::Impl::FindBlock(std::uint64_t from) {
  constexpr std::size_t kChunk = 1 << 16;
  constexpr std::size_t kOverlap = detail::kSync.size() - 1;
  std::vector<std::uint8_t> buffer(kChunk + kOverlap);
  std::uint64_t offset = from;
  while (offset < size_ && size_ - offset >= detail::kSync.size()) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size_ - offset));
    if (!source_->ReadAt(offset, buffer.data(), n)) return size_;
    const std::uint8_t* p = buffer.data();
    const std::uint8_t* end = buffer.data() + n;
    while (true) {
      p = static_cast<const std::uint8_t*>(std::memchr(p, detail::kSync[0], static_cast<std::size_t>(end - p)));
      if (p == nullptr || end - p < static_cast<std::ptrdiff_t>(detail::kSync.size())) break;
      if (std::memcmp(p, detail::kSync.data(), detail::kSync.size()) == 0) {
        const std::uint64_t candidate = offset + static_cast<std::uint64_t>(p - buffer.data());
        detail::BlockHeader header;
        const char* reason = nullptr;
        const HeaderStatus status = ReadBlockHeader(candidate, &header, &reason);
        if (status == HeaderStatus::kOk) return candidate;
      }
      ++p;
    }
    if (n <= kOverlap) break;
    offset += n - kOverlap;
  }
  return size_;
}

void TraceReader::Impl::Damaged(std::uint64_t at, const char* reason) {
  const std::uint64_t next = FindBlock(at + 1);
  if (next < size_) {
    Warn(fmt::format("{}: at byte {}: damaged block ({}); skipped {} bytes, reading resumes at byte {}", path_, at,
                     reason, next - at, next));
    pos_ = next;
  } else {
    Warn(fmt::format("{}: at byte {}: damaged block ({}); no intact block follows: the rest ({} bytes) lost",
                     path_, at, reason, size_ - at));
    pos_ = size_;
    done_ = true;
  }
}

void TraceReader::Impl::Truncated(std::uint64_t at) {
  Warn(fmt::format("{}: truncated at byte {}: {} complete blocks read, the rest ({} bytes) lost", path_, at,
                   blocks_read_, size_ - at));
  pos_ = size_;
  done_ = true;
}

bool TraceReader::Impl::NextBlock(std::vector<Event>* events) {
  events->clear();
  while (!done_) {
    if (pos_ >= size_) {
      Warn(fmt::format("{}: ends at byte {} without an end-of-trace block: the writer did not close it (killed, "
                       "crashed, or still writing); {} blocks read",
                       path_, pos_, blocks_read_));
      done_ = true;
      break;
    }
    detail::BlockHeader header;
    const char* reason = nullptr;
    const HeaderStatus status = ReadBlockHeader(pos_, &header, &reason);
    if (status == HeaderStatus::kShort) {
      Truncated(pos_);
      break;
    }
    if (status != HeaderStatus::kOk) {
      Damaged(pos_, reason);
      continue;
    }
    const std::uint64_t end = pos_ + header.header_size + header.payload_size;
    if (end > size_) {
      Truncated(pos_);
      break;
    }
    if (header.raw_size > detail::kMaxRawPayload || header.event_count > detail::kMaxBlockEvents ||
        header.payload_size > ZSTD_compressBound(detail::kMaxRawPayload)) {
      Damaged(pos_, "lengths over the format's limits");
      continue;
    }
    if (!(header.flags & detail::kFlagEnd) && events_read_ + unknown_events_ + header.event_count > event_cap_) {
      RefuseEvents(pos_, events_read_ + unknown_events_ + header.event_count, "read so far");
    }
    if ((header.flags & ~detail::kKnownFlags) != 0) {
      Warn(fmt::format("{}: at byte {}: block with flags {:#06x} from a newer format version skipped", path_, pos_,
                       header.flags));
      pos_ = end;
      continue;
    }
    // Header fields of a later minor version (if any) and the payload, under one CRC.
    const std::size_t extension = header.header_size - detail::kBlockHeaderSize;
    payload_.resize(extension + header.payload_size);
    if (!source_->ReadAt(pos_ + detail::kBlockHeaderSize, payload_.data(), payload_.size())) {
      Truncated(pos_);
      break;
    }
    if (detail::Crc32c(payload_.data(), payload_.size()) != header.payload_crc && kEnforceChecksums) {
      Warn(fmt::format("{}: at byte {}: damaged block (payload checksum mismatch); its {} events skipped, reading "
                       "resumes at byte {}",
                       path_, pos_, header.event_count, end));
      pos_ = end;
      continue;
    }
    try {
      decoder_.Decompress(header, std::span<const std::uint8_t>(payload_).subspan(extension));
      if (header.flags & detail::kFlagEnd) {
        detail::ByteReader totals(decoder_.raw().data(), decoder_.raw().size());
        const std::uint64_t total_events = totals.Varint("event total");
        const std::uint64_t total_blocks = totals.Varint("block total");
        if (total_events != events_read_ + unknown_events_ || total_blocks != blocks_read_) {
          Warn(fmt::format("{}: the trace holds {} events in {} blocks; {} events in {} blocks were read", path_,
                           total_events, total_blocks, events_read_ + unknown_events_, blocks_read_));
        }
        if (end < size_) {
          Warn(fmt::format("{}: at byte {}: {} bytes after the end-of-trace block ignored", path_, end, size_ - end));
        }
        if (unknown_events_ > 0) {
          Warn(fmt::format("{}: {} events of types this version does not know were skipped (written by format {}.{})",
                           path_, unknown_events_, major_, minor_));
        }
        pos_ = size_;
        done_ = true;
        break;
      }
      const std::uint64_t before = unknown_events_;
      decoder_.Decode(header, &tags_, events, &unknown_events_);
      events_read_ += header.event_count - (unknown_events_ - before);
    } catch (const detail::DecodeError& e) {
      Warn(fmt::format("{}: at byte {}: damaged block ({}); its {} events skipped, reading resumes at byte {}", path_,
                       pos_, e.what, header.event_count, end));
      events->clear();
      pos_ = end;
      continue;
    }
    ++blocks_read_;
    pos_ = end;
    if (!events->empty()) return true;
  }
  return false;
}

TraceReader::TraceReader(const std::string& path) : TraceReader(path, ReadLimits::None()) {}

TraceReader::TraceReader(const std::string& path, const ReadLimits& limits)
    : impl_(std::make_unique<Impl>(std::make_unique<FileSource>(path), path, limits)) {}

TraceReader::TraceReader(std::span<const std::uint8_t> bytes, const std::string& name)
    : TraceReader(bytes, name, ReadLimits::None()) {}

TraceReader::TraceReader(std::span<const std::uint8_t> bytes, const std::string& name, const ReadLimits& limits)
    : impl_(std::make_unique<Impl>(std::make_unique<MemorySource>(bytes), name, limits)) {}

TraceReader::~TraceReader() = default;

const TraceHeader& TraceReader::header() const { return impl_->header_; }
std::uint32_t TraceReader::version_major() const { return impl_->major_; }
std::uint32_t TraceReader::version_minor() const { return impl_->minor_; }
bool TraceReader::NextBlock(std::vector<Event>* events) { return impl_->NextBlock(events); }
std::string TraceReader::TagName(TagId id) const { return impl_->tags_.Name(id); }
const std::vector<std::string>& TraceReader::tags() const { return impl_->tags_.names(); }
const std::vector<std::string>& TraceReader::warnings() const { return impl_->warnings_; }
std::uint64_t TraceReader::file_size() const { return impl_->size_; }
std::uint64_t TraceReader::offset() const { return impl_->pos_; }

Trace ReadTrace(TraceReader& reader) {
  Trace trace;
  trace.header = reader.header();
  std::vector<Event> block;
  while (reader.NextBlock(&block)) trace.events.insert(trace.events.end(), block.begin(), block.end());
  trace.tags = reader.tags();
  trace.warnings = reader.warnings();
  return trace;
}

Trace ReadTrace(const std::string& path) {
  TraceReader reader(path);
  return ReadTrace(reader);
}

void WriteTrace(const Trace& trace, const std::string& path, const TraceWriterOptions& options) {
  TraceWriter writer(path, trace.header, options);
  std::vector<TagId> ids(trace.tags.size() + 1, kNoTag);
  for (std::size_t i = 0; i < trace.tags.size(); ++i) ids[i + 1] = writer.Intern(trace.tags[i]);
  for (const Event& event : trace.events) {
    Event copy = event;
    copy.tag = event.tag < ids.size() ? ids[event.tag] : kNoTag;
    writer.Append(copy);
  }
  writer.Close();
}

}  // namespace fragscope::traces
