// One failure printed several times is one failure (oom_message_scan.hpp): after the scan, a
// message that repeats an earlier one joins it as a repeat. A log often prints one failure more than
// once: the framework's own log line and then the exception, the exception again when a wrapper
// re-raises it or a logger prints it, the whole traceback twice. Counting each as a failure would
// report two failures where there was one.
//
// Two messages are the same failure when everything the message measured is the same: its wording,
// framework, backend, device, the process that printed it (OomMessage::origin) and every number,
// to the byte. A message without any number (a bare "CUDA error: out of memory") must also have the
// same text: with nothing measured, only the same words say it is the same report. Different
// devices, or one number apart, stay separate failures (eight DDP ranks each failing on its own GPU
// are eight failures; ranks that share a device index under CUDA_VISIBLE_DEVICES are told apart by
// the rank their launcher prints before each line). Messages are matched through a hash of that
// key, so the pass stays linear.
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "import/oom_message_scan.hpp"

namespace fragscope::traces::oomscan {

using namespace oomtext;

namespace {

// The digits right after `label` in `s` ("[rank3]" → "3"), or "" when none follow it.
std::string_view DigitsAfter(std::string_view s, std::string_view label) {
  const std::size_t at = s.find(label);
  if (at == std::string_view::npos) return {};
  std::size_t from = at + label.size();
  while (from < s.size() && s[from] == ' ') ++from;
  std::size_t end = from;
  while (end < s.size() && IsDigit(s[end]) && end - from < 9) ++end;
  return s.substr(from, end - from);
}

// The process a line says it comes from: torchrun's "[rank3]: …", the "[default3]: …" of its
// --tee / log-line prefixes, Ray's "(RayWorkerWrapper pid=1234) …".
std::string OriginOf(std::string_view line) {
  if (const auto rank = DigitsAfter(line, "[rank"); !rank.empty()) return fmt::format("rank {}", rank);
  if (const auto local = DigitsAfter(line, "[default"); !local.empty()) return fmt::format("local rank {}", local);
  if (const auto pid = DigitsAfter(line, "pid="); !pid.empty()) return fmt::format("pid {}", pid);
  return {};
}

class Key {
 public:
  void Add(std::string_view field) {
    key_ += field;
    key_ += '|';
  }
  void Size(const std::optional<PrintedSize>& size) {
    if (size) {
      numbers_ = true;
      key_ += std::to_string(size->bytes);
    }
    key_ += '|';
  }
  void Number(std::uint64_t value) {
    numbers_ = true;
    key_ += std::to_string(value);
    key_ += ',';
  }
  bool has_numbers() const { return numbers_; }
  std::string Take() { return std::move(key_); }

 private:
  std::string key_;
  bool numbers_ = false;
};

// Everything the message measured, and where: equal keys are one failure.
std::string FailureKey(const OomMessage& m) {
  Key k;
  k.Add(ToString(m.kind));
  k.Add(m.framework);
  k.Add(m.backend);
  k.Add(m.device);
  k.Add(m.origin);
  k.Add(m.error_code);
  k.Add(m.request_at_least ? "at least" : "");
  k.Add(m.private_pool_request ? "private pool" : "");
  for (const auto* size : {&m.request, &m.total, &m.free, &m.allocated, &m.reserved, &m.unallocated, &m.process_total,
                           &m.allowed, &m.device_limit, &m.limit_available, &m.memory_limit, &m.other_allocations,
                           &m.private_pools}) {
    k.Size(*size);
  }
  for (const OtherProcess& p : m.other_processes) {
    k.Number(p.pid);
    k.Number(p.size.bytes);
  }
  k.Add("");
  if (m.xla) {
    for (const auto* size : {&m.xla->parameter, &m.xla->constant, &m.xla->maybe_live_out, &m.xla->preallocated_temp,
                             &m.xla->total, &m.xla->fragmentation}) {
      k.Size(*size);
    }
  }
  if (m.tpu) {
    k.Add(m.tpu->space);
    for (const auto* size : {&m.tpu->used, &m.tpu->capacity, &m.tpu->exceeded, &m.tpu->total_usage, &m.tpu->reserved,
                             &m.tpu->program, &m.tpu->arguments, &m.tpu->largest_allocation}) {
      k.Size(*size);
    }
  }
  for (std::uint64_t d : m.tensor_shape) k.Number(d);
  k.Add(m.tensor_dtype);
  k.Add(m.allocator);
  for (const PrintedSize& a : m.attempts) k.Number(a.bytes);
  // Nothing measured: only the same words make the same report.
  if (!k.has_numbers()) k.Add(Trim(m.text));
  return k.Take();
}

}  // namespace

void NoteOrigins(const MessageScan& scan, std::vector<OomMessage>& messages) {
  for (OomMessage& m : messages) m.origin = OriginOf(scan.At(m.line - 1));
}

std::vector<OomMessage> MergeRepeats(std::vector<OomMessage> messages) {
  std::vector<OomMessage> failures;
  failures.reserve(messages.size());
  std::unordered_map<std::string, std::size_t> first;  // key → index in `failures`
  for (OomMessage& m : messages) {
    auto [it, fresh] = first.try_emplace(FailureKey(m), failures.size());
    if (fresh) {
      failures.push_back(std::move(m));
    } else {
      failures[it->second].repeat_lines.push_back(m.line);
    }
  }
  return failures;
}

}  // namespace fragscope::traces::oomscan
