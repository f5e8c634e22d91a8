#include "fragscope/traces/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <streambuf>

#include <fmt/format.h>

namespace fragscope::traces {
namespace fs = std::filesystem;

namespace {

std::string Errno() { return std::strerror(errno); }

}  // namespace

// std::ostream over the file: one buffer, every overflow a checked write. A failed write sets the
// stream's badbit (no exception crosses the stream); Commit reports it with the reason.
class AtomicFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(AtomicFile& file) : file_(file) { setp(bytes_, bytes_ + sizeof bytes_); }
  int sync() override {
    const auto pending = static_cast<std::size_t>(pptr() - pbase());
    setp(bytes_, bytes_ + sizeof bytes_);
    if (pending == 0 || !file_.error_.empty()) return file_.error_.empty() ? 0 : -1;
    if (std::fwrite(bytes_, 1, pending, file_.file_) != pending) {
      file_.error_ = fmt::format("write failed: {}", Errno());
      return -1;
    }
    file_.bytes_written_ += pending;
    return 0;
  }

 protected:
  int_type overflow(int_type c) override {
    if (sync() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

 private:
  AtomicFile& file_;
  char bytes_[1 << 16];
};

void RefuseOutputOverInput(const std::string& target, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    if (input.empty() || input == "-") continue;
    std::error_code error;
    const bool same = fs::equivalent(target, input, error);
    if (!error && same) {
      throw OutputError(fmt::format("{}: the output is the input {} (the same file): refusing to "
                                    "overwrite what is being read; write to another file",
                                    target, input));
    }
  }
}

AtomicFile::AtomicFile(const std::string& target, const std::vector<std::string>& inputs)
    : target_(target) {
  if (target.empty()) throw OutputError("the output file name is empty");
  RefuseOutputOverInput(target, inputs);
  // Writing through a link replaces the file it points to, not the link.
  std::error_code error;
  fs::path resolved = fs::weakly_canonical(target, error);
  if (error) resolved = target;
  const fs::file_status status = fs::status(resolved, error);
  if (fs::is_directory(status)) Fail("is a directory: give a file name");
  in_place_ = fs::exists(status) && !fs::is_regular_file(status);
  if (in_place_) {
    writing_path_ = target;
    file_ = std::fopen(target.c_str(), "wb");
    if (file_ == nullptr) Fail(fmt::format("cannot open for writing: {}", Errno()));
  } else {
    writing_path_ = fmt::format("{}.{}.partial", resolved.string(), ::getpid());
    // O_EXCL: never write through a link or over a file someone else placed at the temporary name.
    const int fd = ::open(writing_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC,
                          0666);
    if (fd < 0) {
      const std::string why = Errno();
      writing_path_.clear();
      Fail(fmt::format("cannot create a file in its folder: {}", why));
    }
    file_ = ::fdopen(fd, "wb");
    if (file_ == nullptr) {
      const std::string why = Errno();
      ::close(fd);
      Discard();
      Fail(fmt::format("cannot open: {}", why));
    }
  }
  target_ = in_place_ ? target : resolved.string();
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() noexcept {
  stream_.reset();
  buffer_.reset();
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
  if (!in_place_ && !writing_path_.empty()) {
    ::unlink(writing_path_.c_str());
    writing_path_.clear();
  }
}

// Throws only: the destructor removes the temporary file (a Write may fail inside stream()'s
// buffer, which must outlive the call).
void AtomicFile::Fail(const std::string& what) {
  throw OutputError(fmt::format("{}: {}", target_, what));
}

void AtomicFile::Write(const void* data, std::size_t size) {
  if (file_ == nullptr) throw OutputError(fmt::format("{}: write after the file was closed", target_));
  if (size == 0) return;
  if (stream_ != nullptr) stream_->flush();  // keep the order of bytes given both ways
  if (!error_.empty()) Fail(error_);
  if (std::fwrite(data, 1, size, file_) != size) Fail(fmt::format("write failed: {}", Errno()));
  bytes_written_ += size;
}

void AtomicFile::Flush() {
  if (file_ == nullptr) throw OutputError(fmt::format("{}: flush after the file was closed", target_));
  if (stream_ != nullptr) {
    stream_->flush();
    if (!error_.empty()) Fail(error_);
  }
  if (std::fflush(file_) != 0) Fail(fmt::format("write failed: {}", Errno()));
}

std::string AtomicFile::Abandon() noexcept {
  std::string kept = writing_path_;
  stream_.reset();
  buffer_.reset();
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
  writing_path_.clear();  // Discard leaves it alone now
  return kept;
}

std::ostream& AtomicFile::stream() {
  if (stream_ == nullptr) {
    buffer_ = std::make_unique<Buffer>(*this);
    stream_ = std::make_unique<std::ostream>(buffer_.get());
  }
  return *stream_;
}

void AtomicFile::Commit() {
  if (file_ == nullptr) throw OutputError(fmt::format("{}: committed twice", target_));
  if (stream_ != nullptr) {
    stream_->flush();
    if (!error_.empty()) Fail(error_);
    if (!*stream_) Fail("write failed");
  }
  if (std::fflush(file_) != 0) Fail(fmt::format("write failed: {}", Errno()));
  if (std::ferror(file_)) Fail("write failed");
  // A special file (a pipe, a terminal) may not support fsync: only a regular file must reach disk.
  if (!in_place_ && ::fsync(::fileno(file_)) != 0) Fail(fmt::format("fsync failed: {}", Errno()));
  std::FILE* file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0) Fail(fmt::format("close failed: {}", Errno()));
  if (in_place_) return;
  if (::rename(writing_path_.c_str(), target_.c_str()) != 0) {
    Fail(fmt::format("cannot move {} into place: {}", writing_path_, Errno()));
  }
  writing_path_.clear();
}

}  // namespace fragscope::traces
