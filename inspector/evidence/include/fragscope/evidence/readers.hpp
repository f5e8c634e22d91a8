// The registry of evidence readers: each format fragscope reads is one Reader — a name, a
// one-line description, a sniff of the first bytes and an open — in one file of its own under
// inspector/evidence/src/readers/, plus one line in src/builtin_readers.def. EvidenceInput::Open
// asks them in registry order; its "unknown format" message, every command's --help for a TRACE
// argument and the inspector's welcome text list them from here (docs/importers.md, "Adding a
// reader").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/evidence/evidence_input.hpp"
#include "fragscope/traces/read_limits.hpp"

namespace fragscope::evidence {

// What a reader's sniff is given: the first bytes of the input, this many at most (a TensorFlow
// dump may follow pages of log).
inline constexpr std::size_t kSniffBytes = std::size_t{1} << 20;

// The input a reader opens: a regular file on disk, or a stream (standard input, a pipe) already
// read whole into memory.
class Source {
 public:
  // A regular file at `path`, of `size` bytes.
  static Source File(std::string path, std::uint64_t size);
  // A stream read whole; `name` names it in messages ("<stdin>", "/dev/stdin").
  static Source Stream(std::string name, std::shared_ptr<const std::string> bytes);

  // The name for messages: the path, or "<stdin>".
  const std::string& name() const { return name_; }
  // True for a regular file that a reader may read from disk in pieces (file_path()).
  bool is_file() const { return !path_.empty(); }
  const std::string& file_path() const { return path_; }
  std::uint64_t size() const { return size_; }
  // The whole input: a stream's copy, or the file read into memory on the first call (throws
  // traces::TraceError naming the file when it cannot be read). Lives as long as this Source or
  // the pointer returned.
  std::shared_ptr<const std::string> shared_bytes() const;
  std::string_view bytes() const { return *shared_bytes(); }

 private:
  std::string name_;
  std::string path_;  // empty for a stream
  std::uint64_t size_ = 0;
  mutable std::shared_ptr<const std::string> bytes_;
};

struct Reader {
  // The format's name, unique in the registry; also EvidenceInput::format() of what it opens
  // ("fragscope trace", "JSON Lines").
  std::string name;
  // One line for --help, the "unknown format" message and the inspector: what the format is and
  // where it comes from ("PyTorch memory snapshot (torch.cuda.memory._dump_snapshot)").
  std::string description;
  // True when `head` (the first kSniffBytes bytes at most, never empty) is this format. Cheap,
  // never throws.
  std::function<bool(std::string_view head)> sniff;
  // Opens the input; throws traces::TraceError naming source.name() when it cannot. A reader of a
  // format read whole checks what the input claims against `limits` before expanding it; the
  // events it hands out are checked again by EvidenceInput::NextBlock (events, devices, sizes).
  std::function<std::unique_ptr<EvidenceInput>(const Source& source, const traces::ReadLimits& limits)> open;
};

// The registered readers, in the order Open tries them: the built-in ones (builtin_readers.def),
// then those registered at run time.
std::vector<Reader> Readers();
// Adds `reader` after the others. Throws std::invalid_argument when its name is empty or already
// registered, or sniff or open is missing.
void RegisterReader(Reader reader);
// Removes the reader of that name; false when there is none.
bool UnregisterReader(std::string_view name);
// The registered readers' names, in order.
std::vector<std::string> ReaderNames();

// The readers as one phrase, in order, the last joined with "or":
// kDescriptions "fragscope trace (.fst), ..., or TensorFlow BFC OOM log (...)",
// kNames "fragscope trace, JSON Lines, ... or TensorFlow BFC log".
enum class ReaderList { kNames, kDescriptions };
std::string ListReaders(ReaderList what);
// "unknown format: not a fragscope trace (.fst), ... or ..." — Open's message for an input no
// reader recognizes.
std::string UnknownFormatMessage();
// The help of a command's TRACE argument: "trace file, or - for standard input; any format
// fragscope reads, recognized by content: ...".
std::string TraceArgumentHelp();

}  // namespace fragscope::evidence
