// Making and converting traces:
//   fragscope convert IN OUT [--to fst|jsonl]
//   fragscope synth --events N [--seed S] [--devices D] [--alloc-conf STR] --out TRACE
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/analysis/synth.hpp"
#include "fragscope/traces/atomic_file.hpp"
#include "fragscope/traces/chrome_trace.hpp"
#include "fragscope/traces/jsonl.hpp"
#include "fragscope/traces/rmm_csv.hpp"
#include "fragscope/traces/atomic_file.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "fragscope/evidence/readers.hpp"

namespace fragscope::cli {
namespace {

struct ConvertOptions {
  std::string in;
  std::string out;
  std::string to;
};

std::string FormatFromExtension(const std::string& path) {
  const auto dot = path.rfind('.');
  const std::string extension = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (extension == "jsonl") return "jsonl";
  if (extension == "json") return "chrome";
  if (extension == "csv") return "rmm-csv";
  return "fst";
}

int RunConvert(const ConvertOptions& options) {
  const std::string to = options.to.empty() ? FormatFromExtension(options.out) : options.to;
  // Before anything is read or created: converting a file onto itself would destroy it.
  RefuseStandardOutput(options.out, "OUT");
  traces::RefuseOutputOverInput(options.out, {options.in});
  auto input = evidence::EvidenceInput::Open(options.in);
  if (input->header().kind == traces::EvidenceKind::kMessage) {
    // Its numbers are in the diagnosis `report` prints, not in events: a converted trace would be
    // empty, and say nothing.
    throw UsageError(fmt::format("{}: an error message ({}) holds numbers, not allocations: there is "
                                 "nothing to convert; `fragscope report` explains it",
                                 options.in, input->format()));
  }
  if (input->header().kind == traces::EvidenceKind::kState && (to == "rmm-csv" || to == "chrome")) {
    // An RMM log and a Chrome trace hold events in time only: written from a state, its live chunks
    // would read back as allocations made one after another, an invented history (DESIGN.md).
    throw UsageError(fmt::format(
        "{}: a state ({}): one moment of memory, not a history of allocations and frees, and {} holds "
        "only a history: writing one would invent an order of allocations. A fragscope trace (.fst, "
        "--to fst) or JSON Lines (.jsonl, --to jsonl) keeps it as a state",
        options.in, input->format(), to == "rmm-csv" ? "an RMM CSV log" : "a Chrome trace"));
  }
  ProgressBar bar("converting", input->bytes_total());
  std::vector<traces::Event> block;
  std::uint64_t events = 0;
  if (to == "fst") {
    traces::TraceWriterOptions writer_options;
    writer_options.inputs = {options.in};
    traces::TraceWriter writer(options.out, input->header(), writer_options);
    // Tag ids of the output are the writer's own: map each input id by its name.
    std::unordered_map<traces::TagId, traces::TagId> tag_map;
    while (input->NextBlock(&block)) {
      for (traces::Event& event : block) {
        if (event.tag != traces::kNoTag) {
          auto it = tag_map.find(event.tag);
          if (it == tag_map.end()) {
            const traces::TagId id = event.tag <= input->tags().size() ? writer.Intern(input->tags()[event.tag - 1])
                                                                      : traces::kNoTag;
            it = tag_map.emplace(event.tag, id).first;
          }
          event.tag = it->second;
        }
        writer.Append(event);  // keeps the original sequence numbers
      }
      events += block.size();
      bar.Update(input->bytes_done(), input->bytes_total());
    }
    writer.Close();
  } else {
    // The text formats are written from the whole trace in memory.
    traces::Trace trace;
    trace.header = input->header();
    while (input->NextBlock(&block)) {
      trace.events.insert(trace.events.end(), block.begin(), block.end());
      bar.Update(input->bytes_done(), input->bytes_total());
    }
    trace.tags = input->tags();
    events = trace.events.size();
    traces::AtomicFile file(options.out, {options.in});
    std::ostream& out = file.stream();
    if (to == "jsonl") traces::WriteJsonl(trace, out);
    else if (to == "rmm-csv") traces::WriteRmmCsv(trace, out);
    else traces::WriteChromeTrace(trace, out);
    file.Commit();
  }
  for (const auto& warning : input->warnings()) spdlog::warn("{}", warning);
  fmt::print(stderr, "{} events from {} ({}) written to {} ({})\n", events, options.in, input->format(),
             options.out, to);
  return kOk;
}

struct SynthCommandOptions {
  analysis::SynthOptions synth;
  std::string conf;  // --alloc-conf; blank: FRAGSCOPE_ALLOC_CONF, else synth's default
  std::string out;
};

bool Blank(std::string_view text) { return text.find_first_not_of(" \t\r\n") == std::string_view::npos; }

int RunSynth(const SynthCommandOptions& options) {
  RefuseStandardOutput(options.out, "--out");
  // The allocator that runs the workload: --alloc-conf, else FRAGSCOPE_ALLOC_CONF (as every
  // command), else a simulated 80 GiB device under the default policy.
  analysis::SynthOptions synth = options.synth;
  std::string source = "--alloc-conf";
  if (!Blank(options.conf)) {
    synth.alloc_conf = options.conf;
  } else if (const char* env = std::getenv(kAllocConfEnv); env != nullptr && !Blank(env)) {
    synth.alloc_conf = env;
    source = kAllocConfEnv;
  }
  traces::TraceHeader header;
  try {
    header = analysis::SynthHeader(synth);
  } catch (const ConfigError& error) {
    throw ConfigError(error.key(), fmt::format("{}: {}", source, error.what()));  // name where it came from
  }
  if (source == kAllocConfEnv) spdlog::info("synth: the allocator of {}: {}", kAllocConfEnv, header.alloc_conf);
  traces::TraceWriter writer(options.out, header);
  ProgressBar bar("synthesizing", synth.events);
  synth.progress = [&](std::uint64_t done, std::uint64_t total) { bar.Update(done, total); };
  analysis::Synthesize(synth, writer);
  writer.Close();
  fmt::print(stderr, "{} events written to {} ({} bytes)\n", writer.events_written(), options.out,
             writer.bytes_written());
  return kOk;
}

}  // namespace

Command AddConvert(CLI::App& app) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* sub = app.add_subcommand("convert", "Convert a trace to another format");
  sub->add_option("in", options->in, "input " + evidence::TraceArgumentHelp())->required();
  sub->add_option("out", options->out, "output file")->required();
  sub->add_option("--to", options->to,
                  "output format: fst, jsonl (JSON Lines), rmm-csv (RMM logging_resource_adaptor "
                  "CSV), chrome (Chrome trace JSON with counters, for Perfetto); default from OUT's "
                  "extension: .jsonl, .csv, .json, else fst")
      ->check(CLI::IsMember({"fst", "jsonl", "rmm-csv", "chrome"}));
  return {sub, [options] { return RunConvert(*options); }};
}

