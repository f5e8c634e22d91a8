// fragscope: analyse, replay and convert allocation traces. See `fragscope --help`.
#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/traces/trace_reader.hpp"

int main(int argc, char** argv) {
  using namespace fragscope;
  CLI::App app{"fragscope: replay GPU memory allocation traces, measure fragmentation and explain "
               "out-of-memory errors.\n\nExit codes: 0 ok, 1 an OOM was reported, 2 bad input or "
               "usage.",
               "fragscope"};
  app.require_subcommand(1);
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
  try {
    return commands.at(chosen)();
  } catch (const traces::TraceError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const ConfigError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const cli::UsageError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const Error& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  } catch (const std::exception& error) {
    fmt::print(stderr, "error: {}\n", error.what());
  }
  return cli::kBadInput;
}
