// The subcommands of `fragscope`. Each adds itself to the app and returns the function that runs
// it; the function returns the exit code (0 ok, 1 an OOM was reported, 2 bad input) or throws.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace fragscope::cli {

struct Command {
  CLI::App* subcommand = nullptr;
  std::function<int()> run;
};

Command AddReport(CLI::App& app);
Command AddReplay(CLI::App& app);
Command AddCompare(CLI::App& app);
Command AddMinLimit(CLI::App& app);
Command AddConvert(CLI::App& app);
Command AddSynth(CLI::App& app);
#ifdef FRAGSCOPE_HAVE_GUI
Command AddView(CLI::App& app);  // inspector/gui/view_command.cpp
#endif

inline constexpr const char* kVersion = "0.1.0";

}  // namespace fragscope::cli
