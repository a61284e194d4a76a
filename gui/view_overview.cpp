// Overview (the strategies table and the trade-off chart) and Hit rate (bars of hit rate and
// upstream calls).
#include <algorithm>
#include <cstdio>

#include "alloclab/format/units.hpp"
#include "alloclab/replay/first_failure.hpp"
#include "alloclab/replay/report_table.hpp"
#include "ui_registry.hpp"
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

std::string first_failure_line(const StrategyResult& r) {
  const FirstFailure& f = *r.first_failure;
  std::string where = r.strategy + " fails first at ";
  where += f.event_index ? "event " + grouped(*f.event_index) : "operation " + grouped(f.op_index);
  return where + ", +" + human_duration(f.since_start_ns) + ", a request of " +
         human_bytes(f.requested_bytes) + ": " + out_of_memory_message(f);
}

std::string fidelity_summary(const StrategyResult& r) {
  const Fidelity& f = *r.fidelity;
  std::string text =
      r.strategy + ": segment allocs reproduced " + grouped(f.matched_allocs) + " of " +
      grouped(f.recorded_allocs) + " (model " + human_bytes(f.model_alloc_bytes) + ", recorded " +
      human_bytes(f.recorded_alloc_bytes) + "), frees " + grouped(f.matched_frees) + " of " +
      grouped(f.recorded_frees) + " (model " + human_bytes(f.model_free_bytes) + ", recorded " +
      human_bytes(f.recorded_free_bytes) + "); ";
  if (f.all_matched()) return text + "every recorded call reproduced";
  const FidelityDivergence& d = *f.first_divergence;
  return text + "first divergence at " +
         (d.event ? "event " + grouped(*d.event) : "operation " + grouped(d.op)) + ": " + d.what;
}

namespace {

// The last item's rectangle as far as it is on screen: a line longer than the view is clicked
// where it shows.
void track_visible(const std::string& name) {
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  track_rect(name, min, ImVec2(std::max(min.x + 1, std::min(max.x, right)), max.y));
}

// Under the header: per result, its first failed request (one line, wrapped open to the device's
// state and PyTorch's whole message) and how far its segment calls follow the recorded ones.
void outcomes(const ReportDoc& report) {
  std::size_t lines = 0;
  for (const StrategyResult& r : report.results)
    lines += (r.first_failure ? 1 : 0) + (r.fidelity ? 1 : 0);
  if (lines == 0) return;
  // As tall as its lines were in the last frame (opened ones included), up to 40% of the view.
  ImGuiStorage* storage = ImGui::GetStateStorage();
  const ImGuiID height_id = ImGui::GetID("outcomes-height");
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float wanted = storage->GetFloat(height_id, line_h * static_cast<float>(lines)) +
                       ImGui::GetStyle().ScrollbarSize + 4;
  const float h = std::min(wanted, ImGui::GetContentRegionAvail().y * 0.4f);
  ImGui::BeginChild("outcomes", ImVec2(0, h), false, ImGuiWindowFlags_HorizontalScrollbar);
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    const StrategyResult& r = report.results[i];
    ImGui::PushID(static_cast<int>(i));
    if (r.first_failure) {
      const std::string line = first_failure_line(r);
      ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 150, 130, 255));
      const bool open = ImGui::TreeNode("failure", "%s", line.c_str());
      ImGui::PopStyleColor();
      track_visible("overview/first-failure:" + std::to_string(i));
      track_text("overview/first-failure:" + std::to_string(i), line);
      if (open) {
        ImGui::PushTextWrapPos(0);
        const std::string details = first_failure_text(r);
        ImGui::TextUnformatted(details.c_str());
        track_text("overview/first-failure:" + std::to_string(i) + "/details", details);
        if (r.stopped_at_first_failure)
          ImGui::TextDisabled("the replay stopped there, as the program would have");
        ImGui::PopTextWrapPos();
        ImGui::TreePop();
      }
    }
    if (r.fidelity) {
      const std::string line = fidelity_summary(r);
      const bool open = ImGui::TreeNode("fidelity", "%s", line.c_str());
      track_visible("overview/fidelity:" + std::to_string(i));
      track_text("overview/fidelity:" + std::to_string(i), line);
      if (open) {
        ImGui::PushTextWrapPos(0);
        ImGui::TextUnformatted(fidelity_line(*r.fidelity).c_str());
        ImGui::PopTextWrapPos();
        ImGui::TreePop();
      }
    }
    ImGui::PopID();
  }
  const float content_h = ImGui::GetCursorPosY();
  ImGui::EndChild();
  storage->SetFloat(height_id, content_h);
}

}  // namespace

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
  // A live run's report (`alloclab run`): what the program itself cost under the strategy.
  if (report->mode == "live" && report->json.contains("program")) {
    const std::string line = program_line(report->json["program"]);
    ImGui::TextUnformatted(line.c_str());
    track_text("overview/program", line);
  }
  if (report->json.contains("trace")) {
    const nlohmann::json& t = report->json["trace"];
    ImGui::Text(
        "trace: %s events, %s allocations, peak live %s", grouped(t.value("events", 0ull)).c_str(),
        grouped(t.value("allocations", 0ull)).c_str(),
        format_value(static_cast<double>(t.value("peak_live_bytes", 0ull)), Unit::bytes).c_str());
  }
  outcomes(*report);
  state.table = overview_table(*report);
  empty_hint("Click a header to sort; the best value of each column is highlighted green.");
  // The table as tall as its rows, up to half the view; the trade-off chart takes the rest
  // (the Trade-off tab has its switches).
  const float avail = ImGui::GetContentRegionAvail().y;
  const float rows_h = ImGui::GetFrameHeight() * static_cast<float>(state.table.rows.size() + 1) +
                       ImGui::GetStyle().ScrollbarSize + 8;
  const float table_h = std::min(rows_h, avail / 2);
  if (avail - table_h < 200) {
    draw_table("strategies", state.table);
    return;
  }
  draw_table("strategies", state.table, table_h);
  tradeoff_chart(model, state, 0);
}

