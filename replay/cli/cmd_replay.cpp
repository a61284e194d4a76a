// `alloclab replay TRACE -s SPEC [-s SPEC ...]`: the comparison at the heart of alloclab.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "alloclab/replay/parallel.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/params.hpp"
#include "cli_common.hpp"
#include "progress.hpp"
#include "replay_table.hpp"

namespace alloclab::cli {
namespace {

struct ReplayCommand {
  std::string path;
  std::string format;
  std::vector<std::string> specs;
  std::string json_out;
  std::string csv_out;
  std::size_t jobs = 0;
  std::string memory_limit;
  bool check = false;
};

void run_replay(const ReplayCommand& cmd, const std::string& command_line) {
  LoadedTrace loaded = load_trace(cmd.path, cmd.format);
  const ResolvedTrace resolved = resolve(loaded.trace);
  TraceSummary summary = summarize(loaded.trace, resolved);
  summary.source = cmd.path;
  summary.file_bytes = loaded.file_bytes;
  loaded.trace.clear();  // the resolved form is all a replay needs

  ReplayOptions options;
  if (!cmd.memory_limit.empty()) options.memory_limit = parse_size(cmd.memory_limit);
  options.check_invariants = cmd.check;
  InterruptGuard interrupt;
  options.cancel = &interrupt.flag();
  ProgressBar progress("replay", resolved.ops.size() * cmd.specs.size());
  options.progress = &progress.counter();

  std::vector<StrategyResult> results(cmd.specs.size());
  std::vector<char> cut(cmd.specs.size(), 0);
  parallel_for(cmd.specs.size(), cmd.jobs, [&](std::size_t i) {
    ReplayOutcome outcome = replay_sim(resolved, cmd.specs[i], options);
    results[i] = std::move(outcome.result);
    cut[i] = outcome.interrupted;
  });
  if (interrupt.interrupted()) {
    // A report of a cut-short replay would look like a real answer: write none.
    std::fprintf(stderr, "alloclab: interrupted; no report written\n");
    set_exit_status(130);
    return;
  }
  if (resolved.implicit_run)
    std::printf("(no run markers in the trace: it is replayed as one run)\n");
  print_results_table(results);

  ReportContext context;
  context.command_line = command_line;
  if (!cmd.json_out.empty()) {
    write_json_output(cmd.json_out, make_report(summary, results, context));
  }
  if (!cmd.csv_out.empty()) {
    write_output(cmd.csv_out, [&](std::ostream& out) { write_results_csv(out, results); });
  }
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto cmd = std::make_shared<ReplayCommand>();
  CLI::App* sub = app.add_subcommand(
      "replay", "Replay a trace against strategies in deterministic simulation and compare them");
  sub->add_option("trace", cmd->path, "trace file")->required();
  sub->add_option("-s,--strategy", cmd->specs,
                  "strategy spec, e.g. exact or fifo-shrink:max=64MiB (repeatable; "
                  "`alloclab strategies` lists them)")
      ->required();
  sub->add_option("--json", cmd->json_out, "write the JSON report here");
  sub->add_option("--csv", cmd->csv_out, "write one CSV row per strategy here");
  sub->add_option("-j,--jobs", cmd->jobs, "threads (default: all cores)");
  sub->add_option("--from", cmd->format, "input format: alt, csv, rmm, torch");
  sub->add_option("--memory-limit", cmd->memory_limit,
                  "emulate a device of this size (e.g. 8GiB): the upstream fails beyond it");
  sub->add_flag("--check", cmd->check, "check invariants after every operation (slow)");
  sub->callback([cmd] { run_replay(*cmd, command_line()); });
}

}  // namespace alloclab::cli
