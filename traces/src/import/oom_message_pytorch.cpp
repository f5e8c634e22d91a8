// PyTorch's out-of-memory wordings: the caching allocator (CUDA, XPU, HIP; every era), MPS and
// cudaMallocAsync, read into OomMessage fields (oom_message_scan.hpp).
#include <array>

#include <fmt/format.h>

#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

// The hint PyTorch appends: which variable it names, which setting it suggests.
void ReadPytorchHints(OomMessage& m, std::string_view s) {
  m.hint_max_split_size = Contains(s, "max_split_size_mb");
  m.hint_expandable_segments = Contains(s, "expandable_segments:True");
  for (std::size_t at = s.find("PYTORCH_"); at != std::string_view::npos; at = s.find("PYTORCH_", at + 1)) {
    const std::string_view name = IdentifierAt(s, at);
    if (name.size() > 16 && name.substr(name.size() - 11) == "_ALLOC_CONF") {
      m.hint_env = std::string(name);
      break;
    }
  }
}

// The word before "out of memory" ("CUDA", "XPU", "HIP") within the few bytes before `pos`.
std::string BackendBefore(std::string_view s, std::size_t pos) {
  const std::size_t from = pos > 48 ? pos - 48 : 0;
  const std::string_view head = s.substr(from, pos - from);
  for (std::string_view word : {"CUDA out of memory", "XPU out of memory", "HIP out of memory"}) {
    if (Contains(head, word)) return std::string(word.substr(0, word.find(' ')));
  }
  return {};
}

namespace {

// PyTorch's caching allocator, one message in `s` (from its "Tried to allocate" to the next one).
void ParsePytorchCaching(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kPytorchCaching;
  m.framework = "pytorch";
  m.request = Field(m, s, "Tried to allocate");
  // PyTorch's check of sizes no device can hold: "Tried to allocate more than 1EB memory."
  if (!m.request && Contains(s, "Tried to allocate more than ")) {
    m.request = Field(m, s, "Tried to allocate more than ");
    m.request_at_least = m.request.has_value();
  }
  // The legacy layout: "(GPU 0; 11.17 GiB total capacity; 10.90 GiB already allocated; …)".
  const std::size_t open = s.find('(', s.find("Tried to allocate"));
  const std::size_t old_format = s.find("total capacity;");
  if (open != std::string_view::npos && old_format != std::string_view::npos && open < old_format) {
    const std::size_t close = s.find(')', open);
    std::string_view inside = s.substr(open + 1, close == std::string_view::npos ? std::string_view::npos : close - open - 1);
    std::size_t start = 0;
    bool first = true;
    while (start <= inside.size()) {
      std::size_t end = inside.find(';', start);
      if (end == std::string_view::npos) end = inside.size();
      const std::string_view part = Trim(inside.substr(start, end - start));
      if (first && !part.empty() && !IsDigit(part.front())) m.device = std::string(part);
      first = false;
      for (auto [label, field] : std::array<std::pair<std::string_view, std::optional<PrintedSize>*>, 5>{{
               {"total capacity", &m.total},
               {"already allocated", &m.allocated},
               {"reserved in total by PyTorch", &m.reserved},
               {"cached", &m.unallocated},
               {"free", &m.free}}}) {
        const std::size_t at = part.find(label);
        if (at != std::string_view::npos && at > 0 && !*field) {
          *field = FieldBefore(m, part, at);
          break;
        }
      }
      start = end + 1;
    }
  } else {
    // ≥ 2.1: "GPU 0 has a total capac(i)ty of X of which Y is free. …"
    std::size_t at = s.find(" has a total capac");
    if (at != std::string_view::npos) {
      std::size_t dev = s.rfind(". ", at);
      dev = dev == std::string_view::npos ? 0 : dev + 2;
      if (at > dev && at - dev <= 16) m.device = std::string(Trim(s.substr(dev, at - dev)));
      m.total = Field(m, s, " of ", at);
    }
    if (const std::size_t which = s.find(" of which "); which != std::string_view::npos) {
      m.free = Field(m, s, " of which ");
    }
    // "Process 101553 has 1.19 GiB memory in use." any number of times.
    for (std::size_t p = s.find("Process "); p != std::string_view::npos; p = s.find("Process ", p + 8)) {
      const auto pid = UintAfter(s, "Process ", p);
      const std::size_t has = s.find(" has ", p);
      if (!pid || has == std::string_view::npos || has - p > 30) continue;
      if (auto size = Field(m, s, " has ", p)) m.other_processes.push_back({*pid, *size});
    }
    m.process_total = Field(m, s, "this process has ");
    if (const std::size_t allowed = s.find(" allowed;"); allowed != std::string_view::npos) {
      m.allowed = FieldBefore(m, s, allowed);
    }
    m.allocated = Field(m, s, "Of the allocated memory ");
    if (const std::size_t pools = s.find(" allocated in private pools"); pools != std::string_view::npos) {
      m.private_pools = FieldBefore(m, s, pools);
    }
    if (const std::size_t un = s.find(" is reserved by PyTorch but unallocated"); un != std::string_view::npos) {
      m.unallocated = FieldBefore(m, s, un);
    }
  }
  ReadPytorchHints(m, s);
  m.backend = BackendBefore(s, s.find("Tried to allocate"));
  if (m.backend.empty() && m.hint_env == "PYTORCH_HIP_ALLOC_CONF") m.backend = "HIP";
}

// True when a caching-allocator message in `s` looks cut by a line break (more of it follows).
bool PytorchIncomplete(std::string_view s) {
  const std::size_t tried = s.find("Tried to allocate");
  if (tried == std::string_view::npos || Contains(s, "Tried to allocate more than")) return false;
  const std::size_t open = s.find('(', tried);
  if (open != std::string_view::npos && s.find(')', open) == std::string_view::npos) return true;
  if (Contains(s, "has a total capac")) {
    return !Contains(s, "unallocated") && !Contains(s, "memory in use") && !Contains(s, "is free");
  }
  return open == std::string_view::npos && Trim(s.substr(tried)).size() < 40;
}

void ParseMps(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kPytorchMps;
  m.framework = "pytorch";
  m.backend = "MPS";
  m.device = "MPS";
  m.allocated = Field(m, s, "MPS allocated:");
  m.other_allocations = Field(m, s, "other allocations:");
  m.allowed = Field(m, s, "max allowed:");
  m.request = Field(m, s, "Tried to allocate");
  // PyTorch's check of sizes no device can hold: "Tried to allocate more than 1EB memory."
  if (!m.request && Contains(s, "Tried to allocate more than ")) {
    m.request = Field(m, s, "Tried to allocate more than ");
    m.request_at_least = m.request.has_value();
  }
  m.private_pool_request = Contains(s, "on private pool");
  m.hint_watermark = Contains(s, "PYTORCH_MPS_HIGH_WATERMARK_RATIO");
}

void ParseAsync(OomMessage& m, std::string_view s) {
  m.kind = OomMessageKind::kPytorchAsync;
  m.framework = "pytorch";
  m.backend = "CUDA";
  if (const auto device = UintAfter(s, "Allocation on device ")) m.device = fmt::format("device {}", *device);
  m.allocated = Field(m, s, "Currently allocated");
  m.request = Field(m, s, "Requested");
  m.device_limit = Field(m, s, "Device limit");
  m.free = Field(m, s, "Free (according to CUDA)");
  // The fraction's limit prints SIZE_MAX ("17179869184.00 GiB") when none is set: no limit.
  const std::size_t limit = s.find("PyTorch limit");
  if (limit != std::string_view::npos) {
    const std::size_t colon = s.find(':', limit);
    if (colon != std::string_view::npos) {
      std::string_view rest = s.substr(colon + 1);
      bool oversize = false;
      m.allowed = TakeSize(rest, &oversize);
      m.unlimited_fraction = oversize;
    }
  }
}

}  // namespace

