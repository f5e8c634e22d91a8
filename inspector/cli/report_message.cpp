// `fragscope report` of out-of-memory error messages (report_message.hpp).
#include "report_message.hpp"

#include <map>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "fragscope/traces/byte_math.hpp"

namespace fragscope::cli {
namespace {

constexpr std::size_t kQuoteChars = 320;  // of each message's text, in the text report

std::string FrameworkName(const std::string& framework) {
  if (framework == "pytorch") return "PyTorch";
  if (framework == "jax") return "JAX / XLA";
  if (framework == "tensorflow") return "TensorFlow";
  if (framework == "mxnet") return "MXNet";
  if (framework == "torch7") return "Lua Torch";
  if (framework == "cuda") return "CUDA";
  if (framework == "nccl") return "NCCL";
  if (framework == "ggml") return "llama.cpp (ggml)";
  if (framework == "paddle") return "PaddlePaddle";
  if (framework == "theano") return "Theano";
  if (framework == "onnxruntime") return "ONNX Runtime";
  if (framework == "cupy") return "CuPy";
  if (framework == "tensorrt") return "TensorRT";
  if (framework == "xgboost") return "XGBoost";
  if (framework == "lightgbm") return "LightGBM";
  return framework;
}

// "lines 5, 40 and 77": where one failure was printed.
std::string PrintedAt(const traces::OomMessage& m) {
  std::string list = fmt::format("lines {}", m.line);
  for (std::size_t k = 0; k < m.repeat_lines.size(); ++k) {
    list += fmt::format("{}{}", k + 1 == m.repeat_lines.size() ? " and " : ", ", m.repeat_lines[k]);
  }
  return list;
}

// The message's first line(s), shortened for a quote.
std::string Quote(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= kQuoteChars) {
      out += " …";
      break;
    }
    out += c == '\n' || c == '\t' ? ' ' : c;
  }
  return out;
}

void AddSize(nlohmann::json& j, const char* key, const std::optional<traces::PrintedSize>& size) {
  if (size) j[key] = size->bytes;
}

struct Item {
  const traces::OomMessage* message;
  analysis::MessageDiagnosis diagnosis;
};

// TensorFlow's "not a failure" warnings in words: how many, with their sizes and lines.
std::string NotAFailureList(const std::vector<traces::TfNotAFailure>& warnings) {
  constexpr std::size_t kListed = 8;
  std::string list;
  for (std::size_t i = 0; i < warnings.size() && i < kListed; ++i) {
    const traces::TfNotAFailure& w = warnings[i];
    list += fmt::format("{}{} at line {}", i == 0 ? "" : ", ", w.request ? w.request->text : "a size", w.line);
  }
  if (warnings.size() > kListed) list += fmt::format(", and {} more", warnings.size() - kListed);
  return list;
}

std::string NotAFailureText(const std::vector<traces::TfNotAFailure>& warnings) {
  const std::string allocator = warnings.front().allocator.empty() ? "BFC allocator" : warnings.front().allocator;
  return fmt::format(
      "TensorFlow's {} warned {} that it \"ran out of memory trying to allocate\" ({}), {} \"the caller "
      "indicates that this is not a failure\": the caller (usually a convolution choosing its algorithm) went on "
      "with less memory; at most the run was slower",
      allocator, warnings.size() == 1 ? std::string("once") : fmt::format("{} times", warnings.size()),
      NotAFailureList(warnings), warnings.size() == 1 ? "adding" : "each time adding");
}

void PrintText(const std::string& trace, const std::vector<Item>& items, const std::vector<std::string>& warnings,
               const std::vector<traces::TfNotAFailure>& not_failures) {
  if (items.empty()) {
    // Only TensorFlow's "not a failure" warnings: no out-of-memory error at all.
    fmt::print("trace      {} (TensorFlow log: no out-of-memory error)\n\n", DisplayName(trace));
    fmt::print("no failure: TensorFlow reported no out-of-memory error. {}\n", NotAFailureText(not_failures));
    fmt::print("  note: if the run did fail, its error is not in this text: give fragscope the log up to the "
               "failure\n");
    for (const std::string& warning : warnings) fmt::print("warning: {}\n", warning);
    return;
  }
  fmt::print("trace      {} (OOM error message, {} message{})\n", DisplayName(trace), items.size(),
             items.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < items.size(); ++i) PrintMessageText(i + 1, *items[i].message, items[i].diagnosis);
  if (!not_failures.empty()) {
    fmt::print("\nnot a failure: {}; these warnings are no errors\n", NotAFailureText(not_failures));
  }
  for (const std::string& warning : warnings) fmt::print("warning: {}\n", warning);
}

