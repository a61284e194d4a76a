#include "tradeoff.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace alloclab::gui {

const char* tradeoff_y_label(TradeoffY y) {
  switch (y) {
    case TradeoffY::upstream_calls:
      return "upstream calls (allocs + frees)";
    case TradeoffY::misses:
      return "misses";
    case TradeoffY::modelled_ns:
      return "modelled time";
    case TradeoffY::measured_ns:
      return "measured allocate time";
  }
  return "";
}

const char* tradeoff_y_column(TradeoffY y) {
  switch (y) {
    case TradeoffY::upstream_calls:
      return "upstream_calls";
    case TradeoffY::misses:
      return "misses";
    case TradeoffY::modelled_ns:
      return "modelled_ns";
    case TradeoffY::measured_ns:
      return "measured_allocate_ns";
  }
  return "";
}

const char* tradeoff_y_name(TradeoffY y) {
  switch (y) {
    case TradeoffY::upstream_calls:
      return "upstream-calls";
    case TradeoffY::misses:
      return "misses";
    case TradeoffY::modelled_ns:
      return "modelled";
    case TradeoffY::measured_ns:
      return "measured";
  }
  return "";
}

std::optional<double> tradeoff_y_value(const StrategyResult& r, TradeoffY y) {
  switch (y) {
    case TradeoffY::upstream_calls:
      return static_cast<double>(r.metrics.upstream_allocs + r.metrics.upstream_frees);
    case TradeoffY::misses:
      return static_cast<double>(r.metrics.misses);
    case TradeoffY::modelled_ns:
      if (r.modelled) return static_cast<double>(r.modelled->total());
      return std::nullopt;
    case TradeoffY::measured_ns: {
      const auto it = r.latency.find("strategy_allocate");
      if (it != r.latency.end() && it->second.count > 0)
        return static_cast<double>(it->second.total_ns);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::vector<TradeoffY> tradeoff_y_choices(const std::vector<const ReportDoc*>& reports) {
  std::vector<TradeoffY> choices;
  for (TradeoffY y : all_tradeoff_ys) {
    bool any = false, all = true;
    for (const ReportDoc* report : reports) {
      if (!report) continue;
      for (const StrategyResult& r : report->results) {
        any = true;
        all = all && tradeoff_y_value(r, y).has_value();
      }
    }
    if (y == TradeoffY::upstream_calls || y == TradeoffY::misses || (any && all))
      choices.push_back(y);
  }
  return choices;
}

std::vector<std::string> recommended_strategies(const nlohmann::json& report) {
  std::vector<std::string> specs;
  auto add = [&](const std::string& spec) {
    if (!spec.empty() && std::find(specs.begin(), specs.end(), spec) == specs.end())
      specs.push_back(spec);
  };
  if (report.contains("advice") && report["advice"].is_array())
    for (const nlohmann::json& family : report["advice"]) {
      if (!family.is_object() || !family.contains("recommended")) continue;
      const nlohmann::json& rec = family["recommended"];
      if (rec.is_object() && rec.contains("strategy") && rec["strategy"].is_string())
        add(rec["strategy"].get<std::string>());
    }
  if (report.contains("pytorch_advice") && report["pytorch_advice"].is_object()) {
    const nlohmann::json& advice = report["pytorch_advice"];
    const nlohmann::json* configurations =
        advice.contains("configurations") && advice["configurations"].is_array()
            ? &advice["configurations"]
            : nullptr;
    for (const char* pick : {"least_reserved", "fewest_upstream_allocs"}) {
      if (!configurations || !advice.contains(pick) || !advice[pick].is_object()) continue;
      const nlohmann::json& chosen = advice[pick];
      if (!chosen.contains("index") || !chosen["index"].is_number_integer()) continue;
      const auto index = chosen["index"].get<long long>();
      if (index < 0 || static_cast<std::size_t>(index) >= configurations->size()) continue;
      const nlohmann::json& c = (*configurations)[static_cast<std::size_t>(index)];
      if (c.is_object() && c.contains("strategy") && c["strategy"].is_string())
        add(c["strategy"].get<std::string>());
    }
  }
  return specs;
}

std::vector<std::size_t> pareto_frontier(const std::vector<double>& xs,
                                         const std::vector<double>& ys) {
  const std::size_t n = std::min(xs.size(), ys.size());
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return xs[a] != xs[b] ? xs[a] < xs[b] : ys[a] < ys[b];
  });
  // Left to right, a point is on the frontier when it is lower than every point before it (all
  // of which are at most as far right), or exactly where the last frontier point is.
  std::vector<std::size_t> frontier;
  double lowest = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    if (ys[i] < lowest) {
      frontier.push_back(i);
      lowest = ys[i];
    } else if (!frontier.empty() && xs[i] == xs[frontier.back()] && ys[i] == ys[frontier.back()]) {
      frontier.push_back(i);
    }
  }
  return frontier;
}

