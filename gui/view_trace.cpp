// Trace (size and lifetime histograms, top sizes, runs) and Sweep (hit rate and peak reserved
// against the swept parameter).
#include <algorithm>
#include <cmath>
#include <map>

#include "alloclab/format/units.hpp"
#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/pytorch.hpp"
#include "ui_registry.hpp"
#include "views.hpp"

namespace alloclab::gui {
namespace {

std::uint64_t u64(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<std::uint64_t>() : 0;
}

// A histogram of power-of-two buckets ({from, to, count} objects) on a log x axis.
void histogram_chart(const char* id, const nlohmann::json& buckets, Unit unit, const char* x_label,
                     float h) {
  double lo = 0, hi = 0, top = 1;
  for (const auto& b : buckets) {
    const double from = std::max(1.0, static_cast<double>(u64(b, "from")));
    const double to = static_cast<double>(u64(b, "to")) + 1;
    lo = lo == 0 ? from : std::min(lo, from);
    hi = std::max(hi, to);
    top = std::max(top, static_cast<double>(u64(b, "count")));
  }
  if (hi <= lo) {
    empty_hint("(no data)");
    return;
  }
  Chart chart(id, ImVec2(0, h), Axis{lo, hi, true, unit, x_label},
              Axis{0, top * 1.1, false, Unit::count, "allocations"});
  const nlohmann::json* hovered = nullptr;
  for (const auto& b : buckets) {
    const double from = std::max(1.0, static_cast<double>(u64(b, "from")));
    const double to = static_cast<double>(u64(b, "to")) + 1;
    chart.rect(from * 1.04, 0, to / 1.04, static_cast<double>(u64(b, "count")), series_color(4));
    if (chart.hovered()) {
      const double x = chart.x_at(chart.mouse().x);
      if (x >= from && x < to) hovered = &b;
    }
  }
  if (hovered)
    Chart::tooltip({format_value(static_cast<double>(u64(*hovered, "from")), unit) + " .. " +
                        format_value(static_cast<double>(u64(*hovered, "to")), unit),
                    grouped(u64(*hovered, "count")) + " allocations"});
}

}  // namespace

Table runs_table(const nlohmann::json& s) {
  Table t;
  t.columns = {{"run", Better::none},
               {"label", Better::none},
               {"allocations", Better::none},
               {"frees", Better::none},
               {"bytes_requested", Better::none},
               {"peak_live_bytes", Better::none},
               {"duration_ns", Better::none},
               {"ended", Better::none}};
  if (!s.contains("runs") || !s["runs"].is_array()) return t;
  std::uint64_t index = 0;
  for (const auto& r : s["runs"]) {
    t.rows.push_back({count_cell(index++), text_cell(r.value("label", std::string())),
                      count_cell(u64(r, "allocations")), count_cell(u64(r, "frees")),
                      bytes_cell(u64(r, "bytes_requested")), bytes_cell(u64(r, "peak_live_bytes")),
                      ns_cell(static_cast<double>(u64(r, "duration_ns"))),
                      text_cell(r.value("ended", true) ? "yes" : "no")});
  }
  return t;
}

Table top_sizes_table(const nlohmann::json& s) {
  Table t;
  t.columns = {{"size", Better::none}, {"count", Better::none}, {"bytes", Better::none}};
  if (!s.contains("top_sizes_by_count")) return t;
  for (const auto& r : s["top_sizes_by_count"])
    t.rows.push_back(
        {bytes_cell(u64(r, "size")), count_cell(u64(r, "count")), bytes_cell(u64(r, "bytes"))});
  return t;
}

void draw_trace(const Model& model, ViewState& state) {
  const nlohmann::json* s = model.trace_summary();
  state.table = {};
  if (!s) {
    empty_hint("No trace: open a trace (or a report, which carries its trace's summary).");
    return;
  }
  const std::size_t runs = s->contains("runs") ? (*s)["runs"].size() : 0;
  ImGui::Text("%s: %s events, %s allocations, %s requested, peak live %s, %s",
              s->value("source", std::string("trace")).c_str(), grouped(u64(*s, "events")).c_str(),
              grouped(u64(*s, "allocations")).c_str(),
              format_value(static_cast<double>(u64(*s, "bytes_requested")), Unit::bytes).c_str(),
              format_value(static_cast<double>(u64(*s, "peak_live_bytes")), Unit::bytes).c_str(),
              counted(runs, "run").c_str());
  const float avail = ImGui::GetContentRegionAvail().y;
  const float h = std::max(150.0f, avail * 0.45f);
  const float w = ImGui::GetContentRegionAvail().x / 2 - 6;
  ImGui::BeginGroup();
  ImGui::TextUnformatted("allocation sizes");
  ImGui::BeginChild("sizes", ImVec2(w, h));
  if (s->contains("size_histogram"))
    histogram_chart("sizes", (*s)["size_histogram"], Unit::bytes, "size", 0);
  ImGui::EndChild();
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::TextUnformatted("lifetimes (freed allocations)");
  ImGui::BeginChild("lifetimes", ImVec2(w, h));
  if (s->contains("lifetime_histogram_ns"))
    histogram_chart("lifetimes", (*s)["lifetime_histogram_ns"], Unit::ns, "lifetime", 0);
  ImGui::EndChild();
  ImGui::EndGroup();
  const Table top = top_sizes_table(*s);
  state.table = runs_table(*s);
  ImGui::BeginGroup();
  ImGui::TextUnformatted("top sizes by count");
  ImGui::BeginChild("top", ImVec2(w * 0.6f, 0));
  draw_table("top-sizes", top);
  ImGui::EndChild();
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::TextUnformatted("runs (CSV export: this table)");
  draw_table("runs", state.table);
  ImGui::EndGroup();
}

namespace {

// A spec's parameters as a sweep varies them: a pytorch-conf spec's settings are the
// `key:value` entries of its PYTORCH_CUDA_ALLOC_CONF string, beside its own `key=value`
// parameters.
ParsedSpec sweep_params(std::string_view spec) {
  if (!is_pytorch_conf_spec(spec)) return split_spec(spec);
  ParsedSpec parsed = split_pytorch_conf_spec(spec);
  ParsedSpec expanded;
  expanded.name = parsed.name;
  for (auto& [key, value] : parsed.params) {
    if (key != "conf") {
      expanded.params.emplace_back(std::move(key), std::move(value));
      continue;
    }
    for (auto& setting : pytorch_conf_settings(value))
      expanded.params.push_back(std::move(setting));
  }
  return expanded;
}

}  // namespace

SweepAxis sweep_axis(const ReportDoc& report) {
  SweepAxis axis;
  std::vector<ParsedSpec> specs;
  try {
    for (const StrategyResult& r : report.results) specs.push_back(sweep_params(r.strategy));
  } catch (const std::exception&) {
    return axis;
  }
  // Keys in first-seen order and the values each point gives them.
  std::vector<std::string> keys;
  for (const ParsedSpec& s : specs)
    for (const auto& [k, v] : s.params)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  auto value_of = [](const ParsedSpec& s, const std::string& key) -> std::string {
    for (const auto& [k, v] : s.params)
      if (k == key) return v;
    return {};
  };
  std::vector<std::string> varying;
  for (const std::string& k : keys)
    for (const ParsedSpec& s : specs)
      if (value_of(s, k) != value_of(specs.front(), k)) {
        varying.push_back(k);
        break;
      }
  for (const std::string& k : varying) {
    std::vector<double> values;
    bool bytes = false, ok = true;
    for (const ParsedSpec& s : specs) {
      const std::string v = value_of(s, k);
      try {
        std::size_t used = 0;
        const double plain = v.empty() ? NAN : std::stod(v, &used);
        if (!v.empty() && used == v.size()) {
          values.push_back(plain);
        } else {
          values.push_back(static_cast<double>(parse_size(v)));
          bytes = true;
        }
      } catch (const std::exception&) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    axis.key = k;
    axis.bytes = bytes;
    axis.values = values;
    for (const ParsedSpec& s : specs) {
      std::string name = s.name;
      for (const std::string& other : varying)
        if (other != k) {
          const std::string v = value_of(s, other);
          name += "," + other + "=" + (v.empty() ? std::string("(default)") : v);
        }
      axis.series.push_back(name);
    }
    break;
  }
  return axis;
}

Table sweep_table(const ReportDoc& report) {
  Table t;
  t.columns = {{"point", Better::none},
               {"strategy", Better::none},
               {"hit_rate", Better::higher},
               {"peak_reserved_bytes", Better::lower},
               {"upstream_allocs", Better::lower}};
  const nlohmann::json* indices =
      report.is_sweep() && report.json["sweep"].contains("point_indices")
          ? &report.json["sweep"]["point_indices"]
          : nullptr;
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    const StrategyResult& r = report.results[i];
    const std::uint64_t point =
        indices && i < indices->size() ? (*indices)[i].get<std::uint64_t>() : i;
    t.rows.push_back(
        {count_cell(point), text_cell(r.strategy), ratio_cell(r.metrics.hit_rate(), true),
         bytes_cell(r.metrics.peak_reserved_bytes), count_cell(r.metrics.upstream_allocs)});
  }
  return t;
}

void draw_sweep(const Model& model, ViewState& state) {
  const ReportDoc* report = model.report();
  state.table = {};
  if (!report || !report->is_sweep()) {
    empty_hint(
        "The current report holds no sweep. Make one with `alloclab sweep TRACE -s "
        "'fifo-shrink:max={1MiB..256MiB:x2}' --json sweep.json` and open it.");
    return;
  }
  state.table = sweep_table(*report);
  const SweepAxis axis = sweep_axis(*report);
  if (axis.key.empty()) {
    empty_hint("No numeric parameter varies between the points: see the table.");
    draw_table("sweep", state.table);
    return;
  }
  std::map<std::string, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < axis.series.size(); ++i) groups[axis.series[i]].push_back(i);
  double x_lo = *std::min_element(axis.values.begin(), axis.values.end());
  double x_hi = *std::max_element(axis.values.begin(), axis.values.end());
  const bool log = x_lo > 0 && x_hi / x_lo >= 16;
  if (log) {
    x_lo /= 1.3;
    x_hi *= 1.3;
  } else {
    const double pad = std::max((x_hi - x_lo) * 0.05, 0.5);
    x_lo -= pad;
    x_hi += pad;
  }
  double reserved_hi = 1;
  for (const StrategyResult& r : report->results)
    reserved_hi = std::max(reserved_hi, static_cast<double>(r.metrics.peak_reserved_bytes));
  const Unit x_unit = axis.bytes ? Unit::bytes : Unit::count;
  const float h = std::max(150.0f, (ImGui::GetContentRegionAvail().y - 150) / 2);
  auto plot = [&](const char* id, Axis y, auto metric) {
    std::vector<LegendEntry> legend;
    for (const auto& group : groups)
      legend.push_back({group.first, series_color(static_cast<int>(legend.size()))});
    Chart chart(id, ImVec2(0, h), Axis{x_lo, x_hi, log, x_unit, axis.key}, y, legend);
    int color = 0;
    for (const auto& [name, points] : groups) {
      std::vector<double> xs, ys;
      for (std::size_t i : points) {
        xs.push_back(axis.values[i]);
        ys.push_back(metric(report->results[i]));
      }
      chart.polyline(xs, ys, series_color(color++));
    }
    // Each point by its spec, for scripts; the strategy picked in any view ringed here too.
    const std::string point_prefix = "chart:" + std::string(id) + "/point:";
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      const ImVec2 at(chart.px_x(axis.values[i]), chart.px_y(metric(report->results[i])));
      track_rect(point_prefix + report->results[i].strategy, ImVec2(at.x - 4, at.y - 4),
                 ImVec2(at.x + 4, at.y + 4));
      if (report->results[i].strategy == highlighted_strategy())
        chart.draw_list()->AddCircle(at, 9, series_color(6), 20, 2.5f);
    }
    if (chart.hovered()) {
      // The point nearest the cursor, in pixels.
      std::size_t best = 0;
      float best_d = 1e30f;
      for (std::size_t i = 0; i < axis.values.size(); ++i) {
        const float dx = chart.px_x(axis.values[i]) - chart.mouse().x;
        const float dy = chart.px_y(metric(report->results[i])) - chart.mouse().y;
        if (dx * dx + dy * dy < best_d) {
          best_d = dx * dx + dy * dy;
          best = i;
        }
      }
      // A click on a point picks its strategy in every view.
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left))
        toggle_highlight(report->results[best].strategy);
      const Metrics& m = report->results[best].metrics;
      Chart::tooltip({report->results[best].strategy,
                      "hit rate " + format_value(m.hit_rate(), Unit::percent) + " (" +
                          grouped(m.hits) + " hits of " + grouped(m.requests) + " requests)",
                      "peak reserved " +
                          format_value(static_cast<double>(m.peak_reserved_bytes), Unit::bytes) +
                          " (" + grouped(m.peak_reserved_bytes) + " bytes)"});
    }
  };
  // As in the Hit rate view: above 90% everywhere, the miss rate on a log axis tells the points
  // apart (the switch there picks for both).
  std::vector<double> hit_rates, miss_rates;
  for (const StrategyResult& r : report->results) {
    hit_rates.push_back(r.metrics.hit_rate());
    miss_rates.push_back(1 - r.metrics.hit_rate());
  }
  if (state.miss_rate < 0 ? prefer_miss_rate(hit_rates) : state.miss_rate == 1) {
    plot("sweep-hit-rate", miss_rate_axis(miss_rates),
         [](const StrategyResult& r) { return 1 - r.metrics.hit_rate(); });
  } else {
    plot("sweep-hit-rate", Axis{0, 1.05, false, Unit::percent, "hit rate"},
         [](const StrategyResult& r) { return r.metrics.hit_rate(); });
  }
  plot("sweep-reserved", Axis{0, reserved_hi * 1.1, false, Unit::bytes, "peak reserved"},
       [](const StrategyResult& r) { return static_cast<double>(r.metrics.peak_reserved_bytes); });
  draw_table("sweep", state.table, 140);
}

}  // namespace alloclab::gui
