// The Runs view: per run of the trace, each strategy's hit rate (or miss rate), upstream calls
// and peak reserved bytes. A pool that lives for one graph run is judged run by run: a strategy
// that wins overall can lose the first run, or the run whose shapes changed.
#include <algorithm>
#include <cmath>
#include <limits>

#include <imgui.h>

#include "alloclab/format/units.hpp"
#include "tradeoff.hpp"
#include "ui_registry.hpp"
#include "views.hpp"

namespace alloclab::gui {

const char* run_metric_name(RunMetric metric) {
  switch (metric) {
    case RunMetric::hit_rate:
      return "hit rate";
    case RunMetric::miss_rate:
      return "miss rate";
    case RunMetric::upstream_calls:
      return "upstream calls";
    case RunMetric::peak_reserved:
      return "peak reserved";
    case RunMetric::allocation_time:
      return "allocation time";
  }
  return "hit rate";
}

namespace {

double run_value(const RunMetrics& run, RunMetric metric) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (metric) {
    case RunMetric::hit_rate:
      return run.requests == 0 ? nan
                               : static_cast<double>(run.hits) / static_cast<double>(run.requests);
    case RunMetric::miss_rate:
      return run.requests == 0
                 ? nan
                 : static_cast<double>(run.requests - run.hits) / static_cast<double>(run.requests);
    case RunMetric::upstream_calls:
      return static_cast<double>(run.upstream_allocs + run.upstream_frees);
    case RunMetric::peak_reserved:
      return static_cast<double>(run.peak_reserved_bytes);
    case RunMetric::allocation_time:
      return run.allocation_time_ns ? static_cast<double>(*run.allocation_time_ns) : nan;
  }
  return nan;
}

}  // namespace

RunsChart runs_chart(const ReportDoc& report, std::optional<RunMetric> chosen) {
  RunsChart c;
  std::size_t runs = 0;
  for (const StrategyResult& r : report.results) runs = std::max(runs, r.runs.size());
  if (runs == 0) return c;
  for (std::size_t k = 0; k < runs; ++k) {
    std::string label;
    for (const StrategyResult& r : report.results)
      if (k < r.runs.size() && !r.runs[k].label.empty()) {
        label = r.runs[k].label;
        break;
      }
    c.labels.push_back(label.empty() ? "run " + std::to_string(k) : label);
  }
  // Hit rates of real workloads sit above 90%, where a linear axis shows bars of one height:
  // then the miss rate on a log axis tells 99.9% from 99.99%.
  std::vector<double> hit_rates;
  for (const StrategyResult& r : report.results)
    for (const RunMetrics& run : r.runs)
      if (run.requests > 0) hit_rates.push_back(run_value(run, RunMetric::hit_rate));
  c.metric =
      chosen.value_or(prefer_miss_rate(hit_rates) ? RunMetric::miss_rate : RunMetric::hit_rate);
  for (const StrategyResult& r : report.results)
    for (const RunMetrics& run : r.runs) c.timed = c.timed || run.allocation_time_ns.has_value();
  c.unit = c.metric == RunMetric::upstream_calls    ? Unit::count
           : c.metric == RunMetric::peak_reserved   ? Unit::bytes
           : c.metric == RunMetric::allocation_time ? Unit::ns
                                                    : Unit::percent;
  double smallest_positive = std::numeric_limits<double>::infinity(), largest = 0;
  for (const StrategyResult& r : report.results) {
    std::vector<double> values(runs, std::numeric_limits<double>::quiet_NaN());
    for (std::size_t k = 0; k < r.runs.size(); ++k) {
      values[k] = run_value(r.runs[k], c.metric);
      if (values[k] > 0) smallest_positive = std::min(smallest_positive, values[k]);
      if (values[k] > largest) largest = values[k];
    }
    c.values.push_back(std::move(values));
  }
  c.log = c.metric == RunMetric::miss_rate;
  if (c.log) {
    // A run without a miss sits on the floor, a decade below the smallest miss rate seen.
    const double floor = std::isfinite(smallest_positive) ? smallest_positive / 10 : 1e-4;
    c.lo = std::pow(10, std::floor(std::log10(floor)));
    c.hi = std::max(largest, c.lo * 10) * 1.5;
  } else {
    c.lo = 0;
    c.hi = c.metric == RunMetric::hit_rate ? 1.05 : std::max(largest, 1.0) * 1.1;
  }
  return c;
}

// What the view shows, rebuilt only when the report, its strategies, the trace or the metric
// change: a trace can have tens of thousands of runs, too many to rebuild every frame.
struct RunsCache {
  const ReportDoc* report = nullptr;
  std::size_t strategies = 0;
  const nlohmann::json* summary = nullptr;
  std::optional<RunMetric> metric;
  RunsChart chart;
  Table table;
  int last_frame = -1;  // ImGui's frame count when this view last drew
};

