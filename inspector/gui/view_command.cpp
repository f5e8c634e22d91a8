// `fragscope view`: the inspector window, or headless a screenshot (--screenshot) or a benchmark
// (--bench).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "app.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/evidence/readers.hpp"

namespace fragscope::cli {
namespace {

struct ViewCommandOptions {
  std::string trace;
  std::optional<std::uint64_t> at;
  std::string screenshot;
  std::string panel;
  std::string size = "1600x1000";
  bool bench = false;
  bool stacked = false;
  bool fragmentation = false;
  float scale = 0;
  std::vector<std::string> confs;
};

int RunView(const ViewCommandOptions& command) {
  gui::ViewOptions options;
  options.trace = command.trace;
  options.at = command.at;
  options.panel = command.panel;
  options.confs = command.confs;
  options.stacked = command.stacked;
  options.fragmentation = command.fragmentation;
  options.scale = command.scale;
  int w = 0, h = 0;
  char x = 0;
  if (std::sscanf(command.size.c_str(), "%d%c%d", &w, &x, &h) != 3 || x != 'x' || w < 200 || h < 200 ||
      w > 8192 || h > 8192) {
    throw UsageError(fmt::format("--size: '{}' is not WIDTHxHEIGHT (200 to 8192 each)", command.size));
  }
  options.width = w;
  options.height = h;
  const bool headless = !command.screenshot.empty() || command.bench;
  if (headless && command.trace.empty()) throw UsageError("--screenshot and --bench need a TRACE");
  if (!command.panel.empty() && command.screenshot.empty()) {
    // Interactive --panel: still only that panel, as asked.
  }
  if (command.confs.size() == 1 || command.confs.size() > 2) {
    throw UsageError("--alloc-conf: give two (the compare view replays under both)");
  }
  // A bad configuration is bad input, before any window: a headless run would otherwise only draw
  // the error into its PNG and exit 0. ConfigError names the key and quotes the value.
  for (const std::string& conf : command.confs) {
    try {
      (void)ParseAllocConf(conf);
    } catch (const ConfigError& error) {
      throw ConfigError(error.key(), fmt::format("--alloc-conf: {}", error.what()));
    }
  }
  options.persist = !headless;
  gui::App app(options);
  std::string error;
  if (!app.Init(&error)) {
    fmt::print(stderr, "error: {}\n", error);
    return kBadInput;
  }
  if (!command.screenshot.empty()) return app.RunScreenshot(command.screenshot);
  if (command.bench) return app.RunBench();
  return app.RunInteractive();
}

}  // namespace

Command AddView(CLI::App& app) {
  auto options = std::make_shared<ViewCommandOptions>();
  CLI::App* sub = app.add_subcommand("view", "The inspector: timeline, memory map, live allocations, bins, OOMs, "
                                             "compare (a window; headless with --screenshot or --bench)");
  sub->add_option("trace", options->trace, evidence::TraceArgumentHelp());
  sub->add_option("--at", options->at, "put the cursor at this event (default: the first OOM, else the last event)");
  sub->add_option("--screenshot", options->screenshot, "render one frame to this PNG and exit (use xvfb-run headless)");
  sub->add_option("--panel", options->panel, "show only this panel")
      ->check(CLI::IsMember(gui::PanelNames()));
  sub->add_option("--size", options->size, "window size WIDTHxHEIGHT (default 1600x1000)");
  sub->add_flag("--stacked", options->stacked,
                "open the timeline as the active-memory timeline: the largest allocations live at the peak stacked as bands "
                "(a switch in the window too)");
  sub->add_flag("--fragmentation", options->fragmentation,
                "show external fragmentation over time in the timeline, on its own 0..1 scale (a switch in the window too)");
  sub->add_option("--scale", options->scale,
                  fmt::format("text and layout scale, {} to {} (default: the monitor's content scale, 1 under Xvfb)",
                              gui::kMinScale, gui::kMaxScale))
      ->check(CLI::Range(gui::kMinScale, gui::kMaxScale));
  sub->add_flag("--bench", options->bench, "print load time and frame-time percentiles while sweeping zoom and cursor");
  sub->add_option("--alloc-conf", options->confs, "two configurations for the compare view")->take_all();
  return {sub, [options] { return RunView(*options); }};
}

}  // namespace fragscope::cli
