// `alloclab advise TRACE [--target 0.99]`: "what default max size?" for fifo-shrink, answered by
// the search of advise.hpp.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>

#include "alloclab/replay/advise.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/trace/output_files.hpp"
#include "cli_common.hpp"
#include "progress.hpp"
#include "validators.hpp"

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

void print_advice(const std::vector<Advice>& advice, double target) {
  std::printf("target: keep %.4g%% of the unbounded cache's hit rate\n\n", 100.0 * target);
  std::printf("%-28s %-9s %8s %12s  %-40s %8s %12s %16s %7s\n", "family", "baseline", "hit rate",
              "peak res.", "recommended", "hit rate", "peak res.", "saved", "replays");
  for (const Advice& a : advice) {
    const Metrics& b = a.baseline.metrics;
    if (!a.max_bytes) {
      std::printf("%-28s %-9s %7.2f%% %12s  %-40s %8s %12s %16s %7zu\n", a.family.name.c_str(),
                  a.family.baseline.c_str(), 100.0 * b.hit_rate(),
                  human_bytes(b.peak_reserved_bytes).c_str(), "(no limit helps)", "-", "-", "-",
                  a.replays);
      continue;
    }
    const Metrics& r = a.recommended_result.metrics;
    char saved[64];
    std::snprintf(
        saved, sizeof saved, "%s%s (%.0f%%)", a.saved_bytes < 0 ? "-" : "",
        human_bytes(static_cast<std::uint64_t>(a.saved_bytes < 0 ? -a.saved_bytes : a.saved_bytes))
            .c_str(),
        100.0 * a.saved_fraction);
    std::printf("%-28s %-9s %7.2f%% %12s  %-40s %7.2f%% %12s %16s %7zu\n", a.family.name.c_str(),
                a.family.baseline.c_str(), 100.0 * b.hit_rate(),
                human_bytes(b.peak_reserved_bytes).c_str(), a.recommended.c_str(),
                100.0 * r.hit_rate(), human_bytes(r.peak_reserved_bytes).c_str(), saved, a.replays);
  }
  std::string paragraph;
  for (const Advice& a : advice) paragraph += (paragraph.empty() ? "" : " ") + advice_sentence(a);
  std::printf("\n%s\n", paragraph.c_str());
}

void run_advise(const AdviseCommand& cmd, const std::string& command_line) {
  OutputPlan(cmd.force).input(cmd.path).output("--json", cmd.json_out).check();
  const ReplayInput input = load_for_replay(cmd.path, cmd.format);
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
  print_replay_notes(summary);
  print_advice(outcome.advice, cmd.target);

  if (!cmd.json_out.empty()) {
    ReportContext context;
    context.command_line = command_line;
    write_json_output(cmd.json_out,
                      make_advice_report(summary, outcome.advice, cmd.target, context));
  }
}

}  // namespace

void add_advise_command(CLI::App& app) {
  auto cmd = std::make_shared<AdviseCommand>();
  CLI::App* sub = app.add_subcommand(
      "advise", "Find the smallest fifo-shrink max that keeps the unbounded cache's hit rate");
  sub->add_option("trace", cmd->path, "trace file")->required();
  sub->add_option("--json", cmd->json_out, "write the JSON advice report here");
  sub->add_flag("-f,--force", cmd->force, "replace the --json file if it exists");
  sub->add_option("-j,--jobs", cmd->jobs, "threads (default: all cores)")->check(not_negative());
  sub->add_option("--target", cmd->target,
                  "share of the unbounded hit rate to keep, in (0, 1] (default 0.99)");
  sub->add_option("--from", cmd->format, "input format: alt, csv, rmm, torch");
  sub->callback([cmd] { run_advise(*cmd, command_line()); });
}

}  // namespace alloclab::cli
