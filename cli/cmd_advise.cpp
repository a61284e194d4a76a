// `alloclab advise TRACE [--target 0.99]`: "what default max size?" for fifo-shrink, answered by
// the search of advise.hpp.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "alloclab/format/output_files.hpp"
#include "alloclab/replay/advise.hpp"
#include "alloclab/replay/progress.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct AdviseCommand {
  std::string path;
  std::string format;
  std::string json_out;
  std::size_t jobs = 0;
  double target = 0.99;
  bool force = false;
};

void run_advise(const AdviseCommand& cmd, const std::string& command_line) {
  OutputPlan(cmd.force).input(cmd.path).output("--json", cmd.json_out).check();
  const ResolvedLoad input = load_replay_input(cmd.path, cmd.format);
  const ResolvedTrace& resolved = input.resolved;
  const TraceSummary& summary = input.summary;

  const std::vector<AdviceFamily> families = default_advice_families();
  AdviseOptions options;
  options.target = cmd.target;
  options.threads = cmd.jobs;
  InterruptGuard interrupt;
  options.cancel = &interrupt.flag();
  ProgressBar progress("advise",
                       resolved.ops.size() * families.size() * advise_replay_budget(resolved));
  options.progress = &progress.counter();
  const AdviseOutcome outcome = advise(resolved, families, options);
  if (outcome.interrupted || interrupt.interrupted()) {
    std::fprintf(stderr, "alloclab: interrupted; no advice given\n");
    set_exit_status(130);
    return;
  }
  print(replay_notes_text(summary));
  print(advice_text(outcome.advice, cmd.target));

  if (!cmd.json_out.empty()) {
    ReportContext context;
    context.command_line = command_line;
    write_json_file(cmd.json_out, make_advice_report(summary, outcome.advice, cmd.target, context));
  }
}

}  // namespace

void add_advise_command(CLI::App& app) {
  auto cmd = std::make_shared<AdviseCommand>();
  CLI::App* sub = app.add_subcommand(
      "advise", "Find the smallest fifo-shrink max that keeps the unbounded cache's hit rate");
  sub->add_option("trace", cmd->path, "trace file")->required();
  sub->add_option("--json", cmd->json_out, "write the JSON advice report here")->type_name("FILE");
  sub->add_flag("-f,--force", cmd->force, "replace the --json file if it exists");
  sub->add_option("-j,--jobs", cmd->jobs, "threads (default: all cores)")
      ->check(not_negative())
      ->type_name("N");
  sub->add_option("--target", cmd->target,
                  "share of the unbounded hit rate to keep, in (0, 1] (default 0.99)")
      ->type_name("FRACTION");
  sub->add_option("--from", cmd->format, "input format: alt, csv, rmm, torch")->type_name("FORMAT");
  sub->callback([cmd] { run_advise(*cmd, command_line()); });
}

}  // namespace alloclab::cli
