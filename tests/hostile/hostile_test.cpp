// The hostile-input suite: every case of tests/hostile/cases.tsv runs a real fragscope executable on
// an input built to break one promise (tests/hostile/generate.sh makes them) and asserts its exit
// code and the first line of its stderr. Around every case: the inputs are the same bytes after the
// run (no command damages what it reads), no .partial file is left behind, and the run ends (ctest's
// timeout catches a hang).
//
// cases.tsv: one case a line, fields separated by tabs:
//   NAME  EXIT  FIRST-LINE  PROGRAM  ARG...
// FIRST-LINE is an ECMAScript regular expression the whole first line of stderr must match ("" for
// an empty stderr), or "stdout~REGEX": some whole line of stdout must match REGEX (for reports). PROGRAM is fragscope or fragscope-train. In FIRST-LINE and the arguments, {in}
// is the case's working copy of tests/hostile/inputs/ (with victim.fst, a copy of the sample trace,
// and victim_link.fst, a link to it, added), and {out} an empty folder for outputs. An argument
// "<FILE" is the program's standard input instead (default /dev/null). Lines starting with # are
// comments.
//
// Print what every case does now (to write a new line): FRAGSCOPE_HOSTILE_PRINT=1 hostile_test
// GCC 12 warns of a maybe-uninitialized std::function inside libstdc++'s std::regex when it inlines
// it with -O2 and ASan (a false positive in the library's own code, located in its headers, which
// gtest includes first): off for this file, whose regexes are its only use of either.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/shell.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::testing::Quote;
using fragscope::testing::Slurp;

const fs::path kSuite = fs::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "hostile";

struct Case {
  std::string name;
  int exit_code = 0;
  std::string first_line;  // a regular expression
  std::vector<std::string> command;  // program, then arguments
  int line = 0;
};

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!text.empty() && text.back() == separator) fields.emplace_back();
  return fields;
}

std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  std::ifstream in(kSuite / "cases.tsv");
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.empty() || text.front() == '#') continue;
    const std::vector<std::string> fields = Split(text, '\t');
    Case c;
    c.line = line;
    if (fields.size() < 4) {
      c.name = "line_" + std::to_string(line) + "_is_malformed";
      c.exit_code = -1000;
      cases.push_back(c);
      continue;
    }
    c.name = fields[0];
    c.exit_code = std::atoi(fields[1].c_str());
    c.first_line = fields[2];
    c.command.assign(fields.begin() + 3, fields.end());
    cases.push_back(c);
  }
  return cases;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string RegexEscape(const std::string& text) {
  static const std::string kSpecial = R"(\^$.|?*+()[]{})";
  std::string escaped;
  for (char c : text) {
    if (kSpecial.find(c) != std::string::npos) escaped += '\\';
    escaped += c;
  }
  return escaped;
}

// Every regular file under `dir` with its bytes.
std::map<std::string, std::string> Contents(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && !entry.is_symlink()) {
      files[fs::relative(entry.path(), dir).string()] = Slurp(entry.path());
    }
  }
  return files;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " (cases.tsv line " << c.line << ")"; }

class Hostile : public ::testing::TestWithParam<Case> {};

TEST_P(Hostile, ExitCodeAndFirstLineOfStderr) {
  const Case& c = GetParam();
#ifndef FRAGSCOPE_HAVE_GUI
  // A build without the inspector (the sanitizer builds) has no `view` subcommand.
  if (c.command.size() > 1 && c.command[1] == "view") GTEST_SKIP() << "built without the inspector GUI";
#endif
  ASSERT_NE(c.exit_code, -1000) << "cases.tsv line " << c.line << ": fewer than 4 tab-separated fields";
  const fs::path work = fs::temp_directory_path() / ("fragscope_hostile_" + std::to_string(::getpid()) + "_" + c.name);
  fs::remove_all(work);
  const fs::path in = work / "in", out = work / "out";
  fs::create_directories(out);
  fs::copy(kSuite / "inputs", in, fs::copy_options::recursive);
  fs::copy_file(fs::path(FRAGSCOPE_SOURCE_DIR) / "traces" / "samples" / "synth-small.fst", in / "victim.fst");
  fs::create_symlink("victim.fst", in / "victim_link.fst");
  const auto before = Contents(in);

  auto expand = [&](const std::string& text) {
    return Replace(Replace(text, "{in}", in.string()), "{out}", out.string());
  };
  std::string command, stdin_from = "/dev/null";
  for (std::size_t i = 0; i < c.command.size(); ++i) {
    std::string arg = expand(c.command[i]);
    if (i > 0 && !arg.empty() && arg.front() == '<') {  // "<FILE": standard input
      stdin_from = arg.substr(1);
      continue;
    }
    if (i == 0) {
      if (arg == "fragscope") arg = FRAGSCOPE_CLI;
      else if (arg == "fragscope-train") arg = FRAGSCOPE_TRAIN;
      else FAIL() << "cases.tsv line " << c.line << ": unknown program " << arg;
    }
    command += (i == 0 ? "" : " ") + Quote(arg);
  }
  const fs::path stdout_file = work / "stdout", stderr_file = work / "stderr";
  command += " <" + Quote(stdin_from) + " >" + Quote(stdout_file.string()) + " 2>" + Quote(stderr_file.string());
  const int status = std::system(command.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::string err = Slurp(stderr_file);
  const std::string first = err.substr(0, err.find('\n'));

  if (std::getenv("FRAGSCOPE_HOSTILE_PRINT") != nullptr) {
    std::printf("%s\t%d\t%s\n", c.name.c_str(), code,
                Replace(first, in.string(), "{in}").c_str());
  }
  EXPECT_EQ(code, c.exit_code) << "cases.tsv line " << c.line << "\nstderr:\n" << err;
  const bool on_stdout = c.first_line.rfind("stdout~", 0) == 0;
  const std::string pattern = Replace(Replace(c.first_line.substr(on_stdout ? 7 : 0), "{in}", RegexEscape(in.string())),
                                      "{out}", RegexEscape(out.string()));
  const std::regex expected(pattern);
  if (on_stdout) {
    std::istringstream lines(Slurp(stdout_file));
    bool found = false;
    for (std::string line; !found && std::getline(lines, line);) found = std::regex_match(line, expected);
    EXPECT_TRUE(found) << "cases.tsv line " << c.line << ": no line of stdout matches " << pattern
                       << "\nstdout:\n" << Slurp(stdout_file);
  } else {
    EXPECT_TRUE(std::regex_match(first, expected))
        << "cases.tsv line " << c.line << "\nfirst line of stderr: " << first << "\nexpected (regex): " << pattern;
  }
  EXPECT_EQ(Contents(in), before) << "an input was changed by the command";
  for (const auto& entry : fs::recursive_directory_iterator(work)) {
    EXPECT_EQ(entry.path().string().find(".partial"), std::string::npos) << "left behind: " << entry.path();
  }
  fs::remove_all(work);
}

INSTANTIATE_TEST_SUITE_P(Cases, Hostile, ::testing::ValuesIn(LoadCases()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
