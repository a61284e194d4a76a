// `alloclab info TRACE [--json]`: what is in a trace, before replaying anything.
#include <CLI/CLI.hpp>

#include <iostream>

#include "alloclab/format/stacks.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/summary_text.hpp"
#include "alloclab/replay/report.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct InfoOptions {
  std::string path;
  std::string format;
  std::uint64_t min_size = 0;  // ResolveOptions::min_size
  bool json = false;
  std::size_t stacks = 0;     // top allocation sites to show (traces recorded with --stacks)
  std::size_t anomalies = 5;  // first anomalies to list
};

void run_info(const InfoOptions& options) {
  if (!options.stacks) {
    // The summary alone: load_resolved streams a .alt trace instead of holding its events.
    const TraceSummary summary =
        std::move(load_replay_input(options.path, options.format, options.min_size).summary);
    if (options.json)
      std::cout << json_text(to_json(summary), 2) << '\n';
    else
      print(summary_text(summary, options.anomalies));
    return;
  }
  LoadedTrace loaded = load_input(options.path, options.format);
  ResolveOptions resolve_options;
  resolve_options.min_size = options.min_size;
  TraceSummary summary =
      summarize(loaded.trace, resolve(loaded.trace, options.path, resolve_options));
  summary.source = options.path;
  summary.file_bytes = loaded.file_bytes;
  const StackSites sites = top_stack_sites(loaded.trace, options.stacks);
  if (options.json) {
    nlohmann::json j = to_json(summary);
    j.update(stack_sites_json(loaded.trace, sites));
    std::cout << json_text(j, 2) << '\n';
    return;
  }
  print(summary_text(summary, options.anomalies) + stack_sites_text(loaded.trace, sites));
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto options = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Summarise a trace: events, sizes, lifetimes, runs");
  cmd->add_option("trace", options->path, "trace file (.alt, .csv, .csv.gz, RMM log, snapshot)")
      ->required();
  cmd->add_option("--from", options->format, "input format: alt, csv, rmm, torch")
      ->type_name("FORMAT");
  cmd->add_flag("--json", options->json, "print JSON (keys documented in docs/cli.md)");
  add_min_size_option(cmd, options->min_size,
                      "summarise as `replay --min-size` replays: host allocations of fewer bytes "
                      "(or aligned above 64 bytes), and mappings, left out and counted apart");
  cmd->add_flag("--stacks{10}", options->stacks,
                "also show the call stacks that allocated most, by count and by bytes "
                "(--stacks=N: the top N, default 10)")
      ->check(not_negative())
      ->type_name("N");
  cmd->add_option("--anomalies", options->anomalies,
                  "how many of the first anomalies to list, with their event index, time, "
                  "address, device and thread (default 5, at most 1000; 0: none)")
      ->check(CLI::Range(std::size_t{0}, ResolvedTrace::max_listed_anomalies))
      ->type_name("N");
  cmd->callback([options] { run_info(*options); });
}

}  // namespace alloclab::cli