TradeoffRange log_range(const std::vector<double>& values) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (double v : values)
    if (v > 0) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (!(hi > 0)) return {0.5, 10, true};
  return {lo / 2, hi * 2, true};
}

TradeoffPlot tradeoff_plot(const std::vector<const ReportDoc*>& reports, TradeoffY y, bool y_log) {
  TradeoffPlot plot;
  plot.y = y;
  for (std::size_t k = 0; k < reports.size(); ++k) {
    const ReportDoc* report = reports[k];
    plot.frontiers.emplace_back();
    if (!report) continue;
    const std::vector<std::string> recommended = recommended_strategies(report->json);
    std::vector<double> xs, ys;
    std::vector<std::size_t> at;  // index into plot.points
    for (std::size_t i = 0; i < report->results.size(); ++i) {
      const StrategyResult& r = report->results[i];
      const std::optional<double> value = tradeoff_y_value(r, y);
      if (!value) continue;
      TradeoffPoint p;
      p.report = k;
      p.result = i;
      p.label = r.strategy;
      p.x = static_cast<double>(r.metrics.peak_reserved_bytes);
      p.y = *value;
      p.recommended =
          std::find(recommended.begin(), recommended.end(), r.strategy) != recommended.end();
      xs.push_back(p.x);
      ys.push_back(p.y);
      at.push_back(plot.points.size());
      plot.points.push_back(std::move(p));
    }
    for (std::size_t i : pareto_frontier(xs, ys)) {
      plot.points[at[i]].frontier = true;
      plot.frontiers.back().push_back(at[i]);
    }
  }
  std::vector<double> xs, ys;
  for (const TradeoffPoint& p : plot.points) {
    xs.push_back(p.x);
    ys.push_back(p.y);
  }
  const double x_min = xs.empty() ? 0 : *std::min_element(xs.begin(), xs.end());
  const double x_max = xs.empty() ? 0 : *std::max_element(xs.begin(), xs.end());
  if (x_min > 0 && x_max / x_min >= 16) {
    plot.x_range = {x_min / 1.4, x_max * 1.4, true};
  } else {
    // Around the points rather than from 0: strategies often differ by a tenth of their peak.
    const double pad = std::max((x_max - x_min) * 0.08, x_max * 0.02);
    plot.x_range = {std::max(0.0, x_min - pad), x_max > 0 ? x_max + pad : 1, false};
  }
  if (y_log) {
    plot.y_range = log_range(ys);
    plot.zero_on_log = static_cast<std::size_t>(
        std::count_if(ys.begin(), ys.end(), [](double v) { return !(v > 0); }));
  } else {
    const double y_max = ys.empty() ? 0 : *std::max_element(ys.begin(), ys.end());
    plot.y_range = {0, y_max > 0 ? y_max * 1.1 : 1, false};
  }
  return plot;
}

bool prefer_miss_rate(const std::vector<double>& hit_rates) {
  return !hit_rates.empty() &&
         std::all_of(hit_rates.begin(), hit_rates.end(), [](double h) { return h > 0.9; });
}

}  // namespace alloclab::gui
