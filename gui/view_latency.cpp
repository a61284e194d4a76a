// Latency: per-strategy distributions of a real replay (CDF and a histogram on log x, p50 and
// p99 marked), or the modelled time of a simulation with a cost model.
#include <algorithm>
#include <cmath>

#include "alloclab/format/units.hpp"
#include "views.hpp"

namespace alloclab::gui {
namespace {

const char* const kMetrics[] = {"strategy_allocate", "strategy_deallocate", "upstream_allocate",
                                "upstream_deallocate", "touch"};

// The distribution as (value, cumulative fraction) points from the percentiles, for reports
// made before the histogram field.
std::vector<std::pair<double, double>> cdf_points(const LatencySummary& l) {
  return {{static_cast<double>(std::max<std::uint64_t>(l.p50_ns, 1)), 0.5},
          {static_cast<double>(std::max<std::uint64_t>(l.p90_ns, 1)), 0.9},
          {static_cast<double>(std::max<std::uint64_t>(l.p99_ns, 1)), 0.99},
          {static_cast<double>(std::max<std::uint64_t>(l.p999_ns, 1)), 0.999},
          {static_cast<double>(std::max<std::uint64_t>(l.max_ns, 1)), 1.0}};
}

// Buckets of the report's histogram as [low, high + 1) ranges on a log axis (>= 1 ns) and the
// share of calls each holds.
struct Bar {
  double x0, x1, share;
};

std::vector<Bar> histogram_bars(const LatencySummary& l) {
  std::vector<Bar> bars;
  if (l.count == 0) return bars;
  for (const auto& [high, n] : l.histogram)
    bars.push_back({std::max(1.0, static_cast<double>(LatencyHistogram::coarse_low(high))),
                    static_cast<double>(high) + 1,
                    static_cast<double>(n) / static_cast<double>(l.count)});
  return bars;
}

// The share of calls at most `x` ns long: the buckets below x, and of the bucket holding x the
// part below it (calls spread evenly inside a bucket, as the CDF draws them).
double share_below(const std::vector<Bar>& bars, double x) {
  double share = 0;
  for (const Bar& b : bars) {
    if (x >= b.x1)
      share += b.share;
    else if (x > b.x0)
      share += b.share * (x - b.x0) / (b.x1 - b.x0);
  }
  return share;
}

void draw_modelled(const ReportDoc& report, ViewState& state) {
  Table t;
  t.columns = {{"strategy", Better::none},
               {"upstream_allocate_ns", Better::lower},
               {"upstream_deallocate_ns", Better::lower},
               {"hits_ns", Better::none},
               {"total_ns", Better::lower}};
  double max_total = 1;
  for (const StrategyResult& r : report.results)
    if (r.modelled) {
      max_total = std::max(max_total, static_cast<double>(r.modelled->total()));
      t.rows.push_back({text_cell(r.strategy),
                        ns_cell(static_cast<double>(r.modelled->upstream_allocate)),
                        ns_cell(static_cast<double>(r.modelled->upstream_deallocate)),
                        ns_cell(static_cast<double>(r.modelled->hits)),
                        ns_cell(static_cast<double>(r.modelled->total()))});
    }
  state.table = t;
  if (t.rows.empty()) {
    empty_hint(
        "A simulated report has no timings. Replay with --cost-model host|cuda|FILE for modelled "
        "time, or with --upstream host-malloc (a real allocator) for measured latency.");
    return;
  }
  ImGui::Text("modelled allocation time (simulation with a cost model)");
  const auto n = static_cast<double>(report.results.size());
  std::vector<std::string> names;
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    names.push_back(report.results[i].strategy);
    if (report.results[i].modelled)
      legend.push_back({report.results[i].strategy,
                        strategy_color(static_cast<int>(i), report.results[i].strategy),
                        report.results[i].strategy});
  }
  Chart chart("modelled", ImVec2(0, std::max(200.0f, ImGui::GetContentRegionAvail().y - 160)),
              Axis{0, n, false, Unit::count, "", names},
              Axis{0, max_total * 1.1, false, Unit::ns, "modelled time"}, legend);
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    const auto& m = report.results[i].modelled;
    if (!m) continue;
    const double x = static_cast<double>(i);
    const double a = static_cast<double>(m->upstream_allocate),
                 d = static_cast<double>(m->upstream_deallocate);
    const std::string& name = report.results[i].strategy;
    chart.rect(x + 0.15, 0, x + 0.85, a, strategy_color(static_cast<int>(i), name));
    chart.rect(x + 0.15, a, x + 0.85, a + d, strategy_color(static_cast<int>(i), name, 0.6f));
    chart.rect(x + 0.15, a + d, x + 0.85, a + d + static_cast<double>(m->hits),
               strategy_color(static_cast<int>(i), name, 0.3f));
    if (chart.hovered() && chart.x_at(chart.mouse().x) >= x && chart.x_at(chart.mouse().x) < x + 1)
      Chart::tooltip({report.results[i].strategy,
                      "total " + format_exact(static_cast<double>(m->total()), Unit::ns),
                      "upstream allocate " + format_exact(a, Unit::ns),
                      "upstream deallocate " + format_exact(d, Unit::ns),
                      "hits " + format_exact(static_cast<double>(m->hits), Unit::ns)});
  }
  empty_hint("Each bar: upstream allocate (solid), upstream deallocate (lighter), hits (faint).");
  draw_table("modelled", state.table, 140);
}

}  // namespace

