// `alloclab info TRACE [--json]`: what is in a trace, before replaying anything.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "alloclab/format/stacks.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/replay/report.hpp"
#include "cli_common.hpp"
#include "validators.hpp"

namespace alloclab::cli {
namespace {

struct InfoOptions {
  std::string path;
  std::string format;
  bool json = false;
  std::size_t stacks = 0;     // top allocation sites to show (traces recorded with --stacks)
  std::size_t anomalies = 5;  // first anomalies to list
};

void print_histogram(const char* title, const std::array<std::uint64_t, 65>& buckets,
                     bool as_bytes) {
  std::uint64_t largest = 0;
  for (std::uint64_t count : buckets) largest = std::max(largest, count);
  if (largest == 0) return;
  std::printf("\n%s\n", title);
  using Align = TextTable::Align;
  TextTable table({{"", Align::left}, {""}, {"", Align::left}}, "  ");
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    if (buckets[k] == 0) continue;
    const std::uint64_t from = k == 0 ? 0 : std::uint64_t{1} << k;
    const std::string label = as_bytes ? human_bytes(from) : human_duration(from);
    const int bar = static_cast<int>(40 * buckets[k] / largest);
    table.add_row({">= " + label, grouped(buckets[k]),
                   std::string(static_cast<std::size_t>(std::max(bar, 1)), '#')});
  }
  table.print();
}

void print_top(const char* title, const std::vector<SizeCount>& sizes) {
  if (sizes.empty()) return;
  std::printf("\n%s\n", title);
  TextTable table({{"size"}, {"count"}, {"bytes"}}, "  ");
  for (const SizeCount& s : sizes)
    table.add_row({grouped(s.size), grouped(s.count), human_bytes(s.bytes)});
  table.print();
}

void print_first_anomalies(const TraceSummary& s, std::size_t wanted) {
  const std::size_t shown = std::min(wanted, s.first_anomalies.size());
  if (shown == 0) return;
  std::printf(
      "  first %zu (event: its index in the trace from 0, as `alloclab convert` numbers "
      "CSV rows after the header)\n",
      shown);
  using Align = TextTable::Align;
  TextTable table({{"", Align::left}, {"", Align::left}, {"", Align::left}, {"", Align::left}},
                  "  ");
  for (std::size_t k = 0; k < shown; ++k) {
    const AnomalyAt& a = s.first_anomalies[k];
    char where[160];
    std::snprintf(where, sizeof where, "0x%llx on %s, thread %llu",
                  static_cast<unsigned long long>(a.address), device_name(a.device).c_str(),
                  static_cast<unsigned long long>(a.thread));
    table.add_row({"event " + grouped(a.event), "+" + human_duration(a.time_ns - s.first_time_ns),
                   std::string(to_string(a.kind)), where});
  }
  table.print();
  if (s.anomalies.total() > shown)
    std::printf("  ... %s more (--anomalies N lists up to the first %zu, as --json does)\n",
                grouped(s.anomalies.total() - shown).c_str(), ResolvedTrace::max_listed_anomalies);
}

// "1.50 MiB at +2.0 ms"; a peak of nothing has no time (its time field is left at 0, before
// the trace's first event).
std::string peak_text(std::uint64_t bytes, std::uint64_t time_ns, const TraceSummary& s) {
  if (bytes == 0) return "0 B (nothing was live)";
  return human_bytes(bytes) + " at +" +
         human_duration(time_ns >= s.first_time_ns ? time_ns - s.first_time_ns : 0);
}

void print_text(const TraceSummary& s, std::size_t anomalies_wanted) {
  std::printf("trace        %s\n", s.source.c_str());
  std::printf("events       %s (alloc %s, free %s, run_begin %s, run_end %s, mark %s)\n",
              grouped(s.events).c_str(), grouped(s.events_by_op[0]).c_str(),
              grouped(s.events_by_op[1]).c_str(), grouped(s.events_by_op[2]).c_str(),
              grouped(s.events_by_op[3]).c_str(), grouped(s.events_by_op[4]).c_str());
  std::string devices;
  for (const std::string& d : s.devices) devices += (devices.empty() ? "" : ", ") + d;
  std::printf("threads      %s   devices %s   streams %s", grouped(s.threads).c_str(),
              devices.empty() ? "-" : devices.c_str(), grouped(s.streams).c_str());
  if (s.pools) std::printf("   pools %s", grouped(s.pools).c_str());
  std::printf("\n");
  std::printf("duration     %s\n", human_duration(s.duration_ns).c_str());
  std::printf("allocations  %s   frees %s   leaks %s (%s)\n", grouped(s.allocations).c_str(),
              grouped(s.frees).c_str(), grouped(s.anomalies.leaks).c_str(),
              human_bytes(s.anomalies.leaked_bytes).c_str());
  std::printf("requested    %s in total\n", human_bytes(s.bytes_requested).c_str());
  std::printf("peak live    %s\n", peak_text(s.peak_live_bytes, s.peak_live_time_ns, s).c_str());
  if (s.by_device.size() > 1)
    for (const DeviceSummary& d : s.by_device)
      std::printf("  %-10s %s, %s requested, peak live %s\n", d.device.c_str(),
                  counted(d.allocations, "allocation").c_str(),
                  human_bytes(d.bytes_requested).c_str(),
                  peak_text(d.peak_live_bytes, d.peak_live_time_ns, s).c_str());
  const Anomalies& a = s.anomalies;
  std::printf(
      "anomalies    %s (free of unknown address %s, double free %s, alloc over live %s, "
      "nested run_begin %s, run_end outside run %s)\n",
      grouped(a.total()).c_str(), grouped(a.free_unknown).c_str(), grouped(a.double_free).c_str(),
      grouped(a.alloc_over_live).c_str(), grouped(a.nested_run_begin).c_str(),
      grouped(a.run_end_outside_run).c_str());
  print_first_anomalies(s, anomalies_wanted);
  std::printf("also         free(NULL) %s, failed allocations %s, unterminated runs %s\n",
              grouped(a.free_null).c_str(), grouped(a.failed_allocs).c_str(),
              grouped(a.unterminated_runs).c_str());
  if (a.inherited_frees > 0)
    std::printf("inherited    %s of blocks allocated before the fork this trace starts at\n",
                counted(a.inherited_frees, "free").c_str());
  if (s.segment_events > 0) {
    std::printf("segments     %s allocated (%s), %s freed: the recorded allocator's own calls\n",
                grouped(s.segment_allocs).c_str(), human_bytes(s.segment_bytes_allocated).c_str(),
                grouped(s.segment_frees).c_str());
    if (s.recorded_hit_rate)
      std::printf("recorded hit rate %.2f%% (1 - segment allocs / allocations)\n",
                  100.0 * *s.recorded_hit_rate);
  }
  if (s.file_bytes)
    std::printf(
        "on disk      %s, %.2f bytes/event\n", human_bytes(*s.file_bytes).c_str(),
        s.events ? static_cast<double>(*s.file_bytes) / static_cast<double>(s.events) : 0.0);
  std::printf("in memory    %s, %.2f bytes/event\n", human_bytes(s.memory_bytes).c_str(),
              s.events ? static_cast<double>(s.memory_bytes) / static_cast<double>(s.events) : 0.0);

  print_histogram("size histogram (powers of two)", s.size_histogram, true);
  print_histogram("lifetime histogram (powers of two)", s.lifetime_histogram, false);
  print_top("top sizes by count", s.top_sizes_by_count);
  print_top("top sizes by bytes", s.top_sizes_by_bytes);

  std::printf("\nruns         %zu%s\n", s.runs.size(),
              s.implicit_run ? " (no run markers: the whole trace is one run)" : "");
  if (!s.runs.empty()) {
    using Align = TextTable::Align;
    TextTable table({{"#"},
                     {"label", Align::left},
                     {"allocations"},
                     {"frees"},
                     {"peak live"},
                     {"duration"},
                     {"", Align::left}},
                    "  ");
    const std::size_t shown = std::min<std::size_t>(s.runs.size(), 20);
    for (std::size_t k = 0; k < shown; ++k) {
      const RunSummary& r = s.runs[k];
      // A label is the program's text: a long one is cut so that the numbers stay in view.
      table.add_row({std::to_string(k), r.label.substr(0, 28), grouped(r.allocations),
                     grouped(r.frees), human_bytes(r.peak_live_bytes),
                     human_duration(r.duration_ns), r.ended ? "" : "(never ended)"});
    }
    table.print();
    if (shown < s.runs.size())
      std::printf("  ... %zu more runs (see --json)\n", s.runs.size() - shown);
  }
  for (const std::string& w : s.warnings) std::printf("warning      %s\n", w.c_str());
}

void print_sites(const Trace& trace, const char* title, const std::vector<StackSite>& sites) {
  std::printf("\n%s\n", title);
  for (const StackSite& site : sites) {
    std::printf("  %s, %s\n", counted(site.count, "allocation").c_str(),
                human_bytes(site.bytes).c_str());
    for (std::uint32_t f : trace.stacks()[site.stack - 1])
      std::printf("      %s\n", describe_frame(trace.frames()[f]).c_str());
  }
}

nlohmann::json sites_json(const Trace& trace, const std::vector<StackSite>& sites) {
  nlohmann::json list = nlohmann::json::array();
  for (const StackSite& site : sites) {
    nlohmann::json frames = nlohmann::json::array();
    for (std::uint32_t f : trace.stacks()[site.stack - 1]) {
      const StackFrame& frame = trace.frames()[f];
      frames.push_back(
          {{"address", frame.address}, {"function", frame.function}, {"module", frame.module}});
    }
    list.push_back(
        {{"stack", site.stack}, {"count", site.count}, {"bytes", site.bytes}, {"frames", frames}});
  }
  return list;
}

void run_info(const InfoOptions& options) {
  if (!options.stacks) {
    // The summary alone: load_for_replay streams a .alt trace instead of holding its events.
    const TraceSummary summary = std::move(load_for_replay(options.path, options.format).summary);
    if (options.json)
      std::cout << json_text(to_json(summary), 2) << '\n';
    else
      print_text(summary, options.anomalies);
    return;
  }
  LoadedTrace loaded = load_trace(options.path, options.format);
  TraceSummary summary = summarize(loaded.trace, resolve(loaded.trace));
  summary.source = options.path;
  summary.file_bytes = loaded.file_bytes;
  const StackSites sites = top_stack_sites(loaded.trace, options.stacks);
  if (options.json) {
    nlohmann::json j = to_json(summary);
    j["allocations_with_stack"] = sites.allocations_with_stack;
    j["distinct_stacks"] = sites.distinct_stacks;
    j["top_stacks_by_count"] = sites_json(loaded.trace, sites.by_count);
    j["top_stacks_by_bytes"] = sites_json(loaded.trace, sites.by_bytes);
    std::cout << json_text(j, 2) << '\n';
    return;
  }
  print_text(summary, options.anomalies);
  if (!loaded.trace.has_stacks()) {
    std::printf("\nno call stacks in this trace (record with `alloclab record --stacks N`)\n");
    return;
  }
  std::printf("\ncall stacks  %s with a stack, %s\n",
              counted(sites.allocations_with_stack, "allocation").c_str(),
              counted(sites.distinct_stacks, "distinct stack").c_str());
  print_sites(loaded.trace, "top allocation stacks by count", sites.by_count);
  print_sites(loaded.trace, "top allocation stacks by bytes", sites.by_bytes);
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