void PrintJson(const std::string& trace, const std::string& format, const std::vector<Item>& items,
               const std::vector<std::string>& warnings, const std::vector<traces::TfNotAFailure>& not_failures) {
  // One device entry per device the messages name, in order of first appearance.
  std::vector<std::uint32_t> order;
  std::map<std::uint32_t, nlohmann::json> devices;
  for (const Item& item : items) {
    const traces::OomMessage& m = *item.message;
    const std::uint32_t index = MessageDeviceIndex(m);
    auto [it, fresh] = devices.try_emplace(index);
    if (fresh) {
      order.push_back(index);
      it->second = {{"device", index}, {"kind", "message"}, {"name", m.device}, {"backend", m.backend},
                    {"ooms", nlohmann::json::array()}};
    }
    if (m.total && !it->second.contains("capacity")) it->second["capacity"] = m.total->bytes;
    it->second["ooms"].push_back(MessageOomJson(m, item.diagnosis));
  }
  nlohmann::json list = nlohmann::json::array();
  for (std::uint32_t index : order) list.push_back(std::move(devices[index]));
  // TensorFlow's "not a failure" warnings: no OOM, listed apart.
  nlohmann::json not_failure_list = nlohmann::json::array();
  for (const traces::TfNotAFailure& w : not_failures) {
    nlohmann::json entry = {{"line", w.line}, {"allocator", w.allocator}};
    if (w.request) entry["request"] = w.request->bytes;
    not_failure_list.push_back(std::move(entry));
  }
  const nlohmann::json out = {{"trace", DisplayName(trace)}, {"format", format}, {"kind", "message"},
                              {"events", 0}, {"devices", list}, {"not_failures", not_failure_list},
                              {"warnings", warnings}};
  fmt::print("{}\n", out.dump(2));
}

}  // namespace

void PrintMessageText(std::size_t index, const traces::OomMessage& m, const analysis::MessageDiagnosis& d) {
  const std::string framework = FrameworkName(m.framework);
  // "CUDA on CUDA" says nothing: a raw CUDA error names its backend once; "GPU, GPU 2" neither.
  std::string where = m.backend == framework || m.device.rfind(m.backend + " ", 0) == 0 ? "" : m.backend;
  if (!m.device.empty() && m.device != m.backend) where += (where.empty() ? "" : ", ") + m.device;
  fmt::print("\nmessage {} at line {}: {}{}{} ({})\n", index, m.line, framework,
             where.empty() ? "" : " on " + where, m.origin.empty() ? "" : ", from " + m.origin,
             traces::ToString(m.kind));
  fmt::print("  \"{}\"\n", Quote(m.text));
  if (!m.repeat_lines.empty()) {
    fmt::print("  printed {} times ({}): one failure, reported again\n", m.repeat_lines.size() + 1, PrintedAt(m));
  }
  if (!d.numbers.empty()) {
    std::vector<std::vector<std::string>> rows = {{"  number", "bytes", "printed", "what"}};
    for (const auto& n : d.numbers) {
      rows.push_back({"  " + n.symbol, traces::FormatBytes(n.bytes), n.printed.empty() ? "(derived)" : n.printed, n.name});
    }
    fmt::print("{}", FormatTable(rows));
  }
  for (const std::string& line : d.arithmetic) fmt::print("  {}\n", line);
  fmt::print("  cause: {}: {}\n", traces::ToString(d.cause), d.explanation);
  for (const std::string& note : d.notes) fmt::print("  note: {}\n", note);
  for (const std::string& advice : d.advice) fmt::print("  advice: {}\n", advice);
  for (const std::string& advice : d.fragscope_advice) fmt::print("          {}\n", advice);
}

std::uint32_t MessageDeviceIndex(const traces::OomMessage& message) {
  const std::string& d = message.device;
  std::size_t end = d.size();
  while (end > 0 && (d[end - 1] < '0' || d[end - 1] > '9')) --end;
  std::size_t start = end;
  while (start > 0 && d[start - 1] >= '0' && d[start - 1] <= '9' && end - start < 9) --start;
  if (start == end) return 0;
  return static_cast<std::uint32_t>(std::stoul(d.substr(start, end - start)));
}

