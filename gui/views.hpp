#pragma once
// The views: each is a function of (model, view state) that draws one tab and leaves the table
// it shows (if any) in the state, for CSV export.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "alloclab/replay/sites.hpp"
#include "chart.hpp"
#include "model.hpp"
#include "table.hpp"
#include "tradeoff.hpp"

namespace alloclab::gui {

enum class View {
  overview,
  tradeoff,
  hit_rate,
  latency,
  memory,
  runs,
  segments,
  flame,
  trace,
  sweep,
  diff
};
inline constexpr View all_views[] = {View::overview, View::tradeoff, View::hit_rate, View::latency,
                                     View::memory,   View::runs,     View::segments, View::flame,
                                     View::trace,    View::sweep,    View::diff};

// "overview", "tradeoff", "hit-rate", "latency", "memory", "runs", "segments", "flame", "trace",
// "sweep", "diff".
const char* view_name(View view);
// Accepts view_name's names (and "hitrate", "hit_rate", "trade-off").
std::optional<View> parse_view(std::string_view name);
// The tab title ("Overview", "Hit rate", ...).
const char* view_title(View view);
// The names, for messages: "overview, hit-rate, ..., diff".
std::string view_names();

// What the Runs view compares, per run and strategy.
enum class RunMetric { hit_rate, miss_rate, upstream_calls, peak_reserved, allocation_time };
const char* run_metric_name(RunMetric metric);

struct RunsCache;     // view_runs.cpp
struct FlameView;     // view_flame.cpp: the Flame view's tallies and graph
struct SegmentsView;  // view_segments.cpp: the segments view's settings and background replays

struct ViewState {
  View view = View::overview;
  Table table;                      // the current view's table, for CSV export
  XRange memory_x;                  // visible time range of the memory view
  const void* memory_of = nullptr;  // the report/trace memory_x belongs to
  int latency_metric = 0;           // index into the latency names
  std::string diff_strategy;
  std::optional<RunMetric> runs_metric;  // the Runs view's switch; unset: chosen from the data
  std::shared_ptr<RunsCache> runs;       // the Runs view's chart and table, once per report
  // The trade-off chart (Trade-off view and Overview): what y shows, on which scale, and the
  // report drawn over the current one (-1: none).
  TradeoffY tradeoff_y = TradeoffY::upstream_calls;
  bool tradeoff_y_log = true;
  int tradeoff_compare = -1;
  // The Hit rate view's first chart and the Sweep view's hit-rate chart: -1 chooses (miss rate
  // on a log axis when every hit rate exceeds 90%), 0 hit rate, 1 miss rate.
  int miss_rate = -1;
  std::shared_ptr<SegmentsView> segments;  // made when the view is first drawn
  // The Flame view: its metric, the strategy (and the one compared with, -1: none) by index in
  // the current report, and the caller chain clicked last ("main;run;alloc"), whose allocations'
  // live bytes the Memory view draws (flame_live, of the trace flame_live_of).
  SiteMetric flame_metric = SiteMetric::live;
  int flame_strategy = 0;
  int flame_compare = -1;
  std::string flame_filter;
  LodPyramid flame_live;
  const TraceDoc* flame_live_of = nullptr;
  std::shared_ptr<FlameView> flame;
};

// Pure table builders (tested without a window).
Table overview_table(const ReportDoc& report);
Table memory_table(const ReportDoc& report);
Table diff_table(const ReportDoc& a, const ReportDoc& b);
Table sweep_table(const ReportDoc& report);
// The trade-off plot's points: strategy, report, peak reserved bytes, the y metric, whether the
// point is on its report's Pareto frontier and whether advise recommends it.
Table tradeoff_table(const TradeoffPlot& plot, const std::vector<const ReportDoc*>& reports);
Table runs_table(const nlohmann::json& trace_summary);
// The Overview's line for a result with a first_failure: where, and PyTorch's message.
std::string first_failure_line(const StrategyResult& result);
// The Overview's line for a result with a fidelity section: segment allocs and frees reproduced
// (counts; bytes of the model's calls and of the recorded ones) and where the model first parts
// from the recording.
std::string fidelity_summary(const StrategyResult& result);
Table top_sizes_table(const nlohmann::json& trace_summary);

// The Runs view's chart: per run its label (the marker's, else "run K") and per strategy its
// value of `metric` in each run (NaN where the strategy has no such run or the run made no
// request). Without a chosen metric: the miss rate when every run's hit rate exceeds 90% (on a
// log axis, whose floor holds the runs without a miss), else the hit rate.
struct RunsChart {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> values;  // [strategy][run]
  RunMetric metric = RunMetric::hit_rate;
  Unit unit = Unit::percent;
  bool log = false;
  double lo = 0, hi = 1;
  bool timed = false;  // some run has an allocation time (real, live or cost-model reports)
};
RunsChart runs_chart(const ReportDoc& report, std::optional<RunMetric> metric);

// The swept parameter of a sweep report: the first spec key whose value differs between points,
// each point's value of it as a number (sizes in bytes), and the other points' differing keys as
// a series name. Empty `key` when nothing varies or a value is not a number.
struct SweepAxis {
  std::string key;
  bool bytes = false;
  std::vector<double> values;       // per result
  std::vector<std::string> series;  // per result
};
SweepAxis sweep_axis(const ReportDoc& report);

void draw_overview(const Model& model, ViewState& state);
void draw_tradeoff(const Model& model, ViewState& state);
// The trade-off chart alone, `height` pixels tall (the Overview shows it under its table).
void tradeoff_chart(const Model& model, ViewState& state, float height);
void draw_hit_rate(const Model& model, ViewState& state);
void draw_latency(const Model& model, ViewState& state);
void draw_memory(const Model& model, ViewState& state);
void draw_runs(const Model& model, ViewState& state);
void draw_trace(const Model& model, ViewState& state);
void draw_sweep(const Model& model, ViewState& state);
void draw_diff(Model& model, ViewState& state);
void draw_segments(const Model& model, ViewState& state);
void draw_flame(const Model& model, ViewState& state);
// True while the Flame view waits for its replays.
bool flame_busy(const ViewState& state);
// True while the segments view's replays work toward what it shows (scripts' `wait`, and
// headless screenshots, wait for them).
bool segments_busy(const ViewState& state);

// A log axis of miss rates (fractions) holding every one above 0, labelled as such.
Axis miss_rate_axis(const std::vector<double>& miss_rates);

// A line of grey text for an empty view.
void empty_hint(const char* text);

}  // namespace alloclab::gui