void draw_runs(const Model& model, ViewState& state) {
  const ReportDoc* report = model.report();
  const nlohmann::json* summary = model.trace_summary();
  if (!state.runs) state.runs = std::make_shared<RunsCache>();
  RunsCache& cache = *state.runs;
  const std::size_t strategies_now = report ? report->results.size() : 0;
  const bool new_table = cache.summary != summary || cache.last_frame < 0;
  if (new_table) cache.table = summary ? runs_table(*summary) : Table{};
  if (cache.report != report || cache.strategies != strategies_now ||
      cache.metric != state.runs_metric || new_table)
    cache.chart = report ? runs_chart(*report, state.runs_metric) : RunsChart{};
  cache.report = report;
  cache.strategies = strategies_now;
  cache.summary = summary;
  cache.metric = state.runs_metric;
  // The table for CSV export: unless this view drew the last frame too, another view's is there.
  const int frame = ImGui::GetFrameCount();
  if (new_table || cache.last_frame != frame - 1) state.table = cache.table;
  cache.last_frame = frame;
  const RunsChart& c = cache.chart;
  if (c.labels.empty()) {
    empty_hint(
        "No runs to compare: the current report has no per-run results. Runs come from run "
        "markers (markers.h, the Python markers, or NVTX ranges with --cuda); replay a trace "
        "that has them.");
    if (!cache.table.rows.empty()) draw_table("runs", cache.table);
    return;
  }
  // The metric switch; an explicit choice is kept for other reports.
  const RunMetric metrics[] = {RunMetric::hit_rate, RunMetric::miss_rate, RunMetric::upstream_calls,
                               RunMetric::peak_reserved, RunMetric::allocation_time};
  for (RunMetric m : metrics) {
    if (m == RunMetric::allocation_time && !c.timed) continue;
    if (m != metrics[0]) ImGui::SameLine();
    if (ImGui::RadioButton(run_metric_name(m), c.metric == m)) state.runs_metric = m;
    track_item(std::string("runs:") + run_metric_name(m));
  }
  const std::size_t runs = c.labels.size(), strategies = c.values.size();
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < strategies; ++i)
    legend.push_back({report->results[i].strategy,
                      strategy_color(static_cast<int>(i), report->results[i].strategy),
                      report->results[i].strategy});
  // Up to 40 runs each get a slot with its name and grouped bars; more read as lines.
  const bool bars = runs <= 40;
  Axis x{0, static_cast<double>(runs), false, Unit::count, bars ? "" : "run"};
  if (bars) x.categories = c.labels;
  const std::string y_label = std::string(run_metric_name(c.metric)) + " per run" +
                              (c.log ? " (log; no miss: on the floor)" : "");
  const float height = std::max(200.0f, ImGui::GetContentRegionAvail().y * 0.6f);
  Chart chart("runs", ImVec2(0, height), x, Axis{c.lo, c.hi, c.log, c.unit, y_label}, legend);
  const auto shown = [&](double v) { return c.log ? std::max(v, c.lo) : v; };
  for (std::size_t i = 0; i < strategies; ++i) {
    const ImU32 color = strategy_color(static_cast<int>(i), report->results[i].strategy);
    if (bars) {
      const double width = 0.8 / static_cast<double>(strategies);
      for (std::size_t k = 0; k < runs; ++k) {
        const double v = c.values[i][k];
        if (std::isnan(v)) continue;
        const double x0 = static_cast<double>(k) + 0.1 + width * static_cast<double>(i);
        chart.rect(x0, c.lo, x0 + width * 0.9, shown(v), color);
      }
    } else {
      // One column of pixels per bucket of runs: the bucket's range as a bar and a line through
      // its means, so a frame costs the plot's width, not the number of runs.
      const float left = chart.plot_min().x, right = chart.plot_max().x;
      const auto columns = static_cast<std::size_t>(std::max(1.0f, right - left));
      ImDrawList* list = chart.draw_list();
      ImVec2 previous;
      bool have_previous = false;
      for (std::size_t col = 0; col < columns; ++col) {
        const std::size_t first = col * runs / columns, last = (col + 1) * runs / columns;
        double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
        std::size_t n = 0;
        for (std::size_t k = first; k < last; ++k) {
          const double v = c.values[i][k];
          if (std::isnan(v)) continue;
          lo = std::min(lo, shown(v));
          hi = std::max(hi, shown(v));
          sum += shown(v);
          ++n;
        }
        if (n == 0) continue;
        const float px = chart.px_x((static_cast<double>(first) + static_cast<double>(last)) / 2);
        if (hi > lo)
          list->AddLine(ImVec2(px, chart.px_y(lo)), ImVec2(px, chart.px_y(hi)),
                        strategy_color(static_cast<int>(i), report->results[i].strategy, 0.35f));
        const ImVec2 mean(px, chart.px_y(sum / static_cast<double>(n)));
        if (have_previous) list->AddLine(previous, mean, color, 1.5f);
        previous = mean;
        have_previous = true;
      }
    }
  }
  if (chart.hovered()) {
    const double at = chart.x_at(chart.mouse().x);
    if (at >= 0 && at < static_cast<double>(runs)) {
      const auto k = static_cast<std::size_t>(at);
      std::vector<std::string> lines{c.labels[k] + " (run " + std::to_string(k) + ")"};
      for (std::size_t i = 0; i < strategies; ++i) {
        const double v = c.values[i][k];
        lines.push_back(report->results[i].strategy + ": " +
                        (std::isnan(v) ? std::string("no requests") : format_value(v, c.unit)));
        if (k < report->results[i].runs.size()) {
          const RunMetrics& run = report->results[i].runs[k];
          lines.back() += "  (hits " + grouped(run.hits) + " of " + grouped(run.requests) +
                          ", upstream calls " + grouped(run.upstream_allocs + run.upstream_frees) +
                          ")";
        }
      }
      Chart::tooltip(lines);
    }
  }
  if (!cache.table.rows.empty()) draw_table("runs", cache.table);
}

}  // namespace alloclab::gui
