// Entry point of the `lazyslot` executable: dispatches to the subcommands. The only place that exits.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"lazyslot: an LLM inference server whose KV cache uses memory only while it holds tokens"};
  app.require_subcommand(1);
  int exit_code = 0;
  lazyslot::cli::AddEvalCommand(app, &exit_code);
  lazyslot::cli::AddRunCommand(app, &exit_code);
  lazyslot::cli::AddSynthCommand(app, &exit_code);
  lazyslot::cli::AddInspectCommand(app, &exit_code);
  lazyslot::cli::AddServeCommand(app, &exit_code);
  lazyslot::cli::AddBenchMemoryCommand(app, &exit_code);
  lazyslot::cli::AddBenchCommand(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
