// The subcommands of the `lazyslot` executable. Each Add*Command creates its subcommand on `root`, with its
// options and a callback that stores the process exit code in *exit_code (0 ok, 1 error, 2 usage).
#pragma once

#include <CLI/CLI.hpp>

namespace lazyslot::cli {

void AddEvalCommand(CLI::App& root, int* exit_code);
void AddRunCommand(CLI::App& root, int* exit_code);
void AddSynthCommand(CLI::App& root, int* exit_code);
void AddInspectCommand(CLI::App& root, int* exit_code);
void AddServeCommand(CLI::App& root, int* exit_code);
void AddBenchMemoryCommand(CLI::App& root, int* exit_code);
void AddBenchCommand(CLI::App& root, int* exit_code);

}  // namespace lazyslot::cli
