// fragscope: analyse, replay and convert allocation traces. See `fragscope --help`.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/traces/atomic_file.hpp"
#include "fragscope/traces/did_you_mean.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/evidence/evidence_input.hpp"

namespace {

// A report that could not be written (a full disk, a closed pipe, /dev/full) must not exit 0 as if
// it had been: what the command printed is flushed and checked here, once, at the end.
int FinishStdout(int code) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && std::cout.good() && std::ferror(stdout) == 0) return code;
  fmt::print(stderr, "error: <stdout>: write failed{}{}\n", error != 0 ? ": " : "",
             error != 0 ? std::strerror(error) : "");
  return fragscope::cli::kBadInput;
}

// The first word that is not an option (nor --log-level's value), when it names no command: what
// to say about it. Empty when the command line names a command, or none (CLI11 says that).
std::optional<std::string> UnknownCommand(CLI::App& app, int argc, char** argv) {
  std::vector<std::string_view> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--log-level") {
      ++i;  // its value
      continue;
    }
    if (word.empty() || word.front() == '-') continue;
    if (std::find(names.begin(), names.end(), word) != names.end()) return std::nullopt;
    std::string list;
    for (std::size_t k = 0; k < names.size(); ++k) list += (k == 0 ? "" : ", ") + std::string(names[k]);
    std::string message = fmt::format("unknown command '{}'; the commands are {}", word, list);
    if (const std::string_view best = fragscope::traces::DidYouMean(word, names); !best.empty()) {
      message += fmt::format(" (did you mean '{}'?)", best);
    }
    return message;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fragscope;
  CLI::App app{"fragscope: replay GPU memory allocation traces, measure fragmentation and explain "
               "out-of-memory errors.\n\nExit codes: 0 ok, 1 an OOM was reported, 2 bad input or "
               "usage.",
               "fragscope"};
  app.require_subcommand(1);
  // Options of the whole program (--log-level) may follow the command too.
  app.fallthrough();
  // CLI11's usage errors in the form of the program's own: "error: ...".
  app.failure_message([](const CLI::App*, const CLI::Error& error) {
    return fmt::format("error: {}\nRun with --help for more information.\n", error.what());
  });
  app.set_version_flag("--version", cli::kVersion);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "log level on stderr: trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  std::map<const CLI::App*, std::function<int()>> commands;
  for (auto adder : {cli::AddReport, cli::AddReplay, cli::AddCompare, cli::AddMinLimit,
                     cli::AddConvert, cli::AddSynth}) {
    cli::Command command = adder(app);
    commands.emplace(command.subcommand, std::move(command.run));
  }
#ifdef FRAGSCOPE_HAVE_GUI
  {
    cli::Command command = cli::AddView(app);
    commands.emplace(command.subcommand, std::move(command.run));
  }
#endif

  // Every command that reads a trace caps what the trace may expand to (docs/cli.md, "Limits on
  // inputs"); synth reads none.
  std::uint64_t max_events = traces::ReadLimits::kDefaultMaxEvents;
  std::uint32_t max_devices = traces::ReadLimits::kDefaultMaxDevices;
  std::map<const CLI::App*, CLI::Option*> max_events_options;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == "synth") continue;
    max_events_options[sub] =
        sub->add_option("--max-events", max_events,
                        "refuse a trace that holds more events than this (counting every repetition "
                        "an input expands to); giving it also lifts the check of events against the "
                        "file's size")
            ->capture_default_str()
            ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
    sub->add_option("--max-devices", max_devices, "refuse a trace that names more devices than this")
        ->capture_default_str()
        ->check(CLI::Range(std::uint32_t{1}, std::uint32_t{1} << 20));
  }

  // A misspelt command reads "a subcommand is required" from CLI11: name it, and the commands.
  if (const std::optional<std::string> unknown = UnknownCommand(app, argc, argv)) {
    fmt::print(stderr, "error: {}\nRun with --help for more information.\n", *unknown);
    return cli::kBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);  // prints help, version or the usage error
    return code == 0 ? cli::kOk : cli::kBadInput;
  }

  // The libraries' own logger (stderr) doubles as the command's default one.
  fragscope::Log();
  spdlog::set_default_logger(spdlog::get("fragscope"));
  spdlog::set_level(spdlog::level::from_str(log_level));

  const CLI::App* chosen = app.get_subcommands().front();
  {
    traces::ReadLimits limits;
    limits.max_events = max_events;
    limits.max_devices = max_devices;
    const auto given = max_events_options.find(chosen);
    limits.check_proportion = given == max_events_options.end() || given->second->count() == 0;
    evidence::EvidenceInput::SetDefaultLimits(limits);
  }
  // What the command was doing with which file, for failures that do not say it themselves.
  const auto doing = []() -> std::optional<evidence::InputActivity> {
    return evidence::EvidenceInput::CurrentActivity();
  };
  try {
    return FinishStdout(commands.at(chosen)());
  } catch (const std::bad_alloc&) {
    if (const auto activity = doing()) {
      fmt::print(stderr,
                 "error: out of host memory while {} {} (the input describes {}; limit it with "
                 "--max-events)\n",
                 activity->reading ? "reading" : "analysing", activity->path, activity->Describe());
    } else {
      fmt::print(stderr, "error: out of host memory\n");
    }
    return cli::kBadInput;
  } catch (const traces::TraceError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const ConfigError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const cli::UsageError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const Error& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const traces::OutputError& error) {
    // About the output, which the message names: the input's context would mislead.
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const std::exception& error) {
    // An internal failure (a limit of the analysis, a library's error): name the file.
    const auto activity = doing();
    const std::string_view what = error.what();
    if (activity && what.find(activity->path) == std::string_view::npos) {
      fmt::print(stderr, "error: {}: {} (while {} it; the input describes {})\n", activity->path, what,
                 activity->reading ? "reading" : "analysing", activity->Describe());
    } else {
      fmt::print(stderr, "error: {}\n", what);
    }
  }
  return cli::kBadInput;
}
