// `alloclab sites TRACE [-s SPEC ...]`: where the memory goes, by call stack: what each
// allocation site requested and holds at a moment, and what it cost each strategy.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <ostream>

#include "alloclab/format/output_files.hpp"
#include "alloclab/format/stacks.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/replay/progress.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sites.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct SitesCommand {
  std::string path;
  std::string format;
  std::uint64_t min_size = 0;
  std::vector<std::string> specs;
  std::size_t top = 10;
  std::string at = "peak";
  std::string sort = "live";
  std::string json_out;
  std::string to;
  std::string metric;  // --to folded: default, the --sort metric
  std::string out;     // --to folded: default, standard output
  std::size_t jobs = 0;
  bool force = false;
};

std::string metric_names() {
  std::string names;
  for (SiteMetric m : all_site_metrics())
    names += (names.empty() ? "" : ", ") + std::string(to_string(m));
  return names;
}

SiteMetric metric_option(const std::string& option, const std::string& value,
                         const std::vector<std::string>& specs) {
  const std::optional<SiteMetric> m = parse_site_metric(value);
  if (!m)
    throw std::invalid_argument(option + " '" + value + "': expected one of " + metric_names());
  if (per_strategy(*m) && specs.empty())
    throw std::invalid_argument(option + " " + value +
                                " is a strategy's: name one with -s SPEC (the first is used)");
  return *m;
}

SitesAt at_option(const std::string& at) {
  if (at == "peak") return SitesAt{};
  const std::optional<std::uint64_t> ns = parse_duration(at);
  if (!ns)
    throw std::invalid_argument("--at '" + at +
                                "': expected peak or a time since the trace's first operation "
                                "with a unit, e.g. 1.5s, 250ms, 40us, 1200ns");
  return SitesAt{false, *ns};
}

void run_sites(const SitesCommand& cmd) {
  // Options first: a typo should not cost a long load and replay.
  const SitesAt at = at_option(cmd.at);
  const SiteMetric sort = metric_option("--sort", cmd.sort, cmd.specs);
  const bool folded = !cmd.to.empty();
  if (folded && cmd.to != "folded")
    throw std::invalid_argument("--to '" + cmd.to + "': expected folded");
  if (!folded && (!cmd.metric.empty() || !cmd.out.empty()))
    throw std::invalid_argument(std::string(cmd.metric.empty() ? "-o" : "--metric") +
                                " goes with --to folded");
  const SiteMetric metric =
      cmd.metric.empty() ? sort : metric_option("--metric", cmd.metric, cmd.specs);
  OutputPlan outputs(cmd.force);
  outputs.input(cmd.path).output("--json", cmd.json_out).output("-o", cmd.out);
  outputs.check();

  LoadedTrace loaded = load_input(cmd.path, cmd.format);
  const Trace& trace = loaded.trace;
  if (!trace.has_stacks()) {
    const std::string no_stacks =
        cmd.path + " has no call stacks (record them with `alloclab record --stacks N`)";
    if (folded) throw std::invalid_argument("--to folded: " + no_stacks);
    if (cmd.json_out.empty()) {
      print(no_stacks + "\n");
      return;
    }
  }
  ResolveOptions resolve_options;
  resolve_options.min_size = cmd.min_size;
  const ResolvedTrace resolved = resolve(trace, cmd.path, resolve_options);

  ReplayOptions options;
  InterruptGuard interrupt;
  options.cancel = &interrupt.flag();
  ProgressBar progress("replay", resolved.ops.size() * cmd.specs.size());
  options.progress = &progress.counter();
  const SitesResult result = tally_sites(trace, resolved, cmd.specs, at, options, cmd.jobs);
  if (result.interrupted) {
    std::fprintf(stderr, "alloclab: interrupted; nothing written\n");
    set_exit_status(130);
    return;
  }
  const std::vector<Site> sites = group_sites(trace, result, sort, 0);
  if (folded) {
    if (cmd.out.empty()) {
      write_folded(std::cout, trace, result, metric, 0);
      std::cout.flush();
    } else {
      write_output(cmd.out,
                   [&](std::ostream& out) { write_folded(out, trace, result, metric, 0); });
    }
  } else if (trace.has_stacks()) {
    print(sites_text(trace, result, sites, sort, cmd.top));
  }
  if (!cmd.json_out.empty()) {
    nlohmann::json j = sites_json(trace, result, sites, sort, cmd.top);
    j["trace"] = cmd.path;
    j["has_stacks"] = trace.has_stacks();
    write_json_file(cmd.json_out, j);
  }
}

}  // namespace

void add_sites_command(CLI::App& app) {
  auto cmd = std::make_shared<SitesCommand>();
  CLI::App* sub = app.add_subcommand(
      "sites",
      "Where the memory goes, by call stack (traces recorded with --stacks): allocations, live "
      "bytes, and each strategy's misses, upstream bytes, slack and evictions per site");
  sub->add_option("trace", cmd->path, "trace file recorded with `alloclab record --stacks N`")
      ->required();
  sub->add_option("-s,--strategy", cmd->specs,
                  "strategy spec to charge misses, slack and evictions for (repeatable; a "
                  "strategy metric sorts by the first)")
      ->type_name("SPEC");
  sub->add_option("--top", cmd->top, "sites to list (default 10)")
      ->check(not_negative())
      ->type_name("N");
  sub->add_option("--at", cmd->at,
                  "count live allocations at `peak` (default: where the program's live bytes "
                  "peak) or at a time since the first operation, e.g. 1.5s, 250ms")
      ->type_name("TIME|peak");
  sub->add_option("--sort", cmd->sort,
                  "rank sites by allocations, bytes, live (default), misses, slack, "
                  "upstream-bytes or evictions")
      ->type_name("METRIC");
  sub->add_option("--json", cmd->json_out, "write the sites as JSON here (docs/cli.md)")
      ->type_name("FILE");
  sub->add_option("--to", cmd->to,
                  "folded: one line per stack, root first, and a value (flamegraph.pl, "
                  "speedscope, Perfetto)")
      ->type_name("FORMAT");
  sub->add_option("--metric", cmd->metric,
                  "--to folded: the value of each line (default: the --sort metric)")
      ->type_name("METRIC");
  sub->add_option("-o,--output", cmd->out, "--to folded: write here (default: standard output)")
      ->type_name("FILE");
  sub->add_flag("-f,--force", cmd->force, "replace the --json and -o files if they exist");
  sub->add_option("-j,--jobs", cmd->jobs, "threads (default: all cores)")
      ->check(not_negative())
      ->type_name("N");
  sub->add_option("--from", cmd->format, "input format: alt, csv, rmm, torch")->type_name("FORMAT");
  add_min_size_option(sub, cmd->min_size,
                      "leave host allocations of fewer bytes (and those aligned above 64 bytes, "
                      "and mappings) out, as `replay --min-size` does");
  sub->callback([cmd] { run_sites(*cmd); });
}

}  // namespace alloclab::cli
