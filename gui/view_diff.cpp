// Diff: two reports side by side (or two traces under the same strategies: replay each, then
// compare the two reports), matched by strategy spec, with deltas B - A.
#include <algorithm>

#include "views.hpp"

namespace alloclab::gui {

Table diff_table(const ReportDoc& a, const ReportDoc& b) {
  Table t;
  t.columns = {{"strategy", Better::none},
               {"hit_rate_a", Better::none},
               {"hit_rate_b", Better::none},
               {"hit_rate_delta", Better::higher},
               {"upstream_allocs_a", Better::none},
               {"upstream_allocs_b", Better::none},
               {"upstream_allocs_delta", Better::lower},
               {"peak_reserved_bytes_a", Better::none},
               {"peak_reserved_bytes_b", Better::none},
               {"peak_reserved_bytes_delta", Better::lower}};
  for (const StrategyResult& ra : a.results) {
    const auto it = std::find_if(b.results.begin(), b.results.end(), [&](const StrategyResult& rb) {
      return rb.strategy == ra.strategy;
    });
    if (it == b.results.end()) continue;
    const Metrics& x = ra.metrics;
    const Metrics& y = it->metrics;
    auto diff = [](std::uint64_t p, std::uint64_t q) {
      return static_cast<double>(q) - static_cast<double>(p);
    };
    t.rows.push_back({text_cell(ra.strategy), ratio_cell(x.hit_rate(), true),
                      ratio_cell(y.hit_rate(), true),
                      delta_cell(y.hit_rate() - x.hit_rate(), false, true),
                      count_cell(x.upstream_allocs), count_cell(y.upstream_allocs),
                      delta_cell(diff(x.upstream_allocs, y.upstream_allocs), false, false),
                      bytes_cell(x.peak_reserved_bytes), bytes_cell(y.peak_reserved_bytes),
                      delta_cell(diff(x.peak_reserved_bytes, y.peak_reserved_bytes), true, false)});
  }
  return t;
}

void draw_diff(Model& model, ViewState& state) {
  state.table = {};
  if (model.reports.size() < 2) {
    empty_hint(
        "Diff needs two reports: open two (e.g. the same strategies on two traces), or replay two "
        "traces here with the same strategies.");
    return;
  }
  auto pick = [&](const char* label, int& index) {
    index = std::clamp(index, 0, static_cast<int>(model.reports.size()) - 1);
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x / 2 - 40);
    if (ImGui::BeginCombo(label, model.reports[static_cast<std::size_t>(index)]->name.c_str())) {
      for (std::size_t i = 0; i < model.reports.size(); ++i)
        if (ImGui::Selectable((model.reports[i]->name + "##" + std::to_string(i)).c_str(),
                              static_cast<int>(i) == index))
          index = static_cast<int>(i);
      ImGui::EndCombo();
    }
  };
  if (model.diff_b < 0) model.diff_b = model.diff_a == 0 ? 1 : 0;
  pick("A", model.diff_a);
  ImGui::SameLine();
  pick("B", model.diff_b);
  const ReportDoc& a = *model.reports[static_cast<std::size_t>(model.diff_a)];
  const ReportDoc& b = *model.reports[static_cast<std::size_t>(model.diff_b)];
  state.table = diff_table(a, b);
  if (state.table.empty()) {
    empty_hint("The two reports have no strategy spec in common.");
    return;
  }
  const std::size_t n = state.table.rows.size();
  double top = 1;
  std::vector<std::string> names;
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& row = state.table.rows[i];
    top = std::max({top, row[7].sort, row[8].sort});
    names.push_back(row[0].csv);
    legend.push_back({row[0].csv, strategy_color(static_cast<int>(i), row[0].csv), row[0].csv});
  }
  Chart chart("diff-reserved", ImVec2(0, std::max(160.0f, ImGui::GetContentRegionAvail().y - 180)),
              Axis{0, static_cast<double>(n), false, Unit::count, "", names},
              Axis{0, top * 1.1, false, Unit::bytes, "peak reserved: A (solid) vs B (light)"},
              legend);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    const std::string& strategy = state.table.rows[i][0].csv;
    chart.rect(x + 0.1, 0, x + 0.48, state.table.rows[i][7].sort,
               strategy_color(static_cast<int>(i), strategy));
    chart.rect(x + 0.52, 0, x + 0.9, state.table.rows[i][8].sort,
               strategy_color(static_cast<int>(i), strategy, 0.45f));
    if (chart.hovered() && chart.x_at(chart.mouse().x) >= x &&
        chart.x_at(chart.mouse().x) < x + 1) {
      // A click on a strategy's bars (not on a legend entry above them) picks it in every view,
      // as its legend entry does.
      const double mouse_x = chart.x_at(chart.mouse().x) - x;
      const double bar_top = std::max(state.table.rows[i][7].sort, state.table.rows[i][8].sort);
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && mouse_x >= 0.1 && mouse_x <= 0.9 &&
          chart.y_at(chart.mouse().y) <= bar_top)
        toggle_highlight(strategy);
      const auto& row = state.table.rows[i];
      // csv holds the exact bytes; shown the readable form.
      Chart::tooltip({row[0].csv, "A: " + row[7].shown + " (" + row[7].csv + " bytes)",
                      "B: " + row[8].shown + " (" + row[8].csv + " bytes)",
                      "B - A: " + row[9].shown + " (" + row[9].csv + " bytes)",
                      "hit rate B - A: " + row[3].shown});
    }
  }
  draw_table("diff", state.table, 170);
}

}  // namespace alloclab::gui
