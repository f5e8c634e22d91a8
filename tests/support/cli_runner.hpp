// Runs an executable as a user would, through the shell, and keeps what it printed and its exit
// code: for the command-line tests (tests/cli/).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/shell.hpp"

namespace fragscope::testing {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs `program` with `args` (each quoted), capturing stdout and stderr in files under `dir`.
// `stdin_path`, when given, becomes its standard input.
inline CliResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                            const std::filesystem::path& dir, const std::string& stdin_path = {}) {
  std::string command = Quote(program);
  for (const auto& arg : args) command += " " + Quote(arg);
  const std::filesystem::path out = dir / "stdout", err = dir / "stderr";
  command += " >" + Quote(out.string()) + " 2>" + Quote(err.string());
  if (!stdin_path.empty()) command += " <" + Quote(stdin_path);
  const int status = std::system(command.c_str());
  CliResult result;
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = Slurp(out);
  result.err = Slurp(err);
  return result;
}

}  // namespace fragscope::testing
