// Every file fragscope writes (converted traces, replays, the trainer's trace, screenshots, the
// inspector's layout and recent files) goes through AtomicFile, so that a failure never leaves a
// damaged file and an output never destroys an input:
//  - the bytes go to a temporary file beside the target ("<target>.<pid>.partial"), which replaces
//    the target by rename only after a checked flush, fsync and close (Commit);
//  - a target that resolves to one of the inputs (the same file, through a link or another path)
//    is refused before anything is opened;
//  - a target that is not a regular file (/dev/stdout, a pipe, /dev/full) is written in place,
//    with the same checks: nothing there can be replaced by rename;
//  - every error names the file and says what failed (OutputError), and an AtomicFile destroyed
//    without Commit removes its temporary file (the target is untouched).
// A process killed while writing leaves the .partial file behind; for a trace that is the point
// (every complete block in it can still be read).
#pragma once

#include <cstdio>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fragscope::traces {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AtomicFile {
 public:
  // Opens the temporary file (or the special file itself). Throws OutputError when `target` is
  // empty, resolves to one of `inputs`, is a directory, or cannot be created.
  explicit AtomicFile(const std::string& target, const std::vector<std::string>& inputs = {});
  ~AtomicFile();  // without Commit: closes and removes the temporary file
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Writes all of `size` bytes; throws OutputError naming the file on a short write.
  void Write(const void* data, std::size_t size);
  // Pushes what is buffered to the file (fflush), checked: for writers that must survive a kill.
  void Flush();
  // A stream over the same file, for writers that take a std::ostream. A failed write only sets
  // the stream's badbit; Commit (or Flush) throws it as an OutputError with the reason.
  std::ostream& stream();

  // Flushes, fsyncs, closes and renames into place; throws OutputError naming the file (the
  // destructor then removes the temporary file; the target is left as it was).
  void Commit();

  // Gives up without replacing the target but keeps what was written under writing_path(), which
  // it returns (the trace writer keeps the complete blocks of a trace whose disk filled up).
  std::string Abandon() noexcept;

  const std::string& target() const { return target_; }
  // Where the bytes go until Commit: the .partial file, or the target itself when special.
  const std::string& writing_path() const { return writing_path_; }
  std::uint64_t bytes_written() const { return bytes_written_; }

 private:
  class Buffer;
  [[noreturn]] void Fail(const std::string& what);
  void Discard() noexcept;

  std::string target_;
  std::string writing_path_;
  bool in_place_ = false;
  std::FILE* file_ = nullptr;
  std::uint64_t bytes_written_ = 0;
  std::string error_;  // the first failed write through stream()
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// Throws OutputError when `target` resolves to one of `inputs`; used by AtomicFile and by commands
// that must refuse before they start reading.
void RefuseOutputOverInput(const std::string& target, const std::vector<std::string>& inputs);

}  // namespace fragscope::traces
