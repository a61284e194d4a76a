// `alloclab replay TRACE -s SPEC [-s SPEC ...]`: the comparison at the heart of alloclab.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>
#include <ostream>

#include "alloclab/format/output_files.hpp"
#include "alloclab/format/stacks.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/replay/cost_model.hpp"
#include "alloclab/replay/progress.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/replay/sites.hpp"
#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/upstream/registry.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct ReplayCommand {
  std::string path;
  std::string format;
  std::uint64_t min_size = 0;
  std::vector<std::string> specs;
  std::string json_out;
  std::string csv_out;
  std::size_t jobs = 0;
  bool jobs_given = false;  // -j on the command line (jobs == 0 is also the default)
  std::string memory_limit;
  bool keep_going = false;
  bool check = false;
  std::string upstream = "sim";
  bool touch = false;
  std::string timing = "asap";
  std::string cost_model;
  std::size_t sites = 0;  // --sites N: the top N stacks by misses per strategy
  bool force = false;
};

// `--sites N`'s listing: per strategy, each stack with the most misses, by its innermost frame
// and that frame's caller.
std::string sites_listing(const Trace& trace, const std::vector<StrategyResult>& results) {
  if (!trace.has_stacks())
    return "\nno call stacks in this trace (record with `alloclab record --stacks N`)\n";
  std::string text;
  for (const StrategyResult& r : results) {
    text += "\nstacks with the most misses under " + r.strategy + "\n";
    for (const nlohmann::json& s : r.sites) {
      const nlohmann::json& frames = s["frames"];
      std::string where = "[no stack]";
      if (!frames.empty())
        where = describe_frame(StackFrame{frames[0]["address"].get<std::uint64_t>(),
                                          frames[0]["function"].get<std::string>(),
                                          frames[0]["module"].get<std::string>()});
      if (frames.size() > 1)
        where += " <- " + describe_frame(StackFrame{frames[1]["address"].get<std::uint64_t>(),
                                                    frames[1]["function"].get<std::string>(),
                                                    frames[1]["module"].get<std::string>()});
      const std::uint64_t misses = s["misses"].get<std::uint64_t>();
      text += string_printf("  %10s %-6s  %s\n", grouped(misses).c_str(),
                            misses == 1 ? "miss" : "misses", where.c_str());
    }
  }
  return text;
}

