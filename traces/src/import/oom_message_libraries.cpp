// Out-of-memory wordings of libraries with an allocator of their own (oom_message_scan.hpp):
// Theano's CUDA backend ("Error allocating N bytes of device memory (out of memory). Driver report
// F bytes free and T bytes total"), ONNX Runtime's BFCArena ("Failed to allocate memory for
// requested buffer of size N", "Available memory of A is smaller than requested bytes of N") and
// torch-directml ("Could not allocate tensor with N bytes. There is not enough GPU video memory
// available!") and CuPy's memory pool ("Out of memory allocating N bytes (allocated so far: M bytes,
// limit set to: L bytes)."). Each prints exact byte counts; only the numbers printed are kept.
#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

namespace {

// "(out of memory)", "(CNMEM_STATUS_OUT_OF_MEMORY)": the error Theano names after the size.
std::string ParenthesizedAfter(std::string_view s, std::size_t from) {
  const std::size_t open = s.find('(', from);
  if (open == std::string_view::npos) return {};
  const std::size_t close = s.find(')', open);
  if (close == std::string_view::npos || close - open > 48) return {};
  return std::string(s.substr(open + 1, close - open - 1));
}

}  // namespace

std::size_t ReadTheano(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  std::string joined(scan.At(i));
  std::size_t last = i;
  // The driver's figures, on the next line where the message was wrapped.
  if (!Contains(joined, "Driver report") && Trim(scan.At(i + 1)).rfind("Driver report", 0) == 0) {
    joined += ' ';
    joined += Trim(scan.At(i + 1));
    last = i + 1;
  }
  const std::string_view s = joined;
  m.kind = OomMessageKind::kTheano;
  m.framework = "theano";
  m.backend = "CUDA";
  SetText(m, Trim(s));
  const std::size_t at = s.find("Error allocating ");
  m.request = ExactBytes(m, s, "Error allocating ", at == std::string_view::npos ? 0 : at);
  const std::size_t device_memory = s.find("bytes of device memory");
  if (device_memory != std::string_view::npos) m.error_code = ParenthesizedAfter(s, device_memory);
  if (const std::size_t report = s.find("Driver report "); report != std::string_view::npos) {
    m.free = ExactBytes(m, s, "Driver report ", report);
    if (const std::size_t total = s.find("bytes free and ", report); total != std::string_view::npos) {
      m.total = ExactBytes(m, s, "bytes free and ", total);
    }
  }
  m.end_line = last + 1;
  scan.found.push_back(std::move(m));
  return last + 1;
}

std::size_t ReadOrtArena(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  const std::string_view s = scan.At(i);
  m.kind = OomMessageKind::kOrtArena;
  m.framework = "onnxruntime";
  SetText(m, Trim(s));
  if (Contains(s, "requested buffer of size ")) {
    m.request = ExactBytes(m, s, "requested buffer of size ");
  } else {
    // The arena at its memory limit: "Available memory of 0 is smaller than requested bytes of N".
    m.limit_available = ExactBytes(m, s, "Available memory of ");
    m.request = ExactBytes(m, s, "requested bytes of ");
  }
  // The arena serves the CPU and every execution provider alike; the line names the device only
  // where the provider's own words are in it.
  if (Contains(s, "CUDA") || Contains(s, "Cuda") || Contains(s, "cuda")) m.backend = "CUDA";
  scan.found.push_back(std::move(m));
  return i + 1;
}

std::size_t ReadDirectml(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  const std::string_view s = scan.At(i);
  m.kind = OomMessageKind::kDirectml;
  m.framework = "pytorch";
  m.backend = "DirectML";
  SetText(m, Trim(s));
  m.request = ExactBytes(m, s, "Could not allocate tensor with ");
  scan.found.push_back(std::move(m));
  return i + 1;
}

std::size_t ReadCupy(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  const std::string_view s = scan.At(i);
  m.kind = OomMessageKind::kCupy;
  m.framework = "cupy";
  SetText(m, Trim(s));
  // SingleDeviceMemoryPool's OutOfMemoryError(size, total, limit): the request rounded to the pool's
  // 512-byte unit, the bytes the pool holds on the device (arrays in use and its cached blocks), and
  // the pool's limit where one is set (set_limit, CUPY_GPU_MEMORY_LIMIT).
  const std::size_t at = s.find("Out of memory allocating ");
  m.request = ExactBytes(m, s, "Out of memory allocating ", at, true);
  m.allocated = ExactBytes(m, s, "allocated so far: ", at, true);
  m.allowed = ExactBytes(m, s, "limit set to: ", at, true);
  scan.found.push_back(std::move(m));
  return i + 1;
}

}  // namespace fragscope::traces::oomscan
