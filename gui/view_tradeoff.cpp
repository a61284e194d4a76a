// Trade-off: each strategy (and each point of a sweep) at its peak reserved bytes against what
// it costs (upstream calls, misses, modelled or measured time), the Pareto frontier, advise's
// recommendation, and a second report drawn over the first for comparison.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_set>

#include "alloclab/format/units.hpp"
#include "ui_registry.hpp"
#include "views.hpp"

namespace alloclab::gui {
namespace {

constexpr float kRadius = 4.0f;            // a point's marker
constexpr float kHoverRadius = 12.0f;      // the mouse this close to a point opens its tooltip
constexpr std::size_t kMaxLabels = 30;     // more crowd the plot; tooltips name every point
constexpr std::size_t kDensePoints = 200;  // more points than this: drawn the cheap way

bool time_axis(TradeoffY y) {
  return y == TradeoffY::modelled_ns || y == TradeoffY::measured_ns;
}

// The current report, then the one compared with it (when one is chosen and differs).
std::vector<const ReportDoc*> shown_reports(const Model& model, ViewState& state) {
  std::vector<const ReportDoc*> reports;
  if (!model.report()) return reports;
  reports.push_back(model.report());
  const int n = static_cast<int>(model.reports.size());
  if (state.tradeoff_compare >= n) state.tradeoff_compare = -1;
  if (state.tradeoff_compare >= 0 && state.tradeoff_compare != model.current_report)
    reports.push_back(model.reports[static_cast<std::size_t>(state.tradeoff_compare)].get());
  return reports;
}

// The y metric the state asks for, or upstream calls when the reports do not have it.
TradeoffY chosen_y(const std::vector<const ReportDoc*>& reports, ViewState& state) {
  const std::vector<TradeoffY> choices = tradeoff_y_choices(reports);
  if (std::find(choices.begin(), choices.end(), state.tradeoff_y) == choices.end())
    state.tradeoff_y = TradeoffY::upstream_calls;
  return state.tradeoff_y;
}

std::vector<std::string> tooltip_lines(const TradeoffPlot& plot, std::size_t index,
                                       const std::vector<const ReportDoc*>& reports) {
  const TradeoffPoint& p = plot.points[index];
  const ReportDoc& report = *reports[p.report];
  const StrategyResult& r = report.results[p.result];
  const Metrics& m = r.metrics;
  std::vector<std::string> lines = {r.strategy};
  if (reports.size() > 1) lines.push_back("report " + report.name);
  lines.push_back("peak reserved " +
                  format_exact(static_cast<double>(m.peak_reserved_bytes), Unit::bytes));
  lines.push_back("upstream calls " + grouped(m.upstream_allocs + m.upstream_frees) + " (" +
                  grouped(m.upstream_allocs) + " allocs + " + grouped(m.upstream_frees) +
                  " frees)");
  lines.push_back("misses " + grouped(m.misses) + " of " + grouped(m.requests) +
                  " requests (hit rate " + format_value(m.hit_rate(), Unit::percent) + ")");
  if (const auto t = tradeoff_y_value(r, TradeoffY::modelled_ns))
    lines.push_back("modelled time " + format_exact(*t, Unit::ns));
  if (const auto t = tradeoff_y_value(r, TradeoffY::measured_ns))
    lines.push_back("measured allocate time " + format_exact(*t, Unit::ns) + " over " +
                    grouped(r.latency.at("strategy_allocate").count) + " calls");
  if (p.frontier) {
    lines.push_back("on the Pareto frontier");
  } else {
    // The frontier point that beats it with the fewest bytes: the cheapest way to do better.
    for (std::size_t f : plot.frontiers[p.report])
      if (plot.points[f].x <= p.x && plot.points[f].y <= p.y) {
        lines.push_back("beaten by " + plot.points[f].label);
        break;
      }
  }
  if (p.recommended) lines.push_back("recommended by advise");
  return lines;
}

// A report's marker: circles for the current report, squares for the one compared with it.
// `dense`: a hexagon, which at this size reads as a circle in a third of the triangles.
void draw_marker(ImDrawList* list, ImVec2 at, std::size_t report, ImU32 color, float radius,
                 bool dense) {
  if (report == 0)
    list->AddCircleFilled(at, radius, color, dense ? 6 : 12);
  else
    list->AddRectFilled(ImVec2(at.x - radius, at.y - radius), ImVec2(at.x + radius, at.y + radius),
                        color);
}

bool overlaps(const ItemRect& a, const ItemRect& b) {
  return a.min.x < b.max.x && b.min.x < a.max.x && a.min.y < b.max.y && b.min.y < a.max.y;
}

// Labels beside the points, the recommended and frontier ones first, each only where it touches
// no label already placed and stays inside the plot: a sweep of a thousand points names those
// that matter and leaves the rest to the tooltips.
void draw_labels(const Chart& chart, const TradeoffPlot& plot) {
  std::vector<std::size_t> order(plot.points.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&](std::size_t i) {
    return plot.points[i].recommended ? 0 : plot.points[i].frontier ? 1 : 2;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  std::vector<ItemRect> placed;
  const ImVec2 lo = chart.plot_min(), hi = chart.plot_max();
  for (std::size_t i : order) {
    if (placed.size() >= kMaxLabels) break;
    const TradeoffPoint& p = plot.points[i];
    const ImVec2 at(chart.px_x(p.x), chart.px_y(p.y));
    const ImVec2 size = ImGui::CalcTextSize(p.label.c_str());
    for (const float dx : {kRadius + 4, -kRadius - 4 - size.x}) {
      const ItemRect box{ImVec2(at.x + dx, at.y - size.y - 1),
                         ImVec2(at.x + dx + size.x, at.y - 1)};
      if (box.min.x < lo.x || box.max.x > hi.x || box.min.y < lo.y || box.max.y > hi.y) continue;
      if (std::any_of(placed.begin(), placed.end(),
                      [&](const ItemRect& other) { return overlaps(box, other); }))
        continue;
      placed.push_back(box);
      chart.draw_list()->AddText(
          box.min,
          p.frontier || p.recommended ? IM_COL32(235, 235, 235, 255) : IM_COL32(160, 160, 160, 255),
          p.label.c_str());
      break;
    }
  }
}

}  // namespace

Table tradeoff_table(const TradeoffPlot& plot, const std::vector<const ReportDoc*>& reports) {
  Table t;
  const std::string y = tradeoff_y_column(plot.y);
  t.columns = {{"strategy", Better::none},
               {"report", Better::none},
               {"peak_reserved_bytes", Better::lower},
               {y, Better::lower},
               {"pareto_frontier", Better::none},
               {"recommended", Better::none}};
  for (const TradeoffPoint& p : plot.points) {
    Cell cost = time_axis(plot.y) ? ns_cell(p.y) : count_cell(static_cast<std::uint64_t>(p.y));
    t.rows.push_back({text_cell(p.label), text_cell(reports[p.report]->name),
                      bytes_cell(static_cast<std::uint64_t>(p.x)), cost,
                      text_cell(p.frontier ? "yes" : "no"),
                      text_cell(p.recommended ? "yes" : "no")});
  }
  return t;
}

namespace {

void draw_chart(const TradeoffPlot& plot, const std::vector<const ReportDoc*>& reports,
                float height) {
  std::vector<LegendEntry> legend;
  for (std::size_t k = 0; k < reports.size(); ++k)
    legend.push_back({(reports.size() > 1 ? (k == 0 ? "circles: " : "squares: ") : "") +
                          reports[k]->name + ", its Pareto frontier",
                      series_color(static_cast<int>(k))});
  const bool any_recommended = std::any_of(plot.points.begin(), plot.points.end(),
                                           [](const TradeoffPoint& p) { return p.recommended; });
  if (any_recommended) legend.push_back({"ringed: recommended by advise", IM_COL32_WHITE});
  std::string y_label = tradeoff_y_label(plot.y);
  if (plot.y_range.log)
    y_label += plot.zero_on_log > 0 ? " (log scale; 0 on the lower edge)" : " (log scale)";
  y_label += ", lower left is better";
  const Axis x_axis{plot.x_range.lo, plot.x_range.hi, plot.x_range.log, Unit::bytes,
                    plot.x_range.log ? "peak reserved bytes (log scale)" : "peak reserved bytes"};
  const Axis y_axis{plot.y_range.lo, plot.y_range.hi, plot.y_range.log,
                    time_axis(plot.y) ? Unit::ns : Unit::count, y_label};
  Chart chart("tradeoff", ImVec2(0, height), x_axis, y_axis, legend);
  ImDrawList* list = chart.draw_list();
  if (plot.points.empty()) return;

  for (std::size_t k = 0; k < plot.frontiers.size(); ++k) {
    std::vector<double> xs, ys;
    for (std::size_t i : plot.frontiers[k]) {
      xs.push_back(plot.points[i].x);
      ys.push_back(plot.points[i].y);
    }
    std::vector<ImVec2> line;
    for (std::size_t i = 0; i < xs.size(); ++i)
      line.emplace_back(chart.px_x(xs[i]), chart.px_y(ys[i]));
    if (line.size() > 1)
      list->AddPolyline(line.data(), static_cast<int>(line.size()),
                        series_color(static_cast<int>(k), 0.8f), 0, 2.0f);
  }
  // Off the frontier faint, on it opaque and larger: the eye goes to the choices worth making.
  int hovered = -1;
  float hovered_d = kHoverRadius * kHoverRadius + 1;
  const ImVec2 mouse = chart.mouse();
  const std::string point_prefix = "chart:tradeoff/point:";
  // A dense sweep: markers lose their anti-aliased rims (thin triangles that software
  // rasterizers shade at four times their pixels), and a dominated marker drawn where one of the
  // same look already is (to a pixel) is drawn once. Hover and labels still see every point.
  const bool dense = plot.points.size() > kDensePoints;
  const ImDrawListFlags flags = list->Flags;
  if (dense) list->Flags &= ~ImDrawListFlags_AntiAliasedFill;
  std::unordered_set<std::uint64_t> drawn;
  for (std::size_t i = 0; i < plot.points.size(); ++i) {
    const TradeoffPoint& p = plot.points[i];
    const ImVec2 at(chart.px_x(p.x), chart.px_y(p.y));
    const int color = static_cast<int>(p.report);
    const std::uint64_t cell = (static_cast<std::uint64_t>(std::lround(at.x) & 0xFFFFF) << 21) |
                               (static_cast<std::uint64_t>(std::lround(at.y) & 0xFFFFF) << 1) |
                               p.report;
    if (p.frontier || !dense || drawn.insert(cell).second)
      draw_marker(list, at, p.report, series_color(color, p.frontier ? 1.0f : 0.5f),
                  p.frontier ? kRadius + 1 : kRadius, dense);
    if (p.recommended) list->AddCircle(at, kRadius + 5, IM_COL32_WHITE, 16, 2.0f);
    // The strategy picked in another view (or its legend), wherever it sits here.
    if (!highlighted_strategy().empty() && p.label == highlighted_strategy())
      list->AddCircle(at, kRadius + 9, series_color(6), 20, 2.5f);
    track_rect(point_prefix + (p.report == 0 ? "" : "b:") + p.label,
               ImVec2(at.x - kRadius, at.y - kRadius), ImVec2(at.x + kRadius, at.y + kRadius));
    if (chart.hovered()) {
      const float dx = at.x - mouse.x, dy = at.y - mouse.y;
      // Ties go to the first point: points at one place show the first's tooltip.
      if (dx * dx + dy * dy < hovered_d) {
        hovered_d = dx * dx + dy * dy;
        hovered = static_cast<int>(i);
      }
    }
  }
  list->Flags = flags;
  draw_labels(chart, plot);
  if (hovered >= 0) {
    const TradeoffPoint& p = plot.points[static_cast<std::size_t>(hovered)];
    // A click on a point picks its strategy in every view.
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) toggle_highlight(p.label);
    list->AddCircle(ImVec2(chart.px_x(p.x), chart.px_y(p.y)), kRadius + 3, IM_COL32_WHITE, 16,
                    1.5f);
    Chart::tooltip(tooltip_lines(plot, static_cast<std::size_t>(hovered), reports));
  }
}

}  // namespace

void tradeoff_chart(const Model& model, ViewState& state, float height) {
  const std::vector<const ReportDoc*> reports = shown_reports(model, state);
  if (reports.empty()) return;
  draw_chart(tradeoff_plot(reports, chosen_y(reports, state), state.tradeoff_y_log), reports,
             height);
}

void draw_tradeoff(const Model& model, ViewState& state) {
  state.table = {};
  const std::vector<const ReportDoc*> reports = shown_reports(model, state);
  if (reports.empty() || reports.front()->results.empty()) {
    empty_hint(
        "No report: open or replay one to see each strategy's memory against its upstream calls "
        "(a sweep report shows every point).");
    return;
  }
  // The y switch: only the metrics every shown result has.
  const TradeoffY y = chosen_y(reports, state);
  ImGui::TextUnformatted("y:");
  for (TradeoffY choice : tradeoff_y_choices(reports)) {
    ImGui::SameLine();
    if (ImGui::RadioButton(tradeoff_y_label(choice), y == choice)) state.tradeoff_y = choice;
    track_item(std::string("tradeoff:y:") + tradeoff_y_name(choice));
  }
  ImGui::SameLine();
  ImGui::Checkbox("log scale", &state.tradeoff_y_log);
  track_item("tradeoff:log");
  if (model.reports.size() > 1) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(260);
    const std::string shown =
        state.tradeoff_compare >= 0 && state.tradeoff_compare != model.current_report
            ? model.reports[static_cast<std::size_t>(state.tradeoff_compare)]->name
            : "(none)";
    const bool open = ImGui::BeginCombo("compare with", shown.c_str());
    track_item("tradeoff:compare");
    if (open) {
      if (ImGui::Selectable("(none)", state.tradeoff_compare < 0)) state.tradeoff_compare = -1;
      track_item("tradeoff:compare:none");
      for (std::size_t i = 0; i < model.reports.size(); ++i) {
        if (static_cast<int>(i) == model.current_report) continue;
        if (ImGui::Selectable((model.reports[i]->name + "##" + std::to_string(i)).c_str(),
                              state.tradeoff_compare == static_cast<int>(i)))
          state.tradeoff_compare = static_cast<int>(i);
        track_item("tradeoff:compare:" + std::to_string(i));
      }
      ImGui::EndCombo();
    }
  }
  // After the controls: they may have changed what is shown.
  const std::vector<const ReportDoc*> now = shown_reports(model, state);
  const TradeoffPlot plot = tradeoff_plot(now, chosen_y(now, state), state.tradeoff_y_log);
  const float table_h = 150;
  draw_chart(plot, now, std::max(220.0f, ImGui::GetContentRegionAvail().y - table_h - 8));
  state.table = tradeoff_table(plot, now);
  draw_table("tradeoff", state.table, table_h);
}

}  // namespace alloclab::gui
