#pragma once
// What the subcommands share that is about the command line alone, and so belongs to no
// library: each command's registration, the command line as typed and the exit status main()
// returns, the option check CLI11 lacks, --from read as a trace format, and an input loaded with
// its warnings on stderr. The work itself is the modules' (format/, replay/, tracer/launch/).
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/load.hpp"

namespace alloclab::cli {

// Every subcommand, each defined in its cmd_<name>.cpp.
void add_all_commands(CLI::App& app);
void add_info_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_strategies_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_advise_command(CLI::App& app);
void add_record_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_gui_command(CLI::App& app);
void add_sites_command(CLI::App& app);

// The command line as the user typed it (recorded in reports).
void set_command_line(int argc, char** argv);
const std::string& command_line();

// Status main() returns after a command ran without throwing (a command may set it non-zero,
// e.g. 130 when Ctrl-C stopped a replay, or the recorded program's status).
int exit_status();
void set_exit_status(int status);

// CLI11 (2.1) reads "-3" into an unsigned option as 2^64 - 3: a count, a size or a seed would
// then ask for the impossible (generate --runs -3 allocated until the kernel killed it).
CLI::Validator not_negative();

// --from: the format it names, or none (detect it) when not given. Throws
// std::invalid_argument for a name alloclab does not know.
std::optional<TraceFormat> from_option(const std::string& from);

// load_trace and load_resolved (alloclab/format/load.hpp) of an input named on the command line,
// each load warning printed to stderr as alloclab prints every warning: a truncated .alt still
// loads, loudly.
LoadedTrace load_input(const std::string& path, const std::string& from);
// `min_size`: ResolveOptions::min_size (--min-size).
ResolvedLoad load_replay_input(const std::string& path, const std::string& from,
                               std::uint64_t min_size = 0);

// --min-size SIZE (a byte count or a size with a unit, e.g. 128KiB) into `target`, for `run`
// and for the commands that replay as it runs: `what` says what the option does.
CLI::Option* add_min_size_option(CLI::App* command, std::uint64_t& target, const std::string& what);

// `text` to standard output, as it is.
void print(const std::string& text);

}  // namespace alloclab::cli
