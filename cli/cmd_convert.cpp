// `alloclab convert IN OUT`: between .alt and the interchange formats.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/output_files.hpp"
#include "alloclab/format/start_state.hpp"
#include "alloclab/format/trim.hpp"
#include "alloclab/format/units.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string from;
  std::string to;
  bool trim_to_runs = false;
  bool force = false;
};

void run_convert(const ConvertOptions& options) {
  OutputPlan(options.force).input(options.input).output("OUT", options.output).check();
  LoadedTrace loaded = load_input(options.input, options.from);
  if (options.trim_to_runs) {
    TrimStats stats;
    loaded.trace = trim_to_runs(loaded.trace, &stats);
    std::fprintf(stderr,
                 "alloclab: kept %s of the runs (dropped %s before, %s after, %s of blocks "
                 "allocated before the first run)\n",
                 counted(stats.kept_events, "event").c_str(), grouped(stats.dropped_before).c_str(),
                 grouped(stats.dropped_after).c_str(),
                 counted(stats.dropped_frees_of_earlier_blocks, "free").c_str());
    if (stats.dropped_stacks != 0 || stats.dropped_frames != 0)
      std::fprintf(stderr, "alloclab: dropped %s and %s that no kept event uses\n",
                   counted(stats.dropped_stacks, "call stack").c_str(),
                   counted(stats.dropped_frames, "frame").c_str());
  }
  TraceFormat to = output_format_from_path(options.output);
  if (!options.to.empty()) {
    const auto parsed = parse_format(options.to);
    if (!parsed)
      throw std::invalid_argument("unknown output format '" + options.to +
                                  "' (accepted: alt, csv, chrome)");
    to = *parsed;
  }
  // CSV has no place for it: the converted trace's frees of those blocks become frees of
  // unknown addresses.
  if (to == TraceFormat::csv && loaded.trace.metadata.contains(kStartStateKey))
    std::fprintf(stderr,
                 "alloclab: warning: %s starts from a recorded allocator state, which CSV cannot "
                 "hold: convert to .alt to keep it\n",
                 options.input.c_str());
  write_atomically(options.output,
                   [&](const std::string& temporary) { write_trace(loaded.trace, temporary, to); });
  std::fprintf(stderr, "alloclab: converted %s: %s -> %s\n",
               counted(loaded.trace.size(), "event").c_str(), options.input.c_str(),
               options.output.c_str());
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a trace between formats (by extension, or --from/--to)");
  cmd->add_option("input", options->input, "input trace")->required();
  cmd->add_option("output", options->output, "output file")->required();
  cmd->add_option("--from", options->from, "input format: alt, csv, rmm, torch")
      ->type_name("FORMAT");
  cmd->add_option("--to", options->to, "output format: alt, csv, chrome (Perfetto)")
      ->type_name("FORMAT");
  cmd->add_flag("-f,--force", options->force, "replace OUT if it exists");
  cmd->add_flag("--trim-to-runs", options->trim_to_runs,
                "keep only the events from the first run_begin to the last run_end");
  cmd->callback([options] { run_convert(*options); });
}

}  // namespace alloclab::cli
