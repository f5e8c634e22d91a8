// JAX / XLA's out-of-memory wordings: the runtime's "while trying to allocate" with its
// BufferAssignment statistics, PJRT's "Failed to allocate request", TPU compile-time memory.
#include <array>

#include <fmt/format.h>

#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

namespace {

void ParseXlaStatsLine(XlaBufferStats& x, OomMessage& m, std::string_view s) {
  for (auto [label, field] : std::array<std::pair<std::string_view, std::optional<PrintedSize>*>, 6>{{
           {"preallocated temp allocation:", &x.preallocated_temp},
           {"maybe_live_out allocation:", &x.maybe_live_out},
           {"parameter allocation:", &x.parameter},
           {"constant allocation:", &x.constant},
           {"total allocation:", &x.total},
           {"total fragmentation:", &x.fragmentation}}}) {
    if (Contains(s, label)) {
      *field = Field(m, s, label);
      return;
    }
  }
}

void ParseTpuLine(TpuMemory& t, OomMessage& m, std::string_view s) {
  const std::string_view trimmed = TrimLeft(s);
  if (const std::size_t used = s.find("Used "); used != std::string_view::npos && !t.used) {
    t.used = Field(m, s, "Used ", used);
    t.capacity = Field(m, s, " of ", used);
  }
  if (Contains(s, "capacity by ")) t.exceeded = Field(m, s, "capacity by ");
  if (Contains(s, "usage >=")) t.total_usage = Field(m, s, "usage >=");
  if (trimmed.substr(0, 8) == "reserved" && !t.reserved) t.reserved = Field(m, trimmed, "reserved");
  if (trimmed.substr(0, 7) == "program" && !t.program) t.program = Field(m, trimmed, "program");
  if (trimmed.substr(0, 9) == "arguments" && !t.arguments) t.arguments = Field(m, trimmed, "arguments");
  if (Contains(s, "Size:") && !t.largest_allocation && !Contains(s, "Output size")) {
    t.largest_allocation = Field(m, s, "Size:");
  }
}

}  // namespace

std::size_t ReadXlaTpuCompile(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  m.kind = OomMessageKind::kXlaTpuCompile;
  m.framework = "jax";
  m.backend = "TPU";
  TpuMemory t;
  const std::string_view s = scan.At(i);
  if (const std::size_t space = s.find("memory space "); space != std::string_view::npos) {
    t.space = std::string(IdentifierAt(s, space + 13));
  }
  m.device = t.space;
  SetText(m, s);
  ParseTpuLine(t, m, s);
  std::size_t k = i + 1;
  std::size_t blank_run = 0;
  for (; k < scan.lines.size() && k - i < 80; ++k) {
    const std::string_view l = scan.At(k);
    const std::string_view trimmed = Trim(l);
    if (trimmed.empty()) {
      if (++blank_run > 2) break;
      continue;
    }
    blank_run = 0;
    const bool indented = IsBlank(l.front());
    const bool known = trimmed.substr(0, 8) == "Exceeded" || trimmed.substr(0, 5) == "Total" ||
                       trimmed.substr(0, 6) == "Output" || trimmed.substr(0, 7) == "Program" ||
                       trimmed.substr(0, 7) == "Largest";
    if (!indented && !known) break;
    if (Detect(l)) break;
    ParseTpuLine(t, m, l);
    AppendText(m, l);
    m.end_line = k + 1;
  }
  m.tpu = std::move(t);
  const std::size_t next = m.end_line;
  scan.found.push_back(std::move(m));
  return next;
}

std::size_t ReadXlaRequest(MessageScan& scan, std::size_t i) {
  OomMessage m = scan.Start(i);
  m.kind = OomMessageKind::kXlaRequest;
  m.framework = "jax";
  m.backend = "GPU";
  const std::string_view s = scan.At(i);
  SetText(m, Trim(s));
  // "Failed to allocate request for 2.99GiB (3206250496B) on device ordinal 0"
  const std::size_t at = s.find("Failed to allocate request for");
  if (const std::size_t open = s.find('(', at); open != std::string_view::npos) m.request = Field(m, s, "(", open);
  if (!m.request) m.request = Field(m, s, "Failed to allocate request for");
  if (const auto ordinal = UintAfter(s, "device ordinal ")) m.device = fmt::format("device ordinal {}", *ordinal);
  scan.found.push_back(std::move(m));
  return i + 1;
}

// How far apart (in lines) XLA's log line and the Python exception of the same failure may be: a
// traceback of a deep JAX call stack runs to a few hundred lines.
constexpr std::size_t kXlaRepeatLines = 400;

std::size_t ReadXlaRuntime(MessageScan& scan, std::size_t i) {
  std::size_t last = i;
  const std::string joined =
      scan.Join(i, 2, [](std::string_view t) { return !Contains(t, "while trying to allocate") || !Contains(t, "bytes"); }, &last);
  OomMessage m = scan.Start(i);
  m.kind = OomMessageKind::kXlaRuntime;
  m.framework = Contains(joined, "tensorflow/compiler/jit") ? "tensorflow" : "jax";
  m.backend = "GPU";
  m.end_line = last + 1;
  std::string text(Trim(scan.At(i)));
  for (std::size_t k = i + 1; k <= last; ++k) text += '\n' + std::string(scan.At(k));
  SetText(m, text);
  m.request = Field(m, joined, "while trying to allocate");
  // BufferAssignment statistics and peak buffers follow.
  std::size_t k = last + 1;
  for (; k < scan.lines.size() && k - last < 120; ++k) {
    const std::string_view l = scan.At(k);
    const std::string_view trimmed = Trim(l);
    const bool part = trimmed.empty() || IsBlank(l.front()) || Contains(l, "BufferAssignment") ||
                      Contains(l, "Peak buffers") || trimmed.substr(0, 6) == "Buffer";
    if (!part || Detect(l)) break;
    if (trimmed.empty() && k + 1 < scan.lines.size() && !IsBlank(scan.At(k + 1).empty() ? ' ' : scan.At(k + 1).front()) &&
        !Contains(scan.At(k + 1), "Buffer")) {
      break;
    }
    if (Contains(l, "allocation:") || Contains(l, "fragmentation:")) {
      if (!m.xla) m.xla.emplace();
      ParseXlaStatsLine(*m.xla, m, l);
    }
    AppendText(m, l);
    m.end_line = k + 1;
  }
  const std::size_t next = m.end_line;
  // The same failure printed again: XLA's C++ log line and then the Python exception
  // ("ValueError: RESOURCE_EXHAUSTED: ... 2110783616 bytes."), a traceback apart. One failure, one
  // message: the repeat joins the first (lending its statistics if the first had none).
  if (!scan.found.empty()) {
    OomMessage& prev = scan.found.back();
    if (prev.kind == OomMessageKind::kXlaRuntime && prev.request && m.request &&
        prev.request->bytes == m.request->bytes && m.line - prev.end_line <= kXlaRepeatLines) {
      if (!prev.xla && m.xla) prev.xla = std::move(m.xla);
      return next;
    }
  }
  scan.found.push_back(std::move(m));
  return next;
}

}  // namespace fragscope::traces::oomscan
