#pragma once
// What every subcommand shares: loading a trace of any supported format, number formatting.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "alloclab/format/summary.hpp"
#include "alloclab/format/trace.hpp"
#include "alloclab/format/units.hpp"

namespace CLI {
class App;
}

namespace alloclab::cli {

struct LoadedTrace {
  Trace trace;
  std::optional<std::uint64_t> file_bytes;  // set for .alt input (bytes per event on disk)
};

// Reads a trace in any format alloclab reads; `format` overrides detection by extension.
// Prints load warnings to stderr (a truncated .alt still loads, loudly).
LoadedTrace load_trace(const std::string& path, const std::string& format = {});

// Writes an output file whole or not at all: `write` fills a temporary file beside `path` (a
// hidden name that ends like `path`, so `.gz` and the format still follow from it), renamed over
// `path` once complete. A failed write, an exception or a SIGINT/SIGTERM/SIGHUP meanwhile
// removes the temporary file: no half-written output and no litter, ever. Errors name `path`,
// never the temporary file. Whether `path` may be written at all is OutputPlan's question
// (alloclab/format/output_files.hpp), asked before the work starts.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string& temporary)>& write);
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);
void write_json_output(const std::string& path, const nlohmann::json& value);

// What replay, sweep and advise start from: the resolved trace and its summary (the events
// themselves are dropped once resolved).
struct ReplayInput {
  ResolvedTrace resolved;
  TraceSummary summary;
};
ReplayInput load_for_replay(const std::string& path, const std::string& format);

// What a replay's numbers rest on, printed before its table (replay, sweep, advise): a trace
// without run markers is one run; a trace with anomalies was repaired to be replayed (a free of
// an unknown address skipped, a missed free supplied), with a pointer to `alloclab info`.
void print_replay_notes(const TraceSummary& summary);

// The folder of the running alloclab binary (build/bin): the GUI program lives beside it, the
// preload and injection libraries in ../lib.
std::filesystem::path binary_dir();

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
void add_calibrate_command(CLI::App& app);
void add_gui_command(CLI::App& app);

// The command line as the user typed it (recorded in reports).
void set_command_line(int argc, char** argv);
const std::string& command_line();

// Status main() returns after a command ran without throwing (a command may set it non-zero,
// e.g. when a replay had failed requests and --strict was given).
int exit_status();
void set_exit_status(int status);

}  // namespace alloclab::cli
