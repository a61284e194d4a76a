// `alloclab run -s SPEC -- CMD ARGS...`: the options; alloclab_launch runs the program with the
// strategy inside it, and the report is made as a replay's (mode "live").
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "alloclab/format/output_files.hpp"
#include "alloclab/launch/record_files.hpp"
#include "alloclab/launch/run.hpp"
#include "alloclab/replay/first_failure.hpp"
#include "alloclab/replay/live_result.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/sim.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

// Below this, glibc serves a request from its own bins, in tens of nanoseconds; from here on
// (its mmap threshold) it maps fresh pages for each one. docs/performance.md measures both.
constexpr std::uint64_t kDefaultMinSize = 128 * 1024;

struct RunCommand {
  launch::RunOptions options;
  std::string json_out;
};

nlohmann::json program_json(const launch::RunOptions& options, const launch::RunOutcome& outcome) {
  nlohmann::json others = nlohmann::json::array();
  for (std::size_t k = outcome.root_reported ? 1 : 0; k < outcome.reports.size(); ++k) {
    const StrategyResult r = live_result(outcome.reports[k]);
    nlohmann::json entry = metrics_json(r.metrics);
    entry["pid"] = outcome.reports[k].pid;
    others.push_back(std::move(entry));
  }
  for (const live::LiveReport& report : outcome.device_reports) {
    if (static_cast<long>(report.pid) == outcome.root_pid) continue;  // a result of its own
    const StrategyResult r = live_result(report);
    nlohmann::json entry = metrics_json(r.metrics);
    entry["pid"] = report.pid;
    entry["device"] = report.device;
    entry["peak_device_bytes"] = report.peak_device_bytes;
    others.push_back(std::move(entry));
  }
  return {{"command", options.command},
          {"pid", outcome.root_pid},
          {"exit_status", outcome.status},
          {"wall_seconds", outcome.wall_seconds},
          {"user_seconds", outcome.user_seconds},
          {"system_seconds", outcome.system_seconds},
          {"minor_faults", outcome.minor_faults},
          {"major_faults", outcome.major_faults},
          {"peak_rss_bytes", outcome.peak_rss_bytes},
          {"min_size", options.min_size},
          {"markers", options.markers},
          {"cuda", options.cuda},
          {"run_range",
           options.run_range.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.run_range)},
          {"trace", options.record_output.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json(options.record_output)},
          {"other_processes", std::move(others)}};
}

void run_live(RunCommand& cmd) {
  launch::RunOptions& options = cmd.options;
  {
    // A bad spec is refused before the program runs, as the strategy would refuse it there.
    SimUpstream upstream;
    make_strategy(options.spec, upstream);
  }
  OutputPlan outputs(options.force);
  outputs.input(launch::find_program(options.command.front()))
      .output("--json", cmd.json_out)
      .output("--record", options.record_output);
  outputs.check();

  const launch::RunOutcome outcome = launch::run(options);
  if (outcome.status == 127) return set_exit_status(127);
  if (!outcome.root_reported) {
    std::fprintf(stderr,
                 "alloclab: %s left no report: it did not exit normally (killed by a signal, "
                 "_exit, or an exec that failed to return)%s\n",
                 options.command.front().c_str(),
                 outcome.reports.empty() ? "" : "; its child processes reported");
    return set_exit_status(outcome.status != 0 ? outcome.status : 2);
  }
  std::vector<StrategyResult> results{live_result(outcome.reports.front())};
  for (const live::LiveReport& report : outcome.device_reports)
    if (static_cast<long>(report.pid) == outcome.root_pid) results.push_back(live_result(report));
  {
    // The table names each device's row by its device, the first row being the program's
    // malloc family.
    std::vector<StrategyResult> shown = results;
    for (StrategyResult& r : shown)
      if (!r.device.empty()) r.strategy += " [" + r.device + "]";
    print(results_table_text(shown));
    print(first_failures_text(shown));
  }
  print(program_line(program_json(options, outcome)) + "\n");
  char line[256];
  for (const StrategyResult& r : results) {
    if (r.device.empty()) continue;
    std::snprintf(line, sizeof line,
                  "%s: peak device memory %.1f MiB (every process's, seen after the strategy's "
                  "device allocations)\n",
                  r.device.c_str(),
                  static_cast<double>(r.peak_device_bytes.value_or(0)) / (1024.0 * 1024.0));
    print(line);
  }
  if (options.cuda && outcome.device_reports.empty())
    print(
        "cuda: no device memory went through the strategy (no cudaMalloc or cuMemAlloc reached "
        "it)\n");
  if (outcome.reports.size() > 1)
    std::fprintf(stderr, "alloclab: note: %zu more processes ran with the strategy (see --json)\n",
                 outcome.reports.size() - 1);

  if (!cmd.json_out.empty()) {
    TraceSummary summary;
    if (!options.record_output.empty()) {
      summary = load_replay_input(options.record_output, "").summary;
      summary.source = options.record_output;
    }
    ReportContext context;
    context.mode = "live";
    context.command_line = command_line();
    context.program = program_json(options, outcome);
    write_report_file(cmd.json_out, summary, results, context);
  }
  set_exit_status(outcome.status);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto cmd = std::make_shared<RunCommand>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Run a program with a strategy in front of its allocator and report what it did (run -s "
      "SPEC [--json FILE] [--record FILE.alt] -- CMD ARGS...)");
  sub->add_option("-s,--strategy", cmd->options.spec,
                  "strategy spec, e.g. best-fit or fifo-shrink:max=64MiB (`alloclab strategies` "
                  "lists them)")
      ->required()
      ->type_name("SPEC");
  sub->add_option("--json", cmd->json_out, "write the report here (as replay's, mode \"live\")")
      ->type_name("FILE");
  sub->add_option("--record", cmd->options.record_output,
                  "also record the run into this trace (replay it with the same -s and "
                  "--min-size to hold the prediction against the run)")
      ->type_name("FILE.alt");
  sub->add_flag("-f,--force", cmd->options.force,
                "replace the --json and --record files if they exist");
  cmd->options.min_size = kDefaultMinSize;
  add_min_size_option(sub, cmd->options.min_size,
                      "requests below this size go to the program's allocator directly (default "
                      "128KiB)");
  sub->add_flag("--markers", cmd->options.markers,
                "the program marks its runs (markers.h, alloclab_markers): no run is assumed "
                "before its first marker, as a replay of its trace assumes none");
  sub->add_flag("--cuda", cmd->options.cuda,
                "also put the program's device allocations (cudaMalloc/cudaFree, "
                "cuMemAlloc/cuMemFree) through the strategy, one cache per device");
  sub->add_option("--run-range", cmd->options.run_range,
                  "with --cuda: each NVTX range whose name matches (a glob) is a run, as under "
                  "record --cuda --run-range (implies --markers)")
      ->type_name("GLOB");
  sub->add_option("command", cmd->options.command, "the program and its arguments, after --")
      ->required();
  sub->callback([cmd] { run_live(*cmd); });
}

}  // namespace alloclab::cli
