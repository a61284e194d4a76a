#include "alloclab/format/summary_text.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "alloclab/format/event.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"

namespace alloclab {
namespace {

// Runs listed before "... N more runs": a trace of thousands of runs keeps its summary short.
constexpr std::size_t kRunsListed = 20;
// A run's label is the program's text: a long one is cut so that the numbers stay in view.
constexpr std::size_t kRunLabelChars = 28;

std::string histogram_text(const char* title, const std::array<std::uint64_t, 65>& buckets,
                           bool as_bytes) {
  std::uint64_t largest = 0;
  for (std::uint64_t count : buckets) largest = std::max(largest, count);
  if (largest == 0) return {};
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
  return "\n" + std::string(title) + "\n" + table.str();
}

std::string top_sizes_text(const char* title, const std::vector<SizeCount>& sizes) {
  if (sizes.empty()) return {};
  TextTable table({{"size"}, {"count"}, {"bytes"}}, "  ");
  for (const SizeCount& s : sizes)
    table.add_row({grouped(s.size), grouped(s.count), human_bytes(s.bytes)});
  return "\n" + std::string(title) + "\n" + table.str();
}

std::string first_anomalies_text(const TraceSummary& s, std::size_t wanted) {
  const std::size_t shown = std::min(wanted, s.first_anomalies.size());
  if (shown == 0) return {};
  std::string text = string_printf(
      "  first %zu (event: its index in the trace from 0, as `alloclab convert` numbers "
      "CSV rows after the header)\n",
      shown);
  using Align = TextTable::Align;
  TextTable table({{"", Align::left}, {"", Align::left}, {"", Align::left}, {"", Align::left}},
                  "  ");
  for (std::size_t k = 0; k < shown; ++k) {
    const AnomalyAt& a = s.first_anomalies[k];
    const std::string where =
        string_printf("0x%llx on %s, thread %llu", static_cast<unsigned long long>(a.address),
                      device_name(a.device).c_str(), static_cast<unsigned long long>(a.thread));
    table.add_row({"event " + grouped(a.event), "+" + human_duration(a.time_ns - s.first_time_ns),
                   std::string(to_string(a.kind)), where});
  }
  text += table.str();
  if (s.anomalies.total() > shown)
    text += string_printf(
        "  ... %s more (--anomalies N lists up to the first %zu, as --json does)\n",
        grouped(s.anomalies.total() - shown).c_str(), ResolvedTrace::max_listed_anomalies);
  return text;
}

// "1.50 MiB at +2.0 ms"; a peak of nothing has no time (its time field is left at 0, before
// the trace's first event).
std::string peak_text(std::uint64_t bytes, std::uint64_t time_ns, const TraceSummary& s) {
  if (bytes == 0) return "0 B (nothing was live)";
  return human_bytes(bytes) + " at +" +
         human_duration(time_ns >= s.first_time_ns ? time_ns - s.first_time_ns : 0);
}

double bytes_per_event(std::uint64_t bytes, std::uint64_t events) {
  return events ? static_cast<double>(bytes) / static_cast<double>(events) : 0.0;
}

std::string runs_text(const TraceSummary& s) {
  std::string text =
      string_printf("\nruns         %zu%s\n", s.runs.size(),
                    s.implicit_run ? " (no run markers: the whole trace is one run)" : "");
  if (s.runs.empty()) return text;
  using Align = TextTable::Align;
  TextTable table({{"#"},
                   {"label", Align::left},
                   {"allocations"},
                   {"frees"},
                   {"peak live"},
                   {"duration"},
                   {"", Align::left}},
                  "  ");
  const std::size_t shown = std::min(s.runs.size(), kRunsListed);
  for (std::size_t k = 0; k < shown; ++k) {
    const RunSummary& r = s.runs[k];
    table.add_row({std::to_string(k), r.label.substr(0, kRunLabelChars), grouped(r.allocations),
                   grouped(r.frees), human_bytes(r.peak_live_bytes), human_duration(r.duration_ns),
                   r.ended ? "" : "(never ended)"});
  }
  text += table.str();
  if (shown < s.runs.size())
    text += string_printf("  ... %zu more runs (see --json)\n", s.runs.size() - shown);
  return text;
}

}  // namespace

std::string summary_text(const TraceSummary& s, std::size_t anomalies_listed) {
  std::string text = string_printf("trace        %s\n", s.source.c_str());
  text += string_printf("events       %s (alloc %s, free %s, run_begin %s, run_end %s, mark %s)\n",
                        grouped(s.events).c_str(), grouped(s.events_by_op[0]).c_str(),
                        grouped(s.events_by_op[1]).c_str(), grouped(s.events_by_op[2]).c_str(),
                        grouped(s.events_by_op[3]).c_str(), grouped(s.events_by_op[4]).c_str());
  std::string devices;
  for (const std::string& d : s.devices) devices += (devices.empty() ? "" : ", ") + d;
  text += string_printf("threads      %s   devices %s   streams %s", grouped(s.threads).c_str(),
                        devices.empty() ? "-" : devices.c_str(), grouped(s.streams).c_str());
  if (s.pools) text += string_printf("   pools %s", grouped(s.pools).c_str());
  text += "\n";
  text += string_printf("duration     %s\n", human_duration(s.duration_ns).c_str());
  text +=
      string_printf("allocations  %s   frees %s   leaks %s (%s)\n", grouped(s.allocations).c_str(),
                    grouped(s.frees).c_str(), grouped(s.anomalies.leaks).c_str(),
                    human_bytes(s.anomalies.leaked_bytes).c_str());
  text += string_printf("requested    %s in total\n", human_bytes(s.bytes_requested).c_str());
  text += string_printf("peak live    %s\n",
                        peak_text(s.peak_live_bytes, s.peak_live_time_ns, s).c_str());
  if (s.by_device.size() > 1)
    for (const DeviceSummary& d : s.by_device)
      text += string_printf("  %-10s %s, %s requested, peak live %s\n", d.device.c_str(),
                            counted(d.allocations, "allocation").c_str(),
                            human_bytes(d.bytes_requested).c_str(),
                            peak_text(d.peak_live_bytes, d.peak_live_time_ns, s).c_str());
  const Anomalies& a = s.anomalies;
  text += string_printf(
      "anomalies    %s (free of unknown address %s, double free %s, alloc over live %s, "
      "nested run_begin %s, run_end outside run %s)\n",
      grouped(a.total()).c_str(), grouped(a.free_unknown).c_str(), grouped(a.double_free).c_str(),
      grouped(a.alloc_over_live).c_str(), grouped(a.nested_run_begin).c_str(),
      grouped(a.run_end_outside_run).c_str());
  text += first_anomalies_text(s, anomalies_listed);
  text += string_printf("also         free(NULL) %s, failed allocations %s, unterminated runs %s\n",
                        grouped(a.free_null).c_str(), grouped(a.failed_allocs).c_str(),
                        grouped(a.unterminated_runs).c_str());
  if (s.below_min_size.min_size > 0) {
    const BelowMinSize& b = s.below_min_size;
    text += string_printf(
        "left out     %s host allocations (%s) below --min-size %s B or aligned above %s B "
        "(%s for their alignment), and %s mappings: not counted above\n",
        grouped(b.allocations).c_str(), human_bytes(b.bytes).c_str(), grouped(b.min_size).c_str(),
        grouped(run_block_alignment).c_str(), grouped(b.over_aligned).c_str(),
        grouped(b.mappings).c_str());
  }
  if (a.inherited_frees > 0)
    text +=
        string_printf("inherited    %s of blocks allocated before the fork this trace starts at\n",
                      counted(a.inherited_frees, "free").c_str());
  if (s.segment_events > 0) {
    text += string_printf(
        "segments     %s allocated (%s), %s freed: the recorded allocator's own calls\n",
        grouped(s.segment_allocs).c_str(), human_bytes(s.segment_bytes_allocated).c_str(),
        grouped(s.segment_frees).c_str());
    if (s.recorded_hit_rate)
      text += string_printf("recorded hit rate %.2f%% (1 - segment allocs / allocations)\n",
                            100.0 * *s.recorded_hit_rate);
  }
  if (s.start_state) {
    const StartStateSummary& t = *s.start_state;
    text += string_printf(
        "start state  %s segments (%s) held, %s blocks (%s) live before the first event%s\n",
        grouped(t.segments).c_str(), human_bytes(t.segment_bytes).c_str(),
        grouped(t.blocks).c_str(), human_bytes(t.block_bytes).c_str(),
        t.gaps.empty() ? "" : "; partial (see the warnings)");
  }
  if (s.file_bytes)
    text += string_printf("on disk      %s, %.2f bytes/event\n", human_bytes(*s.file_bytes).c_str(),
                          bytes_per_event(*s.file_bytes, s.events));
  text += string_printf("in memory    %s, %.2f bytes/event\n", human_bytes(s.memory_bytes).c_str(),
                        bytes_per_event(s.memory_bytes, s.events));

  text += histogram_text("size histogram (powers of two)", s.size_histogram, true);
  text += histogram_text("lifetime histogram (powers of two)", s.lifetime_histogram, false);
  text += top_sizes_text("top sizes by count", s.top_sizes_by_count);
  text += top_sizes_text("top sizes by bytes", s.top_sizes_by_bytes);
  text += runs_text(s);
  for (const std::string& w : s.warnings) text += string_printf("warning      %s\n", w.c_str());
  return text;
}

}  // namespace alloclab
