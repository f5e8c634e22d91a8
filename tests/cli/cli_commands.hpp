// Shared by the `fragscope` command tests (cli_test, cli_replay_test, cli_convert_synth_test): the
// names they use and their fixture, which runs the real executable in a temporary folder
// (support/cli_fixture.hpp).
#pragma once

#include <filesystem>

#include "support/cli_fixture.hpp"
#include "support/golden.hpp"
#include "support/shell.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::testing::ExpectGolden;
using fragscope::testing::Quote;
using fragscope::testing::Slurp;

using Result = fragscope::testing::CliResult;

class Cli : public fragscope::testing::CliTest {};

}  // namespace
