// Private to the out-of-memory message reader: the scan state and helpers shared by the line scanner
// (oom_message.cpp) and the wording families it hands each message to (oom_message_pytorch.cpp,
// oom_message_xla.cpp, oom_message_tensorflow.cpp, oom_message_cuda.cpp, oom_message_paddle.cpp,
// oom_message_libraries.cpp).
//
// A family reader gets the line where the scanner detected its wording, reads at most a few
// following lines, appends what it found to MessageScan::found and returns the line after the
// message, where the scan goes on; so the whole scan stays linear in the input.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/traces/oom_message.hpp"
#include "import/oom_message_text.hpp"

namespace fragscope::traces::oomscan {

constexpr std::size_t kMaxMessageText = 8192;  // what a message keeps of its own text
// What TensorFlow's BFC allocator adds to "ran out of memory trying to allocate" when it is no error.
constexpr std::string_view kTfNotAFailure = "this is not a failure";

struct Line {
  std::string_view text;
  std::size_t offset = 0;
};

// One scan over a text: its lines, the messages found so far, and what earlier lines said that a
// later message needs.
struct MessageScan {
  explicit MessageScan(std::string_view text);

  std::string_view At(std::size_t i) const { return i < lines.size() ? lines[i].text : std::string_view(); }

  // A message that starts (and so far ends) at line i.
  OomMessage Start(std::size_t i) const;

  // The line and up to `extra` following ones joined with one blank, while `more` says the text so
  // far is incomplete. Returns the text and sets *last to the last line used.
  template <typename More>
  std::string Join(std::size_t i, std::size_t extra, More more, std::size_t* last) const {
    std::string joined(oomtext::Trim(At(i)).empty() ? At(i) : At(i));
    *last = i;
    while (*last + 1 < lines.size() && *last - i < extra && more(std::string_view(joined))) {
      ++*last;
      while (!joined.empty() && oomtext::IsBlank(joined.back())) joined.pop_back();
      joined += ' ';
      joined += oomtext::TrimLeft(At(*last));
      if (joined.size() > kMaxMessageText) break;
    }
    return joined;
  }

  std::vector<Line> lines;
  std::vector<OomMessage> found;
  std::vector<TfNotAFailure> not_failures;
  // TensorFlow prints the device's memory once, when it creates the device; its later failures
  // do not repeat it.
  std::optional<PrintedSize> tf_total, tf_free;
  std::size_t tf_total_line = 0;
  std::size_t cublas_failed_line = 0;  // 1-based; 0: none seen
};

// What kind of message starts in this line, by its most specific wording. Family readers ask it
// too, to stop where the next message starts.
std::optional<OomMessageKind> Detect(std::string_view s);

// The message's own text, cut at kMaxMessageText.
void SetText(OomMessage& m, std::string_view text);
void AppendText(OomMessage& m, std::string_view text);

// A size after `label`; a size there that cannot be represented becomes a problem of the message.
std::optional<PrintedSize> Field(OomMessage& m, std::string_view s, std::string_view label, std::size_t from = 0);
// The size that ends right before `end`, with the same handling of sizes too large.
std::optional<PrintedSize> FieldBefore(OomMessage& m, std::string_view s, std::size_t end);

// An exact byte count printed as a plain integer after `label` ("buffer of size 151851674624"; with
// `grouped`, also "1,073,741,824"), with the same handling of sizes too large.
std::optional<PrintedSize> ExactBytes(OomMessage& m, std::string_view s, std::string_view label, std::size_t from = 0,
                                      bool grouped = false);

// PyTorch's wording that a sizeless raw error can carry too (oom_message_pytorch.cpp).
void ReadPytorchHints(OomMessage& m, std::string_view s);
std::string BackendBefore(std::string_view s, std::size_t pos);

// The family readers: each reads the message whose wording Detect found at line i and returns the
// line after it.
std::size_t ReadPytorchCaching(MessageScan& scan, std::size_t i);
std::size_t ReadPytorchMps(MessageScan& scan, std::size_t i);
std::size_t ReadPytorchAsync(MessageScan& scan, std::size_t i);
std::size_t ReadXlaTpuCompile(MessageScan& scan, std::size_t i);
std::size_t ReadXlaRequest(MessageScan& scan, std::size_t i);
std::size_t ReadXlaRuntime(MessageScan& scan, std::size_t i);
std::size_t ReadTfTensor(MessageScan& scan, std::size_t i);
std::size_t ReadTfAlloc(MessageScan& scan, std::size_t i, OomMessageKind kind);
std::size_t ReadTfEigen(MessageScan& scan, std::size_t i);
// PaddlePaddle: its CUDA allocator's message (and 2018's enforce), its host allocator's.
std::size_t ReadPaddleGpu(MessageScan& scan, std::size_t i);
std::size_t ReadPaddleHost(MessageScan& scan, std::size_t i);
// Theano, ONNX Runtime's arena, torch-directml, CuPy's memory pool (oom_message_libraries.cpp).
std::size_t ReadTheano(MessageScan& scan, std::size_t i);
std::size_t ReadOrtArena(MessageScan& scan, std::size_t i);
std::size_t ReadDirectml(MessageScan& scan, std::size_t i);
std::size_t ReadCupy(MessageScan& scan, std::size_t i);
// TensorFlow's "… The caller indicates that this is not a failure" warning: true (and noted in
// scan.not_failures) when line i is one.
bool ReadTfNotAFailure(MessageScan& scan, std::size_t i);
// Errors of the CUDA runtime and its libraries: PyTorch's legacy THC, raw CUDA / HIP, cuBLAS, cuDNN,
// cuFFT, cuSOLVER, and libraries reporting CUDA's error in their own words (oom_message_cuda.cpp).
std::size_t ReadRawError(MessageScan& scan, std::size_t i, OomMessageKind kind);

// After the scan (oom_message_repeats.cpp): each message's origin (the rank or pid its first line
// names), then one failure printed several times made one message with its repeat_lines.
void NoteOrigins(const MessageScan& scan, std::vector<OomMessage>& messages);
std::vector<OomMessage> MergeRepeats(std::vector<OomMessage> messages);

}  // namespace fragscope::traces::oomscan