void draw_latency(const Model& model, ViewState& state) {
  const ReportDoc* report = model.report();
  state.table = {};
  if (!report) {
    empty_hint(
        "No report: open one made with `alloclab replay --upstream host-malloc` (measured) or "
        "`--cost-model host` (modelled).");
    return;
  }
  bool real = false;
  for (const StrategyResult& r : report->results) real = real || !r.latency.empty();
  if (!real) {
    draw_modelled(*report, state);
    return;
  }
  ImGui::SetNextItemWidth(240);
  ImGui::Combo("measured call", &state.latency_metric, kMetrics, IM_ARRAYSIZE(kMetrics));
  const std::string metric = kMetrics[std::clamp(state.latency_metric, 0, 4)];
  Table t;
  t.columns = {{"strategy", Better::none}, {"count", Better::none},    {"p50_ns", Better::lower},
               {"p90_ns", Better::lower},  {"p99_ns", Better::lower},  {"p999_ns", Better::lower},
               {"max_ns", Better::lower},  {"total_ns", Better::lower}};
  double x_hi = 10;
  for (const StrategyResult& r : report->results) {
    const auto it = r.latency.find(metric);
    if (it == r.latency.end()) continue;
    const LatencySummary& l = it->second;
    x_hi = std::max(x_hi, static_cast<double>(l.max_ns));
    t.rows.push_back(
        {text_cell(r.strategy), count_cell(l.count), ns_cell(static_cast<double>(l.p50_ns)),
         ns_cell(static_cast<double>(l.p90_ns)), ns_cell(static_cast<double>(l.p99_ns)),
         ns_cell(static_cast<double>(l.p999_ns)), ns_cell(static_cast<double>(l.max_ns)),
         ns_cell(static_cast<double>(l.total_ns))});
  }
  state.table = t;
  const float h = std::max(150.0f, (ImGui::GetContentRegionAvail().y - 170) / 2);
  const Axis x{1, x_hi * 1.5, true, Unit::ns, metric + " (log scale)"};
  {
    std::vector<LegendEntry> legend;
    for (std::size_t i = 0; i < report->results.size(); ++i) {
      const auto it = report->results[i].latency.find(metric);
      if (it != report->results[i].latency.end() && it->second.count > 0)
        legend.push_back({report->results[i].strategy,
                          strategy_color(static_cast<int>(i), report->results[i].strategy),
                          report->results[i].strategy});
    }
    Chart cdf("latency-cdf", ImVec2(0, h), x,
              Axis{0, 1.02, false, Unit::percent, "fraction of calls <= x"}, legend);
    for (std::size_t i = 0; i < report->results.size(); ++i) {
      const auto it = report->results[i].latency.find(metric);
      if (it == report->results[i].latency.end() || it->second.count == 0) continue;
      const std::string& name = report->results[i].strategy;
      const ImU32 color = strategy_color(static_cast<int>(i), name);
      std::vector<double> xs = {1}, ys = {0};
      if (it->second.histogram.empty()) {  // older report: only the percentiles
        for (const auto& [v, q] : cdf_points(it->second)) {
          xs.push_back(v);
          ys.push_back(q);
        }
      } else {
        double cumulative = 0;
        for (const Bar& b : histogram_bars(it->second)) {
          xs.push_back(b.x0);
          ys.push_back(cumulative);
          cumulative += b.share;
          xs.push_back(b.x1);
          ys.push_back(cumulative);
        }
      }
      cdf.polyline(xs, ys, color);
      cdf.vline(static_cast<double>(it->second.p50_ns),
                strategy_color(static_cast<int>(i), name, 0.5f), "p50");
      cdf.vline(static_cast<double>(it->second.p99_ns),
                strategy_color(static_cast<int>(i), name, 0.5f), "p99");
    }
    if (cdf.hovered()) {
      // At the cursor's x, each strategy's share of calls at most that long.
      const double at = cdf.x_at(cdf.mouse().x);
      std::vector<std::string> lines = {"x = " + format_value(at, Unit::ns)};
      for (const StrategyResult& r : report->results) {
        const auto it = r.latency.find(metric);
        if (it == r.latency.end() || it->second.count == 0) continue;
        const LatencySummary& l = it->second;
        lines.push_back(r.strategy + ": " +
                        (l.histogram.empty()
                             ? "p50 " + format_exact(static_cast<double>(l.p50_ns), Unit::ns) +
                                   ", p99 " + format_exact(static_cast<double>(l.p99_ns), Unit::ns)
                             : format_value(share_below(histogram_bars(l), at), Unit::percent) +
                                   " of " + grouped(l.count) + " calls <= x"));
      }
      Chart::tooltip(lines);
    }
  }
  {
    // With the report's histogram: one bar per bucket (8 per power of two). Older reports keep
    // only percentiles, so the bars then span consecutive percentiles instead.
    double y_hi = 0;
    for (const StrategyResult& r : report->results) {
      const auto it = r.latency.find(metric);
      if (it == r.latency.end()) continue;
      for (const Bar& b : histogram_bars(it->second)) y_hi = std::max(y_hi, b.share);
    }
    const bool bucketed = y_hi > 0;
    Chart hist(
        "latency-histogram", ImVec2(0, h), x,
        Axis{0, bucketed ? std::min(1.0, y_hi * 1.1) : 1.05, false, Unit::percent,
             bucketed ? "share of calls (per bucket)" : "share of calls (between percentiles)"});
    std::vector<std::string> hovered;  // the buckets under the cursor, one per strategy
    for (std::size_t i = 0; i < report->results.size(); ++i) {
      const auto it = report->results[i].latency.find(metric);
      if (it == report->results[i].latency.end() || it->second.count == 0) continue;
      const ImU32 color = strategy_color(static_cast<int>(i), report->results[i].strategy, 0.45f);
      if (!it->second.histogram.empty()) {
        for (const Bar& b : histogram_bars(it->second)) {
          hist.rect(b.x0, 0, b.x1, b.share, color);
          const double at = hist.hovered() ? hist.x_at(hist.mouse().x) : 0;
          if (at >= b.x0 && at < b.x1)
            hovered.push_back(report->results[i].strategy + ": " + format_value(b.x0, Unit::ns) +
                              " .. " + format_value(b.x1 - 1, Unit::ns) + ", " +
                              grouped(static_cast<std::uint64_t>(
                                  std::llround(b.share * static_cast<double>(it->second.count)))) +
                              " calls (" + format_value(b.share, Unit::percent) + ")");
        }
        continue;
      }
      double prev_x = 1, prev_q = 0;
      for (const auto& [v, q] : cdf_points(it->second)) {
        if (v > prev_x) hist.rect(prev_x, 0, v, q - prev_q, color);
        prev_x = std::max(prev_x, v);
        prev_q = q;
      }
    }
    if (!hovered.empty()) Chart::tooltip(hovered);
  }
  draw_table("latency", state.table, 150);
}

}  // namespace alloclab::gui
