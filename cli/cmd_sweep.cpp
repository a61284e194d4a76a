// `alloclab sweep TRACE -s TEMPLATE [-s TEMPLATE ...] [--shard i/n]`: replays every point of
// spec templates such as `fifo-shrink:max={1MiB..4GiB:x2}` (sweep.hpp has the forms).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <ostream>

#include "alloclab/format/output_files.hpp"
#include "alloclab/replay/progress.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/replay/sweep.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct SweepCommand {
  std::string path;
  std::string format;
  std::uint64_t min_size = 0;
  std::vector<std::string> templates;
  std::string json_out;
  std::string csv_out;
  std::size_t jobs = 0;
  std::string shard = "0/1";
  bool force = false;
};

void run_sweep_command(const SweepCommand& cmd, const std::string& command_line) {
  // Templates, specs and the shard are checked before the trace is read: a typo fails at once.
  SweepRun run = plan_sweep(cmd.templates, parse_shard(cmd.shard));
  OutputPlan(cmd.force)
      .input(cmd.path)
      .output("--json", cmd.json_out)
      .output("--csv", cmd.csv_out)
      .check();

  ResolvedLoad input = load_replay_input(cmd.path, cmd.format, cmd.min_size);
  const ResolvedTrace& resolved = input.resolved;
  const TraceSummary& summary = input.summary;

  ReplayOptions options;
  InterruptGuard interrupt;
  options.cancel = &interrupt.flag();
  ProgressBar progress("sweep", resolved.ops.size() * run.point_indices.size());
  options.progress = &progress.counter();
  replay_sweep(resolved, run, options, cmd.jobs);
  if (run.interrupted || interrupt.interrupted()) {
    std::fprintf(stderr, "alloclab: interrupted; no report written\n");
    set_exit_status(130);
    return;
  }

  print(replay_notes_text(summary));
  print(sweep_table_text(run));
  input.resolved = ResolvedTrace{};  // the report needs only the results: give the trace back

  ReportContext context;
  context.command_line = command_line;
  if (!cmd.json_out.empty()) {
    write_json_file(cmd.json_out, make_sweep_report(summary, run, context));
  }
  if (!cmd.csv_out.empty()) {
    write_output(cmd.csv_out, [&](std::ostream& out) { write_sweep_csv(out, run); });
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto cmd = std::make_shared<SweepCommand>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Replay every point of spec templates such as fifo-shrink:max={1MiB..4GiB:x2}");
  sub->add_option("trace", cmd->path, "trace file")->required();
  sub->add_option("-s,--strategy", cmd->templates,
                  "spec template (repeatable): {a..b:xK} multiplies, {a..b:+K} adds, {x,y,z} "
                  "lists; a spec without braces is one point")
      ->required()
      ->type_name("TEMPLATE");
  sub->add_option("--json", cmd->json_out, "write the JSON report (with a \"sweep\" object) here")
      ->type_name("FILE");
  sub->add_option("--csv", cmd->csv_out, "write one CSV row per point here (first column: point)")
      ->type_name("FILE");
  sub->add_flag("-f,--force", cmd->force, "replace the --json and --csv files if they exist");
  sub->add_option("-j,--jobs", cmd->jobs, "threads (default: all cores)")
      ->check(not_negative())
      ->type_name("N");
  sub->add_option("--shard", cmd->shard,
                  "replay only shard i of n (0-based): the points k with k % n == i; join the "
                  "shard reports with `alloclab merge`")
      ->type_name("I/N");
  sub->add_option("--from", cmd->format, "input format: alt, csv, rmm, torch")->type_name("FORMAT");
  add_min_size_option(
      sub, cmd->min_size,
      "leave host allocations of fewer bytes (and those aligned above 64 bytes, and mappings) to "
      "the real allocator, not to the strategy, as `alloclab run` does (default 0: none)");
  sub->callback([cmd] { run_sweep_command(*cmd, command_line()); });
}

}  // namespace alloclab::cli
