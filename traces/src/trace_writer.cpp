#include "fragscope/traces/trace_writer.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "block_codec.hpp"
#include "bytes.hpp"
#include "crc32c.hpp"
#include "fragscope/traces/atomic_file.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fst_format.hpp"
#include "header_json.hpp"

namespace fragscope::traces {

// Threads: any number of recorders (Record/Append/Intern, under the allocators' locks), one
// background writer thread (unless options.background is false), and whoever calls
// Flush/Close. Three batches circulate: `current_` fills under mutex_; a full one moves to
// `pending_`; the writer thread moves it to `working_` and encodes, compresses and writes it
// without the lock. A recorder waits only when `pending_` is still occupied, so memory stays at
// three blocks however far behind the disk is.
class TraceWriter::Impl {
 public:
  Impl(const std::string& path, const TraceHeader& header, const TraceWriterOptions& options);
  ~Impl();

  void Record(Event& event) {
    std::unique_lock lock(mutex_);
    if (closed_) return;
    while (current_.events.size() >= block_events_) Seal(lock, /*only_if_full=*/true);
    if (closed_) return;  // closed while this call waited for the writer thread
    event.seq = next_seq_++;
    Buffer(event);
    if (current_.events.size() >= block_events_) Seal(lock, /*only_if_full=*/true);
  }
  void Append(const Event& event) {
    std::unique_lock lock(mutex_);
    if (closed_) return;
    while (current_.events.size() >= block_events_) Seal(lock, /*only_if_full=*/true);
    if (closed_) return;
    next_seq_ = event.seq + 1;
    Buffer(event);
    if (current_.events.size() >= block_events_) Seal(lock, /*only_if_full=*/true);
  }
  TagId Intern(std::string_view text) { return tags_.Intern(text); }
  void Flush();
  void Close();

  const std::string& path() const { return path_; }
  std::uint64_t events_written() const { return events_written_.load(std::memory_order_relaxed); }
  std::uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }

 private:
  void Buffer(const Event& e) {
    current_.events.push_back(detail::BufferedEvent{e.seq, e.time_ns, e.stream, e.address, e.size, e.rounded, e.region,
                                                    e.alloc_id, e.device, e.thread, e.tag, e.type});
    if (e.type == EventType::kOom) current_.ooms.push_back(e.oom);
  }
  void Seal(std::unique_lock<std::mutex>& lock, bool only_if_full);
  void WriterLoop();
  void WriteBatch(const detail::Batch& batch);
  void WriteBytes(const std::vector<std::uint8_t>& bytes);
  void Fail(const std::string& message);
  void ThrowIfFailed();

  const std::string path_;
  const std::uint32_t block_events_;
  const bool background_;
  TagTable tags_;
  std::unique_ptr<AtomicFile> file_;

  std::mutex mutex_;
  std::condition_variable work_cv_;   // writer thread: a batch is pending, or stop
  std::condition_variable space_cv_;  // recorders: pending_ is free again
  std::condition_variable done_cv_;   // Flush: a batch is on disk
  detail::Batch current_;
  detail::Batch pending_;
  bool has_pending_ = false;
  bool stop_ = false;
  bool closed_ = false;
  std::uint64_t next_seq_ = 0;
  std::uint32_t sealed_tags_ = 0;
  std::uint64_t batches_sealed_ = 0;
  std::uint64_t batches_done_ = 0;

  // Owned by the writer thread (or, in foreground mode, by whoever holds mutex_).
  detail::Batch working_;
  detail::BlockEncoder encoder_;
  std::vector<std::uint8_t> out_;
  std::uint64_t blocks_total_ = 0;
  std::uint64_t events_total_ = 0;

  std::mutex error_mutex_;
  std::string error_;
  std::atomic<bool> failed_{false};
  std::atomic<std::uint64_t> events_written_{0};
  std::atomic<std::uint64_t> bytes_written_{0};
  std::thread writer_;
};

TraceWriter::Impl::Impl(const std::string& path, const TraceHeader& header, const TraceWriterOptions& options)
    : path_(path),
      block_events_(std::clamp<std::uint32_t>(options.block_events, 1, detail::kMaxBlockEvents)),
      background_(options.background),
      encoder_(options.compression_level) {
  // The header record: magic, version, JSON length, JSON, CRC-32C of everything before it.
  const std::string json = detail::HeaderToJson(header).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (json.size() > detail::kMaxHeaderJson) throw TraceError(path, 0, "trace header larger than 16 MiB");
  std::vector<std::uint8_t> bytes(detail::kFileHeaderFixed + json.size() + 4);
  std::memcpy(bytes.data(), detail::kMagic.data(), detail::kMagic.size());
  detail::StoreLe16(bytes.data() + 8, detail::kFormatMajor);
  detail::StoreLe16(bytes.data() + 10, detail::kFormatMinor);
  detail::StoreLe32(bytes.data() + 12, static_cast<std::uint32_t>(json.size()));
  std::memcpy(bytes.data() + detail::kFileHeaderFixed, json.data(), json.size());
  detail::StoreLe32(bytes.data() + detail::kFileHeaderFixed + json.size(),
                    detail::Crc32c(bytes.data(), detail::kFileHeaderFixed + json.size()));

  try {
    file_ = std::make_unique<AtomicFile>(path, options.inputs);
    WriteBytes(bytes);
  } catch (const OutputError& e) {
    // About the file as a whole (its folder, its permissions): no byte offset means anything.
    file_.reset();
    throw TraceError(path, e.what());
  } catch (const std::exception& e) {
    file_.reset();
    throw TraceError(path, 0, e.what());
  }
  current_.events.reserve(block_events_);
  if (background_) writer_ = std::thread([this] { WriterLoop(); });
}

