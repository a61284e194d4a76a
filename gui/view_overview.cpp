// Overview (the strategies table) and Hit rate (bars of hit rate and upstream calls).
#include <algorithm>

#include "alloclab/format/units.hpp"
#include "views.hpp"

namespace alloclab::gui {

Table overview_table(const ReportDoc& report) {
  Table t;
  t.columns = {{"strategy", Better::none},
               {"requests", Better::none},
               {"hits", Better::higher},
               {"misses", Better::lower},
               {"hit_rate", Better::higher},
               {"upstream_allocs", Better::lower},
               {"upstream_frees", Better::lower},
               {"evictions", Better::lower},
               {"peak_live_bytes", Better::none},
               {"peak_reserved_bytes", Better::lower},
               {"final_cached_bytes", Better::lower},
               {"slack_bytes", Better::lower},
               {"failed_requests", Better::lower}};
  const bool modelled = std::any_of(report.results.begin(), report.results.end(),
                                    [](const StrategyResult& r) { return r.modelled.has_value(); });
  const bool real =
      std::any_of(report.results.begin(), report.results.end(),
                  [](const StrategyResult& r) { return r.latency.count("strategy_allocate") > 0; });
  if (modelled) t.columns.push_back({"modelled_ns", Better::lower});
  if (real) {
    t.columns.push_back({"alloc_p50_ns", Better::lower});
    t.columns.push_back({"alloc_p99_ns", Better::lower});
  }
  for (const StrategyResult& r : report.results) {
    const Metrics& m = r.metrics;
    std::vector<Cell> row = {text_cell(r.strategy),
                             count_cell(m.requests),
                             count_cell(m.hits),
                             count_cell(m.misses),
                             ratio_cell(m.hit_rate(), true),
                             count_cell(m.upstream_allocs),
                             count_cell(m.upstream_frees),
                             count_cell(m.evictions),
                             bytes_cell(m.peak_live_bytes),
                             bytes_cell(m.peak_reserved_bytes),
                             bytes_cell(m.final_cached_bytes),
                             bytes_cell(m.slack_bytes),
                             count_cell(m.failed_requests)};
    if (modelled) row.push_back(ns_cell(r.modelled ? static_cast<double>(r.modelled->total()) : 0));
    if (real) {
      const auto it = r.latency.find("strategy_allocate");
      row.push_back(ns_cell(it == r.latency.end() ? 0 : static_cast<double>(it->second.p50_ns)));
      row.push_back(ns_cell(it == r.latency.end() ? 0 : static_cast<double>(it->second.p99_ns)));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

void empty_hint(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(150, 150, 150, 255));
  ImGui::TextWrapped("%s", text);
  ImGui::PopStyleColor();
}

void draw_overview(const Model& model, ViewState& state) {
  const ReportDoc* report = model.report();
  if (!report) {
    empty_hint(
        "No report yet. Open a report (File > Open, or drop a .json on the window), or open a "
        "trace and replay it against strategies in the panel on the left.");
    state.table = {};
    return;
  }
  ImGui::Text("%s  -  %s mode, %zu strategies", report->name.c_str(), report->mode.c_str(),
              report->results.size());
  if (report->json.contains("trace")) {
    const nlohmann::json& t = report->json["trace"];
    ImGui::Text(
        "trace: %s events, %s allocations, peak live %s", grouped(t.value("events", 0ull)).c_str(),
        grouped(t.value("allocations", 0ull)).c_str(),
        format_value(static_cast<double>(t.value("peak_live_bytes", 0ull)), Unit::bytes).c_str());
  }
  state.table = overview_table(*report);
  empty_hint("Click a header to sort; the best value of each column is highlighted green.");
  draw_table("strategies", state.table);
}

void draw_hit_rate(const Model& model, ViewState& state) {
  const ReportDoc* report = model.report();
  state.table = {};
  if (!report || report->results.empty()) {
    empty_hint("No report: open or replay one to see hit rates.");
    return;
  }
  Table t;
  t.columns = {{"strategy", Better::none},
               {"hit_rate", Better::higher},
               {"upstream_allocs", Better::lower},
               {"upstream_frees", Better::lower}};
  double max_calls = 1;
  for (const StrategyResult& r : report->results) {
    max_calls = std::max(max_calls,
                         static_cast<double>(r.metrics.upstream_allocs + r.metrics.upstream_frees));
    t.rows.push_back({text_cell(r.strategy), ratio_cell(r.metrics.hit_rate(), true),
                      count_cell(r.metrics.upstream_allocs), count_cell(r.metrics.upstream_frees)});
  }
  state.table = t;
  const auto n = static_cast<double>(report->results.size());
  const float h = std::max(160.0f, (ImGui::GetContentRegionAvail().y - 10) / 2);
  std::vector<std::string> names;
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < report->results.size(); ++i) {
    names.push_back(report->results[i].strategy);
    legend.push_back({report->results[i].strategy, series_color(static_cast<int>(i))});
  }
  auto bars = [&](const char* id, Axis y, auto value_of, auto label_of) {
    Chart chart(id, ImVec2(0, h), Axis{0, n, false, Unit::count, "", names}, y, legend);
    // The values over the bars, when every one fits beside its neighbours' (else the tooltips
    // have them: some bars with a value and some without would read as missing data).
    std::vector<std::string> values;
    float widest = 0;
    for (const StrategyResult& r : report->results) {
      values.push_back(label_of(value_of(r)));
      widest = std::max(widest, ImGui::CalcTextSize(values.back().c_str()).x);
    }
    const bool show_values = widest <= chart.px_x(1) - chart.px_x(0) - 4;
    int hovered = -1;
    for (std::size_t i = 0; i < report->results.size(); ++i) {
      const double x = static_cast<double>(i);
      const double v = value_of(report->results[i]);
      chart.rect(x + 0.15, y.lo, x + 0.85, v, series_color(static_cast<int>(i)));
      const float width = ImGui::CalcTextSize(values[i].c_str()).x;
      if (show_values)
        chart.draw_list()->AddText(
            ImVec2(chart.px_x(x + 0.5) - width / 2, chart.px_y(v) - ImGui::GetFontSize() - 2),
            IM_COL32(230, 230, 230, 255), values[i].c_str());
      if (chart.hovered() && chart.x_at(chart.mouse().x) >= x &&
          chart.x_at(chart.mouse().x) < x + 1)
        hovered = static_cast<int>(i);
    }
    if (hovered >= 0) {
      const StrategyResult& r = report->results[static_cast<std::size_t>(hovered)];
      Chart::tooltip({r.strategy, "hit rate " + format_value(r.metrics.hit_rate(), Unit::percent),
                      "hits " + grouped(r.metrics.hits) + " of " + grouped(r.metrics.requests),
                      "upstream allocs " + grouped(r.metrics.upstream_allocs),
                      "upstream frees " + grouped(r.metrics.upstream_frees)});
    }
  };
  bars(
      "hit-rate", Axis{0, 1.08, false, Unit::percent, "hit rate"},
      [](const StrategyResult& r) { return r.metrics.hit_rate(); },
      [](double v) { return format_value(v, Unit::percent); });
  bars(
      "upstream-calls",
      Axis{0, max_calls * 1.12, false, Unit::count, "upstream calls (allocs + frees)"},
      [](const StrategyResult& r) {
        return static_cast<double>(r.metrics.upstream_allocs + r.metrics.upstream_frees);
      },
      [](double v) { return format_value(v, Unit::count); });
}

}  // namespace alloclab::gui
