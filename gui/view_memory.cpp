// Memory over time: live bytes (from the trace when it is loaded here, exact per operation)
// and reserved bytes per strategy on one time axis, drawn from LOD pyramids.
#include <algorithm>
#include <cstdio>
#include <iterator>

#include "alloclab/format/units.hpp"
#include "views.hpp"

namespace alloclab::gui {
namespace {

constexpr ImU32 kSiteColor = IM_COL32(120, 220, 120, 255);

// The innermost frame of a caller chain ("main;run;alloc" -> "alloc"), for the legend.
std::string flame_site_label(const std::string& path) {
  const std::size_t semicolon = path.rfind(';');
  std::string leaf = semicolon == std::string::npos ? path : path.substr(semicolon + 1);
  if (leaf.size() > 48) leaf = leaf.substr(0, 45) + "...";
  return leaf;
}

std::string at_text(const LodPyramid& p, std::size_t i) {
  if (p.y_min(i) == p.y_max(i))
    return format_value(p.y_min(i), Unit::bytes) + " (" +
           grouped(static_cast<std::uint64_t>(p.y_min(i))) + " B)";
  return format_value(p.y_min(i), Unit::bytes) + " .. " + format_value(p.y_max(i), Unit::bytes);
}

// Shades the visible runs, alternating. Only the visible ones are visited (runs are in time
// order), and when they are denser than a few pixels each they are left out: tens of thousands
// of full-height bands per frame would cost more than every series together.
void shade_runs(Chart& chart, const TraceDoc& trace, const XRange& x, double full_hi) {
  const auto& runs = trace.resolved.runs;
  const double first = static_cast<double>(trace.first_time_ns);
  auto begin_of = [&](const RunInfo& r) { return static_cast<double>(r.begin_time_ns) - first; };
  auto end_of = [&](const RunInfo& r) {
    return r.end_op >= trace.resolved.ops.size() ? full_hi
                                                 : static_cast<double>(r.end_time_ns) - first;
  };
  const auto lo = std::partition_point(runs.begin(), runs.end(),
                                       [&](const RunInfo& r) { return end_of(r) < x.lo; });
  const auto hi =
      std::partition_point(lo, runs.end(), [&](const RunInfo& r) { return begin_of(r) <= x.hi; });
  const float width = chart.plot_max().x - chart.plot_min().x;
  if (static_cast<float>(hi - lo) * 3 > width) {
    const std::string note =
        grouped(static_cast<std::uint64_t>(hi - lo)) + " runs here: zoom in to see them";
    chart.draw_list()->AddText(
        ImVec2(chart.plot_min().x + 6, chart.plot_max().y - ImGui::GetFontSize() - 4),
        IM_COL32(170, 170, 170, 200), note.c_str());
    return;
  }
  for (auto it = lo; it != hi; ++it) {
    const auto i = static_cast<std::size_t>(it - runs.begin());
    chart.shade_x(begin_of(*it), end_of(*it),
                  i % 2 ? IM_COL32(255, 255, 255, 10) : IM_COL32(255, 255, 255, 22),
                  it->label.empty() ? nullptr : it->label.c_str());
  }
}

}  // namespace

Table memory_table(const ReportDoc& report) {
  Table t;
  t.columns = {{"strategy", Better::none},
               {"peak_live_bytes", Better::none},
               {"peak_reserved_bytes", Better::lower},
               {"final_cached_bytes", Better::lower},
               {"reserved_over_live", Better::lower},
               {"series_points", Better::none}};
  for (const StrategyResult& r : report.results) {
    const Metrics& m = r.metrics;
    const double ratio = m.peak_live_bytes ? static_cast<double>(m.peak_reserved_bytes) /
                                                 static_cast<double>(m.peak_live_bytes)
                                           : 0.0;
    t.rows.push_back({text_cell(r.strategy), bytes_cell(m.peak_live_bytes),
                      bytes_cell(m.peak_reserved_bytes), bytes_cell(m.final_cached_bytes),
                      ratio_cell(ratio, false), count_cell(r.series.size())});
  }
  return t;
}

void draw_memory(const Model& model, ViewState& state) {
  const ReportDoc* report = model.report();
  const TraceDoc* trace = report ? report->trace.get() : model.trace();
  state.table = report ? memory_table(*report) : Table{};
  const LodPyramid* live =
      trace ? &trace->live : (report && !report->live.empty() ? &report->live[0] : nullptr);
  if (!live || live->empty()) {
    empty_hint(
        "Nothing to show: open a trace (live bytes) or a report (reserved bytes per strategy).");
    return;
  }
  double full_hi = live->x_back();
  if (report)
    for (const LodPyramid& p : report->reserved) full_hi = std::max(full_hi, p.x_back());
  full_hi = std::max(full_hi, 1.0);
  const void* owner = report ? static_cast<const void*>(report) : static_cast<const void*>(trace);
  if (state.memory_of != owner) {
    state.memory_x = {};
    state.memory_of = owner;
  }
  if (state.memory_x.empty()) state.memory_x = {0, full_hi};

  double y_hi = 1, lo, hi;
  if (live->range(state.memory_x.lo, state.memory_x.hi, lo, hi)) y_hi = std::max(y_hi, hi);
  if (report)
    for (const LodPyramid& p : report->reserved)
      if (p.range(state.memory_x.lo, state.memory_x.hi, lo, hi)) y_hi = std::max(y_hi, hi);

  ImGui::Text(
      "%s%s",
      trace ? "live bytes from the trace (every operation)" : "live bytes from the report's series",
      report ? ", reserved bytes per strategy" : "");
  ImGui::SameLine();
  empty_hint("  wheel: zoom, drag: pan, double-click: reset");
  const float table_h =
      report ? std::min(34.0f + 22.0f * static_cast<float>(report->results.size()), 200.0f) : 0;
  const float chart_h = std::max(200.0f, ImGui::GetContentRegionAvail().y - table_h - 8);
  std::vector<LegendEntry> legend = {{"live", IM_COL32(235, 235, 235, 255)}};
  // The call site picked in the Flame view: its allocations' live bytes.
  const LodPyramid* site = trace && state.flame_live_of == trace && !state.flame_live.empty()
                               ? &state.flame_live
                               : nullptr;
  if (site) legend.push_back({"live, site " + flame_site_label(state.flame_filter), kSiteColor});
  if (report)
    for (std::size_t i = 0; i < report->reserved.size(); ++i)
      legend.push_back({"reserved: " + report->results[i].strategy,
                        strategy_color(static_cast<int>(i), report->results[i].strategy),
                        report->results[i].strategy});
  Chart chart("memory", ImVec2(0, chart_h),
              Axis{state.memory_x.lo, state.memory_x.hi, false, Unit::ns,
                   "time since the trace's first event"},
              Axis{0, y_hi * 1.08, false, Unit::bytes, "bytes"}, legend);
  if (trace) shade_runs(chart, *trace, state.memory_x, full_hi);
  if (report)
    for (std::size_t i = 0; i < report->reserved.size(); ++i)
      chart.lod_series(report->reserved[i],
                       strategy_color(static_cast<int>(i), report->results[i].strategy));
  chart.lod_series(*live, IM_COL32(235, 235, 235, 255));
  if (site) chart.lod_series(*site, kSiteColor);
  Chart::zoom_pan(chart, state.memory_x, 0, full_hi);
  if (chart.hovered()) {
    const double x = chart.x_at(chart.mouse().x);
    chart.vline(x, IM_COL32(255, 255, 255, 90));
    std::vector<std::string> lines = {"t = " + format_value(x, Unit::ns)};
    const std::size_t i = live->index_at(x);
    lines.push_back("live: " + at_text(*live, i));
    if (site) lines.push_back("live, site: " + at_text(*site, site->index_at(x)));
    if (report)
      for (std::size_t k = 0; k < report->reserved.size(); ++k)
        if (!report->reserved[k].empty())
          lines.push_back("reserved, " + report->results[k].strategy + ": " +
                          at_text(report->reserved[k], report->reserved[k].index_at(x)));
    if (trace) {
      // The run under the cursor: the last one that begins at or before it.
      const auto& runs = trace->resolved.runs;
      const double t = x + static_cast<double>(trace->first_time_ns);
      const auto it = std::partition_point(runs.begin(), runs.end(), [&](const RunInfo& r) {
        return static_cast<double>(r.begin_time_ns) <= t;
      });
      if (it != runs.begin() && static_cast<double>(std::prev(it)->end_time_ns) >= t)
        lines.push_back("run " + grouped(static_cast<std::uint64_t>(it - runs.begin() - 1)) + ": " +
                        std::prev(it)->label);
    }
    Chart::tooltip(lines);
  }
  if (report) draw_table("memory", state.table, table_h);
}

}  // namespace alloclab::gui