TraceWriter::Impl::~Impl() {
  // Close() ran (TraceWriter's destructor calls it); this only guards against a thrown Close.
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    closed_ = true;
  }
  work_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  // file_'s destructor removes a .partial file that Close did not commit (a thrown constructor).
}

void TraceWriter::Impl::Seal(std::unique_lock<std::mutex>& lock, bool only_if_full) {
  if (background_) {
    // Wait for the slot before deciding: another recorder may seal while this one waits.
    space_cv_.wait(lock, [this] { return !has_pending_; });
  }
  if (only_if_full ? current_.events.size() < block_events_
                   : current_.events.empty() && tags_.size() <= sealed_tags_) {
    return;
  }
  current_.tag_count = static_cast<std::uint32_t>(tags_.size());
  current_.next_seq = next_seq_;
  sealed_tags_ = current_.tag_count;
  ++batches_sealed_;
  if (!background_) {
    WriteBatch(current_);
    current_.clear();
    ++batches_done_;
    return;
  }
  std::swap(current_, pending_);
  has_pending_ = true;
  current_.clear();
  current_.events.reserve(block_events_);
  work_cv_.notify_one();
}

void TraceWriter::Impl::WriterLoop() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [this] { return has_pending_ || stop_; });
    if (!has_pending_) break;
    std::swap(pending_, working_);
    has_pending_ = false;
    space_cv_.notify_all();
    lock.unlock();
    WriteBatch(working_);
    working_.clear();
    lock.lock();
    ++batches_done_;
    done_cv_.notify_all();
  }
}

void TraceWriter::Impl::WriteBatch(const detail::Batch& batch) {
  if (failed_.load()) return;  // after a failed write nothing more goes to the file
  if (batch.events.empty() && !encoder_.HasNewNames(batch.tag_count)) return;
  try {
    out_.clear();
    const std::size_t blocks = encoder_.Encode(batch, tags_, &out_);
    WriteBytes(out_);
    blocks_total_ += blocks;
    events_total_ += batch.events.size();
    events_written_.fetch_add(batch.events.size(), std::memory_order_relaxed);
  } catch (const std::exception& e) {
    Fail(e.what());
  }
}

// Each block goes to the file at once (flushed), so a killed process loses at most the current one.
void TraceWriter::Impl::WriteBytes(const std::vector<std::uint8_t>& bytes) {
  file_->Write(bytes.data(), bytes.size());
  file_->Flush();
  bytes_written_.fetch_add(bytes.size(), std::memory_order_relaxed);
}

void TraceWriter::Impl::Fail(const std::string& message) {
  std::lock_guard lock(error_mutex_);
  if (error_.empty()) error_ = message;
  failed_.store(true);
}

void TraceWriter::Impl::ThrowIfFailed() {
  if (!failed_.load()) return;
  std::lock_guard lock(error_mutex_);
  throw TraceError(path_, bytes_written(), error_);
}

void TraceWriter::Impl::Flush() {
  std::unique_lock lock(mutex_);
  if (!closed_) {
    Seal(lock, /*only_if_full=*/false);
    const std::uint64_t target = batches_sealed_;
    done_cv_.wait(lock, [&] { return batches_done_ >= target; });
  }
  lock.unlock();
  ThrowIfFailed();
}

void TraceWriter::Impl::Close() {
  {
    std::unique_lock lock(mutex_);
    if (closed_) return;
    Seal(lock, /*only_if_full=*/false);
    closed_ = true;
    stop_ = true;
  }
  work_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  // Every batch is on disk now; the end-of-trace block says the trace is complete.
  if (!failed_.load()) {
    try {
      out_.clear();
      encoder_.EncodeEnd(events_total_, blocks_total_, next_seq_, &out_);
      WriteBytes(out_);
    } catch (const std::exception& e) {
      Fail(e.what());
    }
  }
  if (!failed_.load()) {
    try {
      file_->Commit();
    } catch (const std::exception& e) {
      Fail(e.what());
    }
  }
  if (failed_.load()) {
    // What was written is every complete block: keep it for the reader, under its own name.
    const std::string kept = file_->Abandon();
    if (!kept.empty()) {
      std::lock_guard lock(error_mutex_);
      error_ += fmt::format("; the blocks written so far are kept in {}", kept);
    }
  }
  ThrowIfFailed();
}

TraceWriter::TraceWriter(const std::string& path, const TraceHeader& header, const TraceWriterOptions& options)
    : impl_(std::make_unique<Impl>(path, header, options)) {}

TraceWriter::~TraceWriter() {
  try {
    impl_->Close();
  } catch (const std::exception& e) {
    fragscope::Log().error("trace {}: {}", impl_->path(), e.what());
  }
}

void TraceWriter::Record(Event& event) { impl_->Record(event); }
void TraceWriter::Append(const Event& event) { impl_->Append(event); }
TagId TraceWriter::Intern(std::string_view text) { return impl_->Intern(text); }
void TraceWriter::Flush() { impl_->Flush(); }
void TraceWriter::Close() { impl_->Close(); }
std::uint64_t TraceWriter::events_written() const { return impl_->events_written(); }
std::uint64_t TraceWriter::bytes_written() const { return impl_->bytes_written(); }
const std::string& TraceWriter::path() const { return impl_->path(); }

}  // namespace fragscope::traces
