// The `jal-bench serve` subcommand: its options (CLI11) and running it.
#pragma once

#include <CLI/CLI.hpp>

namespace jal::bench {

struct ServeCommand;

// Adds the subcommand to `app`; the returned object lives as long as the program.
ServeCommand& add_serve_command(CLI::App& app);
bool serve_command_parsed(const ServeCommand& c);
// Runs it, prints the table or the JSON, writes the plot; the exit status.
int run_serve_command(const ServeCommand& c);

}  // namespace jal::bench
