// `alloclab advise TRACE [--target 0.99]`: "what default max size?" for fifo-shrink, answered by
// the search of advise.hpp; `alloclab advise --pytorch TRACE [--memory-limit SIZE]`: "which
// PYTORCH_CUDA_ALLOC_CONF?", answered by the grid of pytorch_advice.hpp.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "alloclab/format/output_files.hpp"
#include "alloclab/replay/advise.hpp"
#include "alloclab/replay/progress.hpp"
#include "alloclab/replay/pytorch_advice.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/strategies/params.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct AdviseCommand {
  std::string path;
  std::string format;
  std::string json_out;
  std::size_t jobs = 0;
  double target = 0.99;
  bool target_given = false;
  bool pytorch = false;
  std::string memory_limit;
  bool force = false;
};

void run_pytorch_advice(const AdviseCommand& cmd, const std::string& command_line) {
  if (cmd.target_given)
    throw std::invalid_argument(
        "--target is the fifo-shrink advice's hit-rate target; --pytorch has none (it compares "
        "memory and cudaMalloc calls)");
  std::optional<std::uint64_t> memory_limit;
  if (!cmd.memory_limit.empty()) memory_limit = parse_size(cmd.memory_limit);
  OutputPlan(cmd.force).input(cmd.path).output("--json", cmd.json_out).check();
  const ResolvedLoad input = load_replay_input(cmd.path, cmd.format);
  const ResolvedTrace& resolved = input.resolved;

  // The baseline is what the snapshot was taken with, when it says.
  const std::optional<RecordedPyTorchConf> recorded =
      recorded_pytorch_conf(recorded_allocator_settings(input.metadata), memory_limit);
  PyTorchAdviceOptions options;
  if (recorded && !recorded->not_expressed.empty()) {
    std::string items;
    for (const std::string& n : recorded->not_expressed) items += (items.empty() ? "" : "; ") + n;
    std::fprintf(stderr,
                 "alloclab: warning: %s: recorded allocator settings left out of the \"as "
                 "recorded\" row: %s\n",
                 cmd.path.c_str(), items.c_str());
    options.recorded_not_expressed = recorded->not_expressed;
  }
  const std::vector<PyTorchConfig> grid = pytorch_advice_grid(
      resolved, memory_limit, recorded ? std::optional<std::string>(recorded->conf) : std::nullopt);
  options.memory_limit = memory_limit;
  options.threads = cmd.jobs;
  InterruptGuard interrupt;
  options.cancel = &interrupt.flag();
  // At most three replays more than the grid: the default and the picks, in full.
  ProgressBar progress("advise", resolved.ops.size() * (grid.size() + 3));
  options.progress = &progress.counter();
  const PyTorchAdviceOutcome outcome = advise_pytorch(resolved, grid, options);
  if (outcome.interrupted || interrupt.interrupted()) {
    std::fprintf(stderr, "alloclab: interrupted; no advice given\n");
    set_exit_status(130);
    return;
  }
  print(replay_notes_text(input.summary));
  print(pytorch_advice_text(outcome.advice));
  if (!cmd.json_out.empty()) {
    ReportContext context;
    context.command_line = command_line;
    write_json_file(cmd.json_out,
                    make_pytorch_advice_report(input.summary, outcome.advice, context));
  }
}

void run_advise(const AdviseCommand& cmd, const std::string& command_line) {
  if (cmd.pytorch) return run_pytorch_advice(cmd, command_line);
  if (!cmd.memory_limit.empty())
    throw std::invalid_argument(
        "--memory-limit applies to --pytorch advice only (the fifo-shrink advice finds a cache "
        "limit, not what fits a device)");
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
      "advise",
      "Find the smallest fifo-shrink max that keeps the unbounded cache's hit rate, or with "
      "--pytorch the PYTORCH_CUDA_ALLOC_CONF that avoids an OOM or uses least memory");
  sub->add_option("trace", cmd->path, "trace file (with --pytorch: typically a snapshot)")
      ->required();
  sub->add_flag("--pytorch", cmd->pytorch,
                "replay a grid of PYTORCH_CUDA_ALLOC_CONF settings of the pytorch model and "
                "recommend the best");
  sub->add_option("--memory-limit", cmd->memory_limit,
                  "--pytorch: emulate a device of this size (e.g. 40GiB); a setting that runs "
                  "out of memory under it cannot be recommended")
      ->type_name("SIZE");
  sub->add_option("--json", cmd->json_out, "write the JSON advice report here")->type_name("FILE");
  sub->add_flag("-f,--force", cmd->force, "replace the --json file if it exists");
  sub->add_option("-j,--jobs", cmd->jobs, "threads (default: all cores)")
      ->check(not_negative())
      ->type_name("N");
  CLI::Option* target =
      sub->add_option("--target", cmd->target,
                      "share of the unbounded hit rate to keep, in (0, 1] (default 0.99; not "
                      "with --pytorch)")
          ->type_name("FRACTION");
  sub->add_option("--from", cmd->format, "input format: alt, csv, rmm, torch")->type_name("FORMAT");
  sub->callback([cmd, target] {
    cmd->target_given = target->count() > 0;
    run_advise(*cmd, command_line());
  });
}

}  // namespace alloclab::cli