void run_replay(const ReplayCommand& cmd, const std::string& command_line) {
  // Options are checked before the trace is read: a typo should not cost a long load.
  const bool real = is_real_upstream(cmd.upstream);
  if (real) make_upstream(cmd.upstream);  // throws: unknown name (listing the known), no library
  if (cmd.touch && !real)
    throw std::invalid_argument("--touch needs a real upstream (e.g. --upstream host-malloc)");
  if (cmd.timing != "asap" && cmd.timing != "recorded")
    throw std::invalid_argument("--timing '" + cmd.timing + "': expected asap or recorded");
  if (cmd.timing == "recorded" && !real)
    throw std::invalid_argument("--timing recorded needs a real upstream");
  if (!cmd.cost_model.empty() && real)
    throw std::invalid_argument(
        "--cost-model applies to simulation (--upstream sim): a real "
        "upstream measures time instead");
  OutputPlan outputs(cmd.force);
  outputs.input(cmd.path).output("--json", cmd.json_out).output("--csv", cmd.csv_out);
  if (!cmd.cost_model.empty() && !builtin_cost_model(cmd.cost_model)) outputs.input(cmd.cost_model);
  outputs.check();
  std::optional<CostModel> cost_model;
  if (!cmd.cost_model.empty()) cost_model = load_cost_model(cmd.cost_model);

  if (cmd.sites && real)
    throw std::invalid_argument("--sites works in simulation (--upstream sim)");

  // --sites needs the whole trace, with its stacks; otherwise a .alt trace is streamed.
  std::optional<LoadedTrace> whole;
  ResolvedLoad input;
  if (cmd.sites) {
    whole = load_input(cmd.path, cmd.format);
    ResolveOptions resolve_options;
    resolve_options.min_size = cmd.min_size;
    input.resolved = resolve(whole->trace, cmd.path, resolve_options);
    input.summary = summarize(whole->trace, input.resolved);
    input.summary.source = cmd.path;
    input.summary.file_bytes = whole->file_bytes;
  } else {
    input = load_replay_input(cmd.path, cmd.format, cmd.min_size);
  }
  const ResolvedTrace& resolved = input.resolved;
  const TraceSummary& summary = input.summary;

  ReplayOptions options;
  if (!cmd.memory_limit.empty()) options.memory_limit = parse_size(cmd.memory_limit);
  options.stop_at_first_failure = !cmd.keep_going;
  options.check_invariants = cmd.check;
  options.upstream = cmd.upstream;
  options.touch = cmd.touch;
  options.timing = cmd.timing == "recorded" ? TimingMode::recorded : TimingMode::asap;
  if (cost_model) options.cost_model = &*cost_model;
  // Timings of replays running side by side would measure each other: one at a time. The note
  // is for a -j the user gave; without one they asked for nothing that is ignored.
  std::size_t jobs = cmd.jobs;
  if (real) {
    if (cmd.jobs_given && cmd.jobs != 1)
      std::fprintf(stderr, "alloclab: note: replays on %s run one at a time (-j ignored)\n",
                   cmd.upstream.c_str());
    jobs = 1;
  }
  InterruptGuard interrupt;
  options.cancel = &interrupt.flag();
  ProgressBar progress("replay", resolved.ops.size() * cmd.specs.size());
  options.progress = &progress.counter();

  ReplaySetOutcome outcome;
  if (whole) {
    SitesResult sites = tally_sites(whole->trace, resolved, cmd.specs, SitesAt{}, options, jobs);
    outcome.interrupted = sites.interrupted;
    for (std::size_t i = 0; i < cmd.specs.size(); ++i)
      sites.results[i].sites = top_miss_stacks_json(whole->trace, sites, i, cmd.sites);
    outcome.results = std::move(sites.results);
  } else {
    outcome = replay_specs(resolved, cmd.specs, options, jobs);
  }
  if (outcome.interrupted) {
    // A report of a cut-short replay would look like a real answer: write none.
    std::fprintf(stderr, "alloclab: interrupted; no report written\n");
    set_exit_status(130);
    return;
  }
  const std::vector<StrategyResult>& results = outcome.results;
  print(replay_notes_text(summary));
  print(results_table_text(results));
  if (whole) print(sites_listing(whole->trace, results));
  // The report is built from the results and the summary alone; a large trace's report (one
  // entry per run and strategy) would otherwise be built on top of the whole resolved trace.
  input.resolved = ResolvedTrace{};
  whole.reset();

  ReportContext context;
  context.command_line = command_line;
  if (real) {
    context.mode = "real";
    context.upstream = cmd.upstream;
    context.touch = cmd.touch;
    context.timing = cmd.timing;
  }
  if (!cmd.json_out.empty()) {
    write_report_file(cmd.json_out, summary, results, context);
  }
  if (!cmd.csv_out.empty()) {
    write_output(cmd.csv_out, [&](std::ostream& out) { write_results_csv(out, results); });
  }
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto cmd = std::make_shared<ReplayCommand>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Replay a trace against strategies (deterministic simulation, or timed on a real "
      "allocator with --upstream) and compare them");
  sub->add_option("trace", cmd->path, "trace file")->required();
  sub->add_option("-s,--strategy", cmd->specs,
                  "strategy spec, e.g. exact or fifo-shrink:max=64MiB (repeatable; "
                  "`alloclab strategies` lists them)")
      ->required()
      ->type_name("SPEC");
  sub->add_option("--json", cmd->json_out, "write the JSON report here")->type_name("FILE");
  sub->add_option("--csv", cmd->csv_out, "write one CSV row per strategy here")->type_name("FILE");
  sub->add_flag("-f,--force", cmd->force, "replace the --json and --csv files if they exist");
  CLI::Option* jobs = sub->add_option("-j,--jobs", cmd->jobs, "threads (default: all cores)")
                          ->check(not_negative())
                          ->type_name("N");
  sub->add_option("--from", cmd->format, "input format: alt, csv, rmm, torch")->type_name("FORMAT");
  add_min_size_option(
      sub, cmd->min_size,
      "leave host allocations of fewer bytes (and those aligned above 64 bytes, and mappings) to "
      "the real allocator, not to the strategy, as `alloclab run` does (default 0: none)");
  sub->add_option("--memory-limit", cmd->memory_limit,
                  "emulate a device of this size (e.g. 8GiB): the upstream fails beyond it")
      ->type_name("SIZE");
  sub->add_flag("--keep-going", cmd->keep_going,
                "go on past a strategy's first failed request (a program would die there; by "
                "default its replay stops) and count every failure");
  sub->add_flag("--check", cmd->check, "check invariants after every operation (slow)");
  sub->add_option("--upstream", cmd->upstream,
                  "allocator under the strategies: sim (default), host-malloc, host-mmap, "
                  "host-jemalloc, host-mimalloc, cuda, cuda-async[:release_threshold=SIZE], "
                  "cuda-host (ALLOCLAB_CUDA=ON); a real one times every call")
      ->type_name("NAME");
  sub->add_flag("--touch", cmd->touch,
                "real upstreams: write every 4 KiB page of each block handed out (timed apart; "
                "cudaMemsetAsync + synchronise on cuda, cuda-async)");
  sub->add_option("--timing", cmd->timing,
                  "real upstreams: asap (default) or recorded (reproduce the trace's gaps with a "
                  "busy wait; gaps over 1 s are skipped)")
      ->type_name("MODE");
  sub->add_option("--sites", cmd->sites,
                  "traces recorded with --stacks: also list, per strategy, the N call stacks "
                  "with the most misses, and write them into each result of --json (`alloclab "
                  "sites` ranks them every way)")
      ->check(not_negative())
      ->type_name("N");
  sub->add_option("--cost-model", cmd->cost_model,
                  "simulation: report modelled allocation time: host, cuda or a cost-model JSON "
                  "file (alloclab calibrate writes one)")
      ->type_name("MODEL");
  sub->callback([cmd, jobs] {
    cmd->jobs_given = jobs->count() > 0;
    run_replay(*cmd, command_line());
  });
}

}  // namespace alloclab::cli
