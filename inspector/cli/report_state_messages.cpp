// A state read from a log that also holds out-of-memory error messages (a PyTorch memory summary
// printed after the error, docs/cli.md "report"): each message is explained as it would be alone,
// and its numbers are checked against the state of its device nearest to it — the failure from the
// message, the moment's counters from the summary.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "report_message.hpp"
#include "report_view.hpp"

namespace fragscope::cli {
namespace {

using traces::FormatBytes;

// The moment to check a message against: of its device, the first printed after it (an except
// handler prints the summary after the error), else the last printed before it.
const analysis::StateFindings* NearestState(const traces::OomMessage& m, const std::vector<analysis::StateFindings>& states) {
  const std::uint32_t device = MessageDeviceIndex(m);
  const analysis::StateFindings* before = nullptr;
  for (const analysis::StateFindings& s : states) {
    if (s.device != device || s.line == 0) continue;
    if (s.line > m.line) return &s;
    before = &s;
  }
  return before;
}

// One number of the message against the state's: they agree where the ranges each one's printing
// allows overlap (the message's half a last digit, the summary's unit it rounds down to).
void Compare(const char* symbol, const std::optional<traces::PrintedSize>& printed, const char* row,
             const std::optional<std::uint64_t>& counted, std::uint64_t margin, MessageBesideState& out) {
  if (!printed || !counted) return;
  const std::uint64_t low = printed->bytes - std::min(printed->bytes, printed->tolerance);
  const std::uint64_t high = printed->bytes + printed->tolerance;
  const std::uint64_t top = *counted + margin;
  const bool agree = high >= *counted && low <= top;
  const std::string within = margin > 0 ? fmt::format(" (or up to {} more)", FormatBytes(margin)) : std::string();
  std::string verdict = "they agree";
  if (!agree) {
    const std::uint64_t gap = low > top ? low - top : *counted - high;
    verdict = fmt::format("they differ by at least {}", FormatBytes(gap));
    out.agrees = false;
  }
  out.checks.push_back(fmt::format("{} = {} in the message, {} {}{} in the summary: {}", symbol, printed->text, row,
                                   FormatBytes(*counted), within, verdict));
}

}  // namespace

std::vector<MessageBesideState> MessagesBesideState(const std::vector<traces::OomMessage>& messages,
                                                    const std::vector<analysis::StateFindings>& states,
                                                    std::optional<std::uint32_t> device) {
  std::vector<MessageBesideState> out;
  for (const traces::OomMessage& m : messages) {
    if (device && MessageDeviceIndex(m) != *device) continue;
    MessageBesideState item{&m, analysis::DiagnoseMessage(m), NearestState(m, states), {}, true};
    if (item.state != nullptr) {
      const analysis::StateFindings& s = *item.state;
      Compare("A", m.allocated, "Allocated memory", s.in_use, s.size_margin, item);
      Compare("Rv", m.reserved, "reserved memory", s.reserved, s.size_margin, item);
      std::optional<std::uint64_t> free;
      if (s.in_use && s.reserved && *s.reserved >= *s.in_use) free = *s.reserved - *s.in_use;
      Compare("U", m.unallocated, "reserved less Allocated memory", free, s.size_margin, item);
      if (item.checks.empty()) item.checks.push_back("the message gives no number the summary also counts");
      // What the message cannot say: how much of the cache is split inside partly used segments.
      if (s.non_releasable && free && *free > 0) {
        item.checks.push_back(fmt::format(
            "the summary's Non-releasable memory, {}, is {}% of its reserved but unallocated {}: that much of the "
            "cache lies inside segments that also hold live blocks",
            FormatBytes(*s.non_releasable), static_cast<unsigned>(std::min(100.0, 100.0 * static_cast<double>(*s.non_releasable) / static_cast<double>(*free))),
            FormatBytes(*free)));
      }
      if (s.line > m.line && s.oom_count && *s.oom_count == 0) {
        item.checks.push_back("the summary, printed after the error, counts no OOM: its statistics were reset in "
                              "between, or it is another process's");
        item.agrees = false;
      }
      if (!item.agrees) {
        item.checks.push_back(s.line > m.line ? "the summary was printed at another moment than the error"
                                              : "the summary was printed before the error, at another moment");
      }
    }
    out.push_back(std::move(item));
  }
  return out;
}

void PrintMessagesBesideStateText(const std::vector<MessageBesideState>& items) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    const MessageBesideState& item = items[i];
    PrintMessageText(i + 1, *item.message, item.diagnosis);
    if (item.state == nullptr) {
      fmt::print("  no memory summary of its device to check it against\n");
      continue;
    }
    fmt::print("  checked against the memory summary on line {}:\n", item.state->line);
    for (const std::string& check : item.checks) fmt::print("    {}\n", check);
  }
}

nlohmann::json MessagesBesideStateJson(const std::vector<MessageBesideState>& items) {
  nlohmann::json list = nlohmann::json::array();
  for (const MessageBesideState& item : items) {
    nlohmann::json entry = MessageOomJson(*item.message, item.diagnosis);
    entry["device"] = MessageDeviceIndex(*item.message);
    entry["summary_check"] = item.state == nullptr ? nlohmann::json()
                                                   : nlohmann::json{{"summary_line", item.state->line},
                                                                    {"agrees", item.agrees},
                                                                    {"checks", item.checks}};
    list.push_back(std::move(entry));
  }
  return list;
}

}  // namespace fragscope::cli
