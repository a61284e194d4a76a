#pragma once
// The memory/speed trade-off as data, without ImGui: every strategy of one or two reports (a
// sweep's points among them) as a point at (peak reserved bytes, a cost on y), the Pareto
// frontier of each report (lower-left is better: fewer bytes and a lower cost), the strategies
// `advise` recommends, and the axes' ranges. The Trade-off view and the Overview draw it.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/replay/metrics.hpp"
#include "model.hpp"

namespace alloclab::gui {

// What the y axis counts. Modelled time needs a simulation with a cost model, measured time a
// real or live replay (its strategy_allocate latency).
enum class TradeoffY { upstream_calls, misses, modelled_ns, measured_ns };
inline constexpr TradeoffY all_tradeoff_ys[] = {TradeoffY::upstream_calls, TradeoffY::misses,
                                                TradeoffY::modelled_ns, TradeoffY::measured_ns};

// "upstream calls (allocs + frees)", "misses", "modelled time", "measured allocate time".
const char* tradeoff_y_label(TradeoffY y);
// "upstream-calls", "misses", "modelled", "measured": the switch's widget names.
const char* tradeoff_y_name(TradeoffY y);
// "upstream_calls", "misses", "modelled_ns", "measured_allocate_ns": the CSV column.
const char* tradeoff_y_column(TradeoffY y);
// The result's value on y; nullopt when the result does not have it.
std::optional<double> tradeoff_y_value(const StrategyResult& result, TradeoffY y);
// The y metrics every result of `reports` has a value of, in all_tradeoff_ys order (upstream
// calls and misses always).
std::vector<TradeoffY> tradeoff_y_choices(const std::vector<const ReportDoc*>& reports);

// The strategy specs an advice report recommends: each family's `advice[].recommended`, and
// `pytorch_advice`'s least_reserved and fewest_upstream_allocs configurations. Empty for other
// reports.
std::vector<std::string> recommended_strategies(const nlohmann::json& report);

// Indices of the points no other point dominates (another point is at most as far right and at
// most as high, and lower or further left in one of them), ordered by x, then y. Points at the
// same place are all on the frontier, or none is.
std::vector<std::size_t> pareto_frontier(const std::vector<double>& xs,
                                         const std::vector<double>& ys);

struct TradeoffPoint {
  std::size_t report = 0;  // 0: the first report, 1: the one compared with it
  std::size_t result = 0;  // index into that report's results
  std::string label;       // the strategy spec
  double x = 0, y = 0;
  bool frontier = false;
  bool recommended = false;
};

// An axis range; on a log axis lo > 0 and values <= 0 sit on its lower edge.
struct TradeoffRange {
  double lo = 0, hi = 1;
  bool log = false;
};

struct TradeoffPlot {
  TradeoffY y = TradeoffY::upstream_calls;
  std::vector<TradeoffPoint> points;
  // Per report: indices into `points` along its frontier, by x.
  std::vector<std::vector<std::size_t>> frontiers;
  TradeoffRange x_range, y_range;
  // Points whose y is 0 on a log y axis: drawn on its lower edge, their tooltips say 0.
  std::size_t zero_on_log = 0;
};

// The plot of `reports` (one or two; null entries are skipped) with `y` on the y axis (a
// result without a value on it is left out) and y on a log scale when `y_log`. x is on a log
// scale when every peak is above 0 and they span at least a factor of 16 (a sweep doubling a
// limit), else linear around the points (from 0 at the lowest).
TradeoffPlot tradeoff_plot(const std::vector<const ReportDoc*>& reports, TradeoffY y, bool y_log);

// The range a log axis needs to show every value above 0 with a margin: [min / 2, max * 2],
// [0.5, 10] when none is above 0.
TradeoffRange log_range(const std::vector<double>& values);

// For bar charts of hit rates: show the miss rate on a log axis instead when every hit rate
// exceeds 90% (then the bars of a linear hit-rate axis all look full).
bool prefer_miss_rate(const std::vector<double>& hit_rates);

}  // namespace alloclab::gui