std::size_t ReadPytorchCaching(MessageScan& scan, std::size_t i) {
  std::size_t last = i;
  const std::string joined = scan.Join(i, 3, PytorchIncomplete, &last);
  const std::string_view s = joined;
  // Several messages in one line (a log whose newlines were lost): one per "Tried to allocate".
  std::vector<std::size_t> starts;
  for (std::size_t p = s.find("Tried to allocate"); p != std::string_view::npos; p = s.find("Tried to allocate", p + 1)) {
    starts.push_back(p);
  }
  for (std::size_t k = 0; k < starts.size(); ++k) {
    std::size_t begin = 0;
    if (k > 0) {
      // Take the head ("CUDA out of memory. ") that precedes this one.
      begin = starts[k];
      const std::size_t head = s.rfind("out of memory", starts[k]);
      if (head != std::string_view::npos && head > starts[k - 1]) {
        begin = s.rfind(' ', head > 1 ? head - 2 : 0);
        begin = begin == std::string_view::npos || begin < starts[k - 1] ? head : begin + 1;
      }
    }
    const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : s.size();
    const std::string_view piece = s.substr(begin, end - begin);
    OomMessage m = scan.Start(i);
    m.end_line = last + 1;
    SetText(m, Trim(piece));
    ParsePytorchCaching(m, piece);
    scan.found.push_back(std::move(m));
  }
  return last + 1;
}

std::size_t ReadPytorchMps(MessageScan& scan, std::size_t i) {
  std::size_t last = i;
  const std::string joined = scan.Join(i, 2, [](std::string_view t) { return !Contains(t, "Tried to allocate") || !Contains(t, "pool"); }, &last);
  OomMessage m = scan.Start(i);
  m.end_line = last + 1;
  SetText(m, Trim(joined));
  ParseMps(m, joined);
  scan.found.push_back(std::move(m));
  return last + 1;
}

std::size_t ReadPytorchAsync(MessageScan& scan, std::size_t i) {
  // The fields follow on their own lines (or the same line, flattened).
  std::size_t last = i;
  std::string joined(scan.At(i));
  while (last + 1 < scan.lines.size() && last - i < 8) {
    const std::string_view next = Trim(scan.At(last + 1));
    const bool field = !next.empty() && (next.front() == ':' || next.substr(0, 9) == "Currently" ||
                                         next.substr(0, 9) == "Requested" || next.substr(0, 6) == "Device" ||
                                         next.substr(0, 4) == "Free" || next.substr(0, 7) == "PyTorch");
    if (!field) break;
    ++last;
    joined += ' ';
    joined += next;
  }
  // Stop where the fields end: a joined line without ':' is not one of them.
  OomMessage m = scan.Start(i);
  m.end_line = last + 1;
  std::string text(scan.At(i));
  for (std::size_t k = i + 1; k <= last; ++k) text += '\n' + std::string(scan.At(k));
  SetText(m, text);
  ParseAsync(m, joined);
  scan.found.push_back(std::move(m));
  return last + 1;
}

}  // namespace fragscope::traces::oomscan