nlohmann::json MessageOomJson(const traces::OomMessage& m, const analysis::MessageDiagnosis& d) {
  nlohmann::json j = {{"line", m.line}, {"offset", m.offset}, {"framework", m.framework},
                      {"wording", traces::ToString(m.kind)}, {"backend", m.backend}, {"device_name", m.device}};
  // One failure printed several times is one entry: how often, and where the repeats start.
  j["printed"] = m.repeat_lines.size() + 1;
  if (!m.repeat_lines.empty()) j["repeat_lines"] = m.repeat_lines;
  if (!m.origin.empty()) j["origin"] = m.origin;
  // DESIGN.md's OOM keys where the message gives them (never invented): request, limit, reserved, in_use.
  AddSize(j, "request", m.request);
  if (m.request_at_least) j["request_at_least"] = true;  // "more than" that
  if (m.allowed) {
    j["limit"] = m.allowed->bytes;
  } else if (m.device_limit) {
    j["limit"] = m.device_limit->bytes;
  } else if (m.memory_limit) {
    j["limit"] = m.memory_limit->bytes;
  } else if (m.total) {
    j["limit"] = m.total->bytes;
  }
  AddSize(j, "total", m.total);
  AddSize(j, "free", m.free);
  AddSize(j, "in_use", m.allocated);
  AddSize(j, "allocated", m.allocated);
  AddSize(j, "reserved", m.reserved);
  AddSize(j, "unallocated", m.unallocated);
  AddSize(j, "process_total", m.process_total);
  AddSize(j, "allowed", m.allowed);
  AddSize(j, "device_limit", m.device_limit);
  AddSize(j, "limit_available", m.limit_available);
  AddSize(j, "memory_limit", m.memory_limit);
  AddSize(j, "other_allocations", m.other_allocations);
  AddSize(j, "private_pools", m.private_pools);
  if (!m.other_processes.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : m.other_processes) list.push_back({{"pid", p.pid}, {"bytes", p.size.bytes}});
    j["other_processes"] = std::move(list);
  }
  if (m.xla) {
    nlohmann::json x = nlohmann::json::object();
    AddSize(x, "parameter", m.xla->parameter);
    AddSize(x, "constant", m.xla->constant);
    AddSize(x, "maybe_live_out", m.xla->maybe_live_out);
    AddSize(x, "preallocated_temp", m.xla->preallocated_temp);
    AddSize(x, "total", m.xla->total);
    AddSize(x, "fragmentation", m.xla->fragmentation);
    j["xla_buffers"] = std::move(x);
  }
  if (m.tpu) {
    nlohmann::json t = {{"space", m.tpu->space}};
    AddSize(t, "used", m.tpu->used);
    AddSize(t, "capacity", m.tpu->capacity);
    AddSize(t, "exceeded", m.tpu->exceeded);
    AddSize(t, "reserved", m.tpu->reserved);
    AddSize(t, "program", m.tpu->program);
    AddSize(t, "largest_allocation", m.tpu->largest_allocation);
    j["tpu"] = std::move(t);
  }
  if (!m.tensor_shape.empty()) {
    j["tensor"] = {{"shape", m.tensor_shape}, {"dtype", m.tensor_dtype}, {"allocator", m.allocator}};
  }
  if (m.attempts.size() > 1) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& a : m.attempts) list.push_back(a.bytes);
    j["attempts"] = std::move(list);
  }
  if (d.outside) j["outside"] = *d.outside;
  j["cause"] = traces::ToString(d.cause);
  j["explanation"] = d.explanation;
  j["suggestion"] = d.advice.empty() ? "" : d.advice.front();
  nlohmann::json numbers = nlohmann::json::array();
  for (const auto& n : d.numbers) {
    numbers.push_back({{"symbol", n.symbol}, {"name", n.name}, {"bytes", n.bytes}, {"printed", n.printed}});
  }
  j["numbers"] = std::move(numbers);
  j["arithmetic"] = d.arithmetic;
  j["notes"] = d.notes;
  j["advice"] = d.advice;
  j["fragscope_advice"] = d.fragscope_advice;
  j["inconsistent"] = d.inconsistent;
  if (d.wddm_spill) j["wddm_spill"] = true;
  if (d.host_memory) j["host_memory"] = true;
  j["text"] = m.text;
  return j;
}

int RunMessageReport(const std::string& trace, const evidence::EvidenceInput& input, bool json,
                     std::optional<std::uint32_t> device) {
  std::vector<Item> items;
  for (const traces::OomMessage& m : input.messages()) {
    if (device && MessageDeviceIndex(m) != *device) continue;
    items.push_back({&m, analysis::DiagnoseMessage(m)});
  }
  if (device && items.empty() && !input.messages().empty()) {
    throw UsageError(fmt::format("--device {}: none of the {} out-of-memory message{} names that device", *device,
                                 input.messages().size(), input.messages().size() == 1 ? "" : "s"));
  }
  for (const std::string& warning : input.warnings()) spdlog::warn("{}", warning);
  if (json) {
    PrintJson(trace, input.format(), items, input.warnings(), input.not_failures());
  } else {
    PrintText(trace, items, input.warnings(), input.not_failures());
  }
  // Only "not a failure" warnings: evidence without an OOM, as a trace without one.
  return input.messages().empty() ? kOk : kOom;
}

}  // namespace fragscope::cli