constexpr std::uint64_t kMaxSynthEvents = 1'000'000'000;

Command AddSynth(CLI::App& app) {
  auto options = std::make_shared<SynthCommandOptions>();
  CLI::App* sub = app.add_subcommand("synth", "Make a synthetic training-like trace (seeded), for "
                                              "tests and benchmarks");
  // At most 10^9 events: synth writes about 2.8 million events a second at 1.3 bytes each (measured),
  // so 10^9 takes about 6 minutes and 1.3 GB of disk, and reading it back needs --max-events 10^9
  // and about 66 GB of memory for a replay; more is beyond any test or benchmark (10^12, accepted
  // before, would have run four days and filled 1.3 TB).
  sub->add_option("--events", options->synth.events,
                  "about this many alloc and free events (at most 1000000000)")
      ->required()
      ->check(CLI::Range(std::uint64_t{1}, kMaxSynthEvents));
  sub->add_option("--seed", options->synth.seed, "random seed (same seed, same trace)")->capture_default_str();
  sub->add_option("--devices", options->synth.devices, "devices training data-parallel")->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  sub->add_option("--alloc-conf", options->conf,
                  "the allocator that runs the workload (default: FRAGSCOPE_ALLOC_CONF, else " +
                      options->synth.alloc_conf + ")");
  sub->add_option("--out", options->out, "trace file to write")->required();
  return {sub, [options] { return RunSynth(*options); }};
}

}  // namespace fragscope::cli
