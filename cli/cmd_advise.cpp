// `alloclab advise TRACE [--target 0.99]`: "what default max size?" for fifo-shrink, answered by
// the search of advise.hpp.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>

#include "alloclab/format/output_files.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/replay/advise.hpp"
#include "alloclab/replay/report.hpp"
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

std::string percent_cell(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
  return text;
}

// What the recommendation saves at peak, said plainly when it saves nothing or costs more (a
// limit can reserve more than the unbounded cache: it frees blocks the trace then asks again).
std::string saved_cell(const Advice& a) {
  if (a.saved_bytes == 0) return "nothing";
  if (a.saved_bytes < 0)
    return "none (" + human_bytes(static_cast<std::uint64_t>(-a.saved_bytes)) + " more)";
  const double percent = 100.0 * a.saved_fraction;
  char share[32];
  if (percent < 0.5)
    std::snprintf(share, sizeof share, "<1%%");
  else
    std::snprintf(share, sizeof share, "%.0f%%", percent);
  return human_bytes(static_cast<std::uint64_t>(a.saved_bytes)) + " (" + share + ")";
}

void print_advice(const std::vector<Advice>& advice, double target) {
  std::printf("target: keep %.4g%% of the unbounded cache's hit rate\n\n", 100.0 * target);
  using Align = TextTable::Align;
  TextTable table({{"family", Align::left},
                   {"baseline", Align::left},
                   {"hit rate"},
                   {"peak res."},
                   {"recommended", Align::left},
                   {"hit rate"},
                   {"peak res."},
                   {"saved"},
                   {"replays"}});
  for (const Advice& a : advice) {
    const Metrics& b = a.baseline.metrics;
    std::vector<std::string> row = {a.family.name, a.family.baseline, percent_cell(b.hit_rate()),
                                    human_bytes(b.peak_reserved_bytes)};
    if (!a.max_bytes) {
      row.insert(row.end(), {"(no limit helps)", "-", "-", "-"});
    } else {
      const Metrics& r = a.recommended_result.metrics;
      row.insert(row.end(), {a.recommended, percent_cell(r.hit_rate()),
                             human_bytes(r.peak_reserved_bytes), saved_cell(a)});
    }
    row.push_back(std::to_string(a.replays));
    table.add_row(std::move(row));
  }
  table.print();
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