Axis miss_rate_axis(const std::vector<double>& miss_rates) {
  const TradeoffRange range = log_range(miss_rates);
  const bool zero =
      std::any_of(miss_rates.begin(), miss_rates.end(), [](double m) { return !(m > 0); });
  return Axis{range.lo, range.hi, true, Unit::percent,
              zero ? "miss rate (1 - hit rate, log scale; 0 on the lower edge), lower is better"
                   : "miss rate (1 - hit rate, log scale), lower is better"};
}

namespace {

// A rate as a percentage with three significant digits: 0.0123% and 99.9% alike.
std::string rate_text(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g%%", rate * 100);
  return text;
}

}  // namespace

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
               {"miss_rate", Better::lower},
               {"upstream_allocs", Better::lower},
               {"upstream_frees", Better::lower}};
  double max_calls = 1;
  std::vector<double> hit_rates, miss_rates;
  for (const StrategyResult& r : report->results) {
    max_calls = std::max(max_calls,
                         static_cast<double>(r.metrics.upstream_allocs + r.metrics.upstream_frees));
    hit_rates.push_back(r.metrics.hit_rate());
    miss_rates.push_back(1 - r.metrics.hit_rate());
    t.rows.push_back({text_cell(r.strategy), ratio_cell(r.metrics.hit_rate(), true),
                      ratio_cell(1 - r.metrics.hit_rate(), true),
                      count_cell(r.metrics.upstream_allocs), count_cell(r.metrics.upstream_frees)});
  }
  state.table = t;
  // Near 100% every hit-rate bar looks full; the miss rate on a log axis shows that 99.9% and
  // 99.99% differ tenfold in misses.
  const bool miss = state.miss_rate < 0 ? prefer_miss_rate(hit_rates) : state.miss_rate == 1;
  ImGui::TextUnformatted("first chart:");
  ImGui::SameLine();
  if (ImGui::RadioButton("hit rate", !miss)) state.miss_rate = 0;
  track_item("hit-rate:scale:hit");
  ImGui::SameLine();
  if (ImGui::RadioButton("miss rate (log scale)", miss)) state.miss_rate = 1;
  track_item("hit-rate:scale:miss");
  const auto n = static_cast<double>(report->results.size());
  const float h = std::max(160.0f, (ImGui::GetContentRegionAvail().y - 10) / 2);
  std::vector<std::string> names;
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < report->results.size(); ++i) {
    names.push_back(report->results[i].strategy);
    legend.push_back({report->results[i].strategy,
                      strategy_color(static_cast<int>(i), report->results[i].strategy),
                      report->results[i].strategy});
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
    const double base = chart.y_axis().lo;
    int hovered = -1;
    for (std::size_t i = 0; i < report->results.size(); ++i) {
      const double x = static_cast<double>(i);
      const double v = value_of(report->results[i]);
      chart.rect(x + 0.15, base, x + 0.85, v,
                 strategy_color(static_cast<int>(i), report->results[i].strategy));
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
      const Metrics& m = r.metrics;
      Chart::tooltip({r.strategy, "hit rate " + format_value(m.hit_rate(), Unit::percent),
                      "miss rate " + rate_text(1 - m.hit_rate()),
                      "hits " + grouped(m.hits) + ", misses " + grouped(m.misses) + " of " +
                          grouped(m.requests) + " requests",
                      "upstream calls " + grouped(m.upstream_allocs + m.upstream_frees) + " (" +
                          grouped(m.upstream_allocs) + " allocs + " + grouped(m.upstream_frees) +
                          " frees)"});
    }
  };
  if (miss) {
    bars(
        "hit-rate", miss_rate_axis(miss_rates),
        [](const StrategyResult& r) { return 1 - r.metrics.hit_rate(); }, rate_text);
  } else {
    bars(
        "hit-rate", Axis{0, 1.08, false, Unit::percent, "hit rate"},
        [](const StrategyResult& r) { return r.metrics.hit_rate(); },
        [](double v) { return format_value(v, Unit::percent); });
  }
  bars(
      "upstream-calls",
      Axis{0, max_calls * 1.12, false, Unit::count, "upstream calls (allocs + frees)"},
      [](const StrategyResult& r) {
        return static_cast<double>(r.metrics.upstream_allocs + r.metrics.upstream_frees);
      },
      [](double v) { return format_value(v, Unit::count); });
}

}  // namespace alloclab::gui
