// PaddlePaddle's out-of-memory wordings (oom_message_scan.hpp): its CUDA allocator's
// "Out of memory error on GPU 0. Cannot allocate X memory on GPU 0, [Y memory has been allocated
// and] available memory is only Z." in every era since 1.5, with the hints that follow it, 2018's
// "enforce allocating <= available failed, R > F", and its host allocator's "Fail to alloc memory
// of N size". Paddle prints sizes with HumanReadableSize: "%f" and B / kB / MB / GB / TB, 1024-based.
#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

namespace {

constexpr std::string_view kGpuHead = "Out of memory error on ";
constexpr std::string_view kEnforceHead = "enforce allocating <= available failed";
constexpr std::size_t kHintLines = 10;  // Paddle's advice after the numbers: "Please check …", "1. …", "(at …)"

// The message is complete once the available memory is printed.
bool PaddleIncomplete(std::string_view s) {
  const std::size_t at = s.find("available memory is");
  if (at == std::string_view::npos) return true;
  std::string_view rest = s.substr(at + 19);
  rest = TrimLeft(rest);
  if (rest.substr(0, 4) == "only") rest = rest.substr(4);
  bool oversize = false;
  return !TakeSize(rest, &oversize) && !oversize;
}

// Which of Paddle's settings the text names, and the limit when FLAGS_gpu_memory_limit_mb is set
// ("… so the maximum GPU memory usage is limited to 4096 MB.").
void ReadPaddleFlags(OomMessage& m, std::string_view s) {
  if (Contains(s, "FLAGS_gpu_memory_limit_mb")) {
    m.hint_env = "FLAGS_gpu_memory_limit_mb";
    if (Contains(s, "limited to ")) m.memory_limit = Field(m, s, "limited to ");
  } else if (Contains(s, "FLAGS_fraction_of_gpu_memory_to_use") && m.hint_env.empty()) {
    m.hint_env = "FLAGS_fraction_of_gpu_memory_to_use";
  }
}

// Paddle's own lines after the numbers ("Please check …", "1. If yes …", "(at …)"): true when `s`
// is one.
bool ReadPaddleHint(OomMessage& m, std::string_view s) {
  const std::string_view t = Trim(s);
  const bool hint = Contains(t, "FLAGS_") || t.rfind("Please check", 0) == 0 || t.rfind("1. If yes", 0) == 0 ||
                    t.rfind("2. If no", 0) == 0 || t.rfind("If yes", 0) == 0 || t.rfind("If no", 0) == 0 ||
                    t.rfind("1) ", 0) == 0 || t.rfind("2) ", 0) == 0 || t.rfind("(at ", 0) == 0 ||
                    t.rfind("at (", 0) == 0 || t.rfind("The command is", 0) == 0 || t.rfind(". (at ", 0) == 0;
  if (hint) ReadPaddleFlags(m, t);
  return hint;
}

void ParsePaddleGpu(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kPaddleGpu;
  m.framework = "paddle";
  m.backend = "GPU";
  if (const std::size_t at = s.find(kGpuHead); at != std::string_view::npos) {
    // "GPU 0" (or "XPU 0", "NPU 0") up to the full stop.
    const std::size_t from = at + kGpuHead.size();
    const std::size_t stop = s.find('.', from);
    const std::string_view device = Trim(s.substr(from, stop == std::string_view::npos ? 12 : stop - from));
    if (!device.empty() && device.size() <= 16) {
      m.device = std::string(device);
      m.backend = std::string(device.substr(0, device.find(' ')));
    }
  }
  m.request = Field(m, s, "Cannot allocate");
  if (const std::size_t has = s.find(" memory has been allocated"); has != std::string_view::npos) {
    m.allocated = FieldBefore(m, s, has);
  }
  if (Contains(s, "available memory is only")) {
    m.free = Field(m, s, "available memory is only");
  } else if (Contains(s, "available memory is")) {
    m.free = Field(m, s, "available memory is");
  }
  // The hint may be on the same line (a flattened paste, a JSON string with "\n" escapes).
  ReadPaddleFlags(m, s);
  m.error_code = "cudaErrorMemoryAllocation";
}

}  // namespace

std::size_t ReadPaddleGpu(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  const std::string_view s = scan.At(i);
  std::size_t last = i;
  if (Contains(s, kEnforceHead)) {
    // 2018: "EnforceNotMet: enforce allocating <= available failed, 10513462067 > 1369702144".
    m.kind = OomMessageKind::kPaddleGpu;
    m.framework = "paddle";
    m.backend = "GPU";
    const std::size_t head = s.find(kEnforceHead);
    const std::size_t comma = s.find(',', head);
    if (comma != std::string_view::npos) {
      m.request = ExactBytes(m, s, "failed, ", head);
      const std::size_t gt = s.find(" > ", comma);
      if (gt != std::string_view::npos) m.free = ExactBytes(m, s, " > ", gt);
    }
    m.error_code = "cudaErrorMemoryAllocation";
    SetText(m, Trim(s));
  } else {
    // A line cut by a paste ("available memory is only\n 416.625000MB.") joins its next lines.
    const std::string joined = scan.Join(i, 3, PaddleIncomplete, &last);
    SetText(m, Trim(joined));
    ParsePaddleGpu(m, joined);
  }
  // Paddle's advice lines after the numbers belong to the message.
  for (std::size_t k = last + 1; k < scan.lines.size() && k - last <= kHintLines; ++k) {
    const std::string_view next = scan.At(k);
    if (Trim(next).empty()) continue;
    if (Detect(next) || !ReadPaddleHint(m, next)) break;
    AppendText(m, Trim(next));
    last = k;
  }
  m.end_line = last + 1;
  scan.found.push_back(std::move(m));
  return last + 1;
}

std::size_t ReadPaddleHost(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  const std::string_view s = scan.At(i);
  m.kind = OomMessageKind::kPaddleHost;
  m.framework = "paddle";
  m.backend = "host";
  m.device = "host";
  SetText(m, Trim(s));
  m.request = ExactBytes(m, s, "Fail to alloc memory of ");
  // posix_memalign's errno: 12 is ENOMEM.
  if (const auto code = UintAfter(s, "error code is ")) m.error_code = std::to_string(*code);
  scan.found.push_back(std::move(m));
  return i + 1;
}

}  // namespace fragscope::traces::oomscan
