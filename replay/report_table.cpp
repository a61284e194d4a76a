#include "alloclab/replay/report_table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/replay/first_failure.hpp"
#include "alloclab/replay/report.hpp"

namespace alloclab {

namespace {

std::string percent_cell(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
  return text;
}

std::string ratio_cell(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", ratio);
  return text;
}

std::string failed_note(const StrategyResult& r) {
  return "^ " + counted(r.metrics.failed_requests, "request") + " failed (upstream out of memory)" +
         (r.stopped_at_first_failure ? "; the replay stopped there" : "");
}

// "^ num_alloc_retries 3, num_ooms 1": the strategy's own counters, when one is not 0.
std::string counters_note(const StrategyResult& r) {
  std::string text;
  bool any = false;
  for (const auto& [name, value] : r.strategy_counters) {
    text += (text.empty() ? "^ " : ", ") + name + " " + grouped(value);
    any = any || value != 0;
  }
  return any ? text : std::string();
}

// What the recommendation saves at peak, said plainly when it saves nothing or costs more (a
// limit can reserve more than the unbounded cache: it frees blocks the trace then asks again).
std::string saved_cell(const Advice& a) {
  if (a.saved_bytes == 0) return "nothing";
  if (a.saved_bytes < 0)
    return "none (" + human_bytes(static_cast<std::uint64_t>(-a.saved_bytes)) + " more)";
  const double percent = 100.0 * a.saved_fraction;
  const std::string share = percent < 0.5 ? "<1%" : string_printf("%.0f%%", percent);
  return human_bytes(static_cast<std::uint64_t>(a.saved_bytes)) + " (" + share + ")";
}

// "event 1,175" (the trace's numbering), or the operation when the event is not known.
std::string failure_place(const FirstFailure& f) {
  return f.event_index ? "event " + grouped(*f.event_index) : "operation " + grouped(f.op_index);
}

// "30.00 MiB peak reserved, 3 cudaMalloc calls", and where it ran out of memory if it did.
std::string trial_figures(const PyTorchTrial& t) {
  const std::string figures = human_bytes(t.metrics.peak_reserved_bytes) + " peak reserved, " +
                              counted(t.metrics.upstream_allocs, "cudaMalloc call");
  if (!t.oom()) return figures;
  return "out of memory at " + failure_place(*t.first_failure) + " (" + figures + " until then)";
}

}  // namespace

std::string results_table_text(const std::vector<StrategyResult>& results) {
  bool timed = false, modelled = false;
  for (const StrategyResult& r : results) {
    timed = timed || !r.latency.empty();
    modelled = modelled || r.modelled.has_value();
  }
  using Align = TextTable::Align;
  std::vector<TextTable::Column> columns = {{"strategy", Align::left},
                                            {"requests"},
                                            {"hit rate"},
                                            {"up allocs"},
                                            {"up frees"},
                                            {"evictions"},
                                            {"peak live"},
                                            {"peak reserved"},
                                            {"res/live"},
                                            {"slack"},
                                            {"final cached"}};
  // Real replay: strategy allocate p50/p99, and the total of allocate (+ touch with --touch).
  if (timed) columns.insert(columns.end(), {{"alloc p50/p99"}, {"alloc total"}});
  if (modelled) columns.push_back({"modelled time"});
  TextTable table(std::move(columns));
  for (const StrategyResult& r : results) {
    const Metrics& m = r.metrics;
    const double ratio = m.peak_live_bytes ? static_cast<double>(m.peak_reserved_bytes) /
                                                 static_cast<double>(m.peak_live_bytes)
                                           : 0.0;
    std::vector<std::string> row = {r.strategy,
                                    grouped(m.requests),
                                    percent_cell(m.hit_rate()),
                                    grouped(m.upstream_allocs),
                                    grouped(m.upstream_frees),
                                    grouped(m.evictions),
                                    human_bytes(m.peak_live_bytes),
                                    human_bytes(m.peak_reserved_bytes),
                                    ratio_cell(ratio),
                                    human_bytes(m.slack_bytes),
                                    human_bytes(m.final_cached_bytes)};
    if (timed) {
      const auto at = [&](const char* name) {
        const auto it = r.latency.find(name);
        return it == r.latency.end() ? LatencySummary{} : it->second;
      };
      const LatencySummary alloc = at("strategy_allocate"), touch = at("touch");
      row.push_back(human_duration(alloc.p50_ns) + "/" + human_duration(alloc.p99_ns));
      row.push_back(human_duration(alloc.total_ns + touch.total_ns));
    }
    if (modelled) row.push_back(r.modelled ? human_duration(r.modelled->total()) : "");
    table.add_row(std::move(row));
    if (m.failed_requests) table.add_note(failed_note(r), 1);
    if (const std::string note = counters_note(r); !note.empty()) table.add_note(note, 1);
  }
  return table.str() + first_failures_text(results) + fidelity_text(results);
}

std::string fidelity_text(const std::vector<StrategyResult>& results) {
  const Fidelity* recorded = nullptr;
  std::optional<std::uint64_t> empty_caches;
  for (const StrategyResult& r : results) {
    if (!recorded && r.fidelity) recorded = &*r.fidelity;
    if (!empty_caches) empty_caches = r.empty_cache_calls;
  }
  if (!recorded) return "";
  std::string text = string_printf("fidelity: the recorded allocator made %s (%s) and %s (%s)",
                                   counted(recorded->recorded_allocs, "segment alloc").c_str(),
                                   human_bytes(recorded->recorded_alloc_bytes).c_str(),
                                   counted(recorded->recorded_frees, "segment free").c_str(),
                                   human_bytes(recorded->recorded_free_bytes).c_str());
  if (empty_caches && *empty_caches > 0)
    text += "; " + counted(*empty_caches, "empty_cache") +
            (*empty_caches == 1 ? " replayed as a release" : " replayed as releases");
  text += "\n";
  std::size_t width = 0;
  for (const StrategyResult& r : results)
    if (r.fidelity) width = std::max(width, r.strategy.size());
  for (const StrategyResult& r : results) {
    if (!r.fidelity) continue;
    text += "  " + r.strategy + std::string(width - r.strategy.size(), ' ') + "  " +
            fidelity_line(*r.fidelity) + "\n";
  }
  return text;
}

std::string fidelity_line(const Fidelity& f) {
  const std::string counts =
      string_printf("%s/%s allocs and %s/%s frees matched", grouped(f.matched_allocs).c_str(),
                    grouped(f.recorded_allocs).c_str(), grouped(f.matched_frees).c_str(),
                    grouped(f.recorded_frees).c_str());
  if (f.all_matched()) return "every call matched (" + counts + ")";
  const FidelityDivergence& d = *f.first_divergence;
  std::string text =
      counts + string_printf(" (the model made %s, %s); first apart at op %s",
                             counted(f.model_allocs, "alloc").c_str(),
                             counted(f.model_frees, "free").c_str(), grouped(d.op).c_str());
  if (d.event) text += " (event " + grouped(*d.event) + ")";
  text += string_printf(", %.6f s, ", static_cast<double>(d.time_ns) / 1e9);
  text += d.at == "alloc" ? "alloc of " + human_bytes(d.request_size) : d.at;
  // A CUDA stream is a pointer: shown as one where it is not a small number.
  const std::string stream =
      d.stream < 65536 ? std::to_string(d.stream)
                       : string_printf("0x%llx", static_cast<unsigned long long>(d.stream));
  return text + string_printf(" on %s stream %s: %s", device_name(d.device).c_str(), stream.c_str(),
                              d.what.c_str());
}

std::string replay_notes_text(const TraceSummary& summary) {
  std::string text;
  if (summary.implicit_run) text += "(no run markers in the trace: it is replayed as one run)\n";
  if (const BelowMinSize& b = summary.below_min_size; b.min_size > 0)
    text += string_printf(
        "(--min-size %s: %s host allocations (%s) below it or aligned above %s B, and %s "
        "mappings, are left to the real allocator, not replayed)\n",
        grouped(b.min_size).c_str(), grouped(b.allocations).c_str(), human_bytes(b.bytes).c_str(),
        grouped(run_block_alignment).c_str(), grouped(b.mappings).c_str());
  const Anomalies& a = summary.anomalies;
  if (a.total() == 0) return text;
  std::string kinds;
  const std::pair<AnomalyKind, std::uint64_t> counts[] = {
      {AnomalyKind::free_unknown, a.free_unknown},
      {AnomalyKind::double_free, a.double_free},
      {AnomalyKind::alloc_over_live, a.alloc_over_live},
      {AnomalyKind::nested_run_begin, a.nested_run_begin},
      {AnomalyKind::run_end_outside_run, a.run_end_outside_run}};
  for (const auto& [kind, count] : counts)
    if (count > 0)
      kinds += (kinds.empty() ? "" : ", ") + std::string(to_string(kind)) + " " + grouped(count);
  return text + string_printf(
                    "(the trace has %s (%s), repaired to be replayed: these numbers rest on the "
                    "repaired trace; `alloclab info %s` says where they are)\n",
                    counted(a.total(), "anomaly", "anomalies").c_str(), kinds.c_str(),
                    summary.source.c_str());
}

std::string sweep_table_text(const SweepRun& run) {
  std::string text = counted(run.points.size(), "point") + " in all";
  if (run.shard.count > 1)
    text += string_printf("; shard %zu/%zu replays %zu of them", run.shard.index, run.shard.count,
                          run.point_indices.size());
  text += "\n";
  using Align = TextTable::Align;
  TextTable table({{"point"},
                   {"strategy", Align::left},
                   {"hit rate"},
                   {"peak reserved"},
                   {"up allocs"},
                   {"evictions"}});
  for (std::size_t k = 0; k < run.results.size(); ++k) {
    const Metrics& m = run.results[k].metrics;
    table.add_row({std::to_string(run.point_indices[k]), run.results[k].strategy,
                   percent_cell(m.hit_rate()), human_bytes(m.peak_reserved_bytes),
                   grouped(m.upstream_allocs), grouped(m.evictions)});
    if (m.failed_requests) table.add_note(failed_note(run.results[k]), 2);
  }
  return text + table.str();
}

std::string advice_text(const std::vector<Advice>& advice, double target) {
  std::string text =
      string_printf("target: keep %.4g%% of the unbounded cache's hit rate\n\n", 100.0 * target);
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
  std::string paragraph;
  for (const Advice& a : advice) paragraph += (paragraph.empty() ? "" : " ") + advice_sentence(a);
  return text + table.str() + "\n" + paragraph + "\n";
}

std::string pytorch_advice_text(const PyTorchAdvice& a) {
  if (a.trials.empty()) return "";
  std::string text =
      counted(a.trials.size(), "setting") + " of PyTorch's caching allocator replayed";
  if (a.memory_limit)
    text += ", each on a device of " + human_bytes(*a.memory_limit) +
            " (--memory-limit), stopping at its first out-of-memory error";
  text += ".\n\n";
  using Align = TextTable::Align;
  TextTable table({{"PYTORCH_CUDA_ALLOC_CONF", Align::left},
                   {"out of memory", Align::left},
                   {"peak reserved"},
                   {"cudaMalloc"},
                   {"retries"},
                   {"res/live"}});
  bool fraction = false;
  for (const PyTorchTrial& t : a.trials) {
    fraction = fraction || t.config.memory_fraction;
    std::string label = t.config.conf.empty() ? "(default)" : t.config.conf;
    if (t.config.recorded)
      label = t.config.conf.empty() ? "(default, as recorded)" : label + " (as recorded)";
    table.add_row({label, t.oom() ? "at " + failure_place(*t.first_failure) : "no",
                   human_bytes(t.metrics.peak_reserved_bytes), grouped(t.metrics.upstream_allocs),
                   grouped(t.counter("num_alloc_retries")), ratio_cell(t.reserved_per_live())});
  }
  text += table.str();
  if (fraction)
    text +=
        "(PyTorch collects garbage only under a memory fraction: the garbage_collection_threshold "
        "settings were replayed with per_process_memory_fraction 1 of the limit, which a program "
        "sets with torch.cuda.set_per_process_memory_fraction(F), F being the limit's share of "
        "the device: 1.0 when the limit is the device's size)\n";
  text += "\n";
  const auto block = [&](const std::string& why, std::size_t i) {
    const PyTorchTrial& t = a.trials[i];
    const std::string which = std::string(t.config.conf.empty() ? "the default, " : "") +
                              (t.config.recorded ? "as recorded, " : "");
    std::string lines = "# " + why + ": " + which + trial_figures(t) + "\n";
    if (t.config.memory_fraction)
      lines += "# (and torch.cuda.set_per_process_memory_fraction in the program, see above)\n";
    return lines + pytorch_conf_line(t.config.conf) + "\n";
  };
  if (a.all_oom()) {
    text += "Every setting runs out of memory" +
            (a.memory_limit ? " under the " + human_bytes(*a.memory_limit) + " limit" : "") +
            "; none avoids it.\n";
    if (a.furthest) text += block("the one that got furthest", *a.furthest);
  } else {
    const std::string avoiding = a.memory_limit ? " without running out of memory" : "";
    if (a.least_reserved) text += block("least peak reserved" + avoiding, *a.least_reserved);
    if (a.fewest_upstream_allocs)
      text += block("fewest cudaMalloc calls" + avoiding, *a.fewest_upstream_allocs);
  }
  return text + block("for comparison", 0);
}

std::string calibration_text(const Calibration& c) {
  std::string text = string_printf("%s%s: latency by size (median and p99 of each call)\n",
                                   c.upstream.c_str(), c.touch ? ", every page touched" : "");
  TextTable table({{"size"}, {"pairs"}, {"alloc p50"}, {"alloc p99"}, {"free p50"}, {"free p99"}});
  for (const CalibrationPoint& p : c.points) {
    if (p.failed) {
      table.add_row({human_bytes(p.size), "failed"});
      continue;
    }
    table.add_row({human_bytes(p.size), grouped(p.allocate.count),
                   human_duration(p.allocate.p50_ns), human_duration(p.allocate.p99_ns),
                   human_duration(p.deallocate.p50_ns), human_duration(p.deallocate.p99_ns)});
  }
  return text + table.str() +
         string_printf("cached allocate+free of `exact` (hit_ns): %.1f ns\n", c.hit_ns);
}

std::string merged_report_text(const nlohmann::json& merged, const std::string& source) {
  std::vector<StrategyResult> results;
  for (const nlohmann::json& r : merged["results"]) results.push_back(result_from_json(r, source));
  std::string text = results_table_text(results);
  if (merged.value("partial", false))
    text += string_printf("(partial: %s)\n", merged.contains("sweep")
                                                 ? "some sweep points have no result"
                                                 : "an input report was cut short");
  return text;
}

std::string program_line(const nlohmann::json& program) {
  return string_printf(
      "program: exit %d, %.3f s wall, %.3f s user, %.3f s system, %s minor and %s major page "
      "faults, peak RSS %.1f MiB",
      program.value("exit_status", 0), program.value("wall_seconds", 0.0),
      program.value("user_seconds", 0.0), program.value("system_seconds", 0.0),
      grouped(program.value("minor_faults", std::uint64_t{0})).c_str(),
      grouped(program.value("major_faults", std::uint64_t{0})).c_str(),
      static_cast<double>(program.value("peak_rss_bytes", std::uint64_t{0})) / (1024.0 * 1024.0));
}

}  // namespace alloclab
