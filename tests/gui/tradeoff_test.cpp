// The trade-off plot's data without a window: the Pareto frontier (ties, one point, equal x or
// y), the y metrics a report offers, advise's recommendations, and axes that hold zeros on a log
// scale.
#include <gtest/gtest.h>

#include <algorithm>

#include "gui/tradeoff.hpp"

namespace alloclab::gui {
namespace {

using Indices = std::vector<std::size_t>;

TEST(ParetoFrontier, keeps_the_points_nothing_beats_in_both_bytes_and_calls) {
  // (bytes, calls): 1 and 3 are beaten by 0 and 2 respectively; 4 is the least calls.
  const std::vector<double> xs = {10, 20, 30, 40, 50};
  const std::vector<double> ys = {100, 150, 40, 60, 5};
  EXPECT_EQ(pareto_frontier(xs, ys), (Indices{0, 2, 4}));
}

TEST(ParetoFrontier, a_single_point_is_its_own_frontier_and_none_is_empty) {
  EXPECT_EQ(pareto_frontier({7}, {3}), (Indices{0}));
  EXPECT_EQ(pareto_frontier({7}, {0}), (Indices{0}));
  EXPECT_TRUE(pareto_frontier({}, {}).empty());
}

TEST(ParetoFrontier, at_equal_bytes_only_the_fewest_calls_count) {
  const std::vector<double> xs = {64, 64, 64, 128};
  const std::vector<double> ys = {30, 10, 20, 5};
  EXPECT_EQ(pareto_frontier(xs, ys), (Indices{1, 3}));
}

TEST(ParetoFrontier, at_equal_calls_only_the_fewest_bytes_count) {
  const std::vector<double> xs = {300, 100, 200};
  const std::vector<double> ys = {10, 10, 10};
  EXPECT_EQ(pareto_frontier(xs, ys), (Indices{1}));
}

TEST(ParetoFrontier, points_at_the_same_place_are_all_on_it_or_none_is) {
  // 0 and 2 tie on the frontier; 1 and 3 tie behind 0 and 2.
  const std::vector<double> xs = {50, 80, 50, 80, 10};
  const std::vector<double> ys = {20, 30, 20, 30, 90};
  EXPECT_EQ(pareto_frontier(xs, ys), (Indices{4, 0, 2}));
}

TEST(ParetoFrontier, is_ordered_by_bytes_whatever_the_input_order) {
  const std::vector<double> xs = {400, 100, 300, 200};
  const std::vector<double> ys = {1, 40, 2, 20};
  EXPECT_EQ(pareto_frontier(xs, ys), (Indices{1, 3, 2, 0}));
}

StrategyResult result(const std::string& spec, std::uint64_t reserved, std::uint64_t allocs,
                      std::uint64_t frees, std::uint64_t misses) {
  StrategyResult r;
  r.strategy = spec;
  r.metrics.peak_reserved_bytes = reserved;
  r.metrics.upstream_allocs = allocs;
  r.metrics.upstream_frees = frees;
  r.metrics.misses = misses;
  r.metrics.requests = 1000;
  r.metrics.hits = 1000 - misses;
  return r;
}

TEST(TradeoffPlot, places_each_strategy_at_its_peak_reserved_and_upstream_calls) {
  ReportDoc report;
  report.results = {result("exact", 4096, 10, 2, 10), result("passthrough", 1024, 500, 500, 500),
                    result("best-fit", 8192, 20, 5, 12)};
  const TradeoffPlot plot = tradeoff_plot({&report}, TradeoffY::upstream_calls, true);
  ASSERT_EQ(plot.points.size(), 3u);
  EXPECT_EQ(plot.points[0].label, "exact");
  EXPECT_EQ(plot.points[0].x, 4096);
  EXPECT_EQ(plot.points[0].y, 12);
  EXPECT_EQ(plot.points[1].y, 1000);
  // best-fit holds more memory for more calls than exact: off the frontier.
  EXPECT_TRUE(plot.points[0].frontier);
  EXPECT_TRUE(plot.points[1].frontier);
  EXPECT_FALSE(plot.points[2].frontier);
  ASSERT_EQ(plot.frontiers.size(), 1u);
  EXPECT_EQ(plot.frontiers[0], (Indices{1, 0}));
  // Linear x around the points (they span less than a factor of 16), log y around every value.
  EXPECT_FALSE(plot.x_range.log);
  EXPECT_GE(plot.x_range.lo, 0);
  EXPECT_LT(plot.x_range.lo, 1024);
  EXPECT_GT(plot.x_range.hi, 8192);
  EXPECT_TRUE(plot.y_range.log);
  EXPECT_LT(plot.y_range.lo, 12);
  EXPECT_GT(plot.y_range.lo, 0);
  EXPECT_GT(plot.y_range.hi, 1000);
  EXPECT_EQ(plot.zero_on_log, 0u);
}

TEST(TradeoffPlot, zeros_on_a_log_axis_sit_on_its_lower_edge_and_are_counted) {
  ReportDoc report;
  report.results = {result("exact", 4096, 3, 0, 0), result("best-fit", 2048, 4, 0, 0),
                    result("passthrough", 1024, 90, 90, 90)};
  const TradeoffPlot misses = tradeoff_plot({&report}, TradeoffY::misses, true);
  EXPECT_TRUE(misses.y_range.log);
  EXPECT_GT(misses.y_range.lo, 0);
  EXPECT_LT(misses.y_range.lo, 90);
  EXPECT_EQ(misses.zero_on_log, 2u);
  // best-fit: fewer bytes than exact with no more misses; exact is behind it.
  EXPECT_TRUE(misses.points[1].frontier);
  EXPECT_FALSE(misses.points[0].frontier);
  // Every value 0: still a valid log range.
  ReportDoc none;
  none.results = {result("exact", 0, 0, 0, 0)};
  const TradeoffPlot zero = tradeoff_plot({&none}, TradeoffY::misses, true);
  EXPECT_GT(zero.y_range.lo, 0);
  EXPECT_GT(zero.y_range.hi, zero.y_range.lo);
  EXPECT_EQ(zero.zero_on_log, 1u);
  EXPECT_FALSE(zero.x_range.log);
  EXPECT_GT(zero.x_range.hi, zero.x_range.lo);
  // A linear y axis counts no zeros away.
  EXPECT_EQ(tradeoff_plot({&report}, TradeoffY::misses, false).zero_on_log, 0u);
}

TEST(TradeoffPlot, a_sweep_spanning_a_factor_of_16_gets_a_log_x_axis) {
  ReportDoc sweep;
  for (std::uint64_t mib = 1; mib <= 256; mib *= 2)
    sweep.results.push_back(result("fifo-shrink:max=" + std::to_string(mib) + "MiB", mib << 20,
                                   1000 / mib, 1000 / mib, 1000 / mib));
  const TradeoffPlot plot = tradeoff_plot({&sweep}, TradeoffY::upstream_calls, true);
  EXPECT_TRUE(plot.x_range.log);
  EXPECT_LT(plot.x_range.lo, 1 << 20);
  EXPECT_GT(plot.x_range.hi, 256.0 * (1 << 20));
  EXPECT_EQ(plot.frontiers[0].size(), 9u);
}

TEST(TradeoffPlot, two_reports_keep_their_own_points_and_frontiers) {
  ReportDoc a, b;
  a.results = {result("exact", 100, 10, 0, 10), result("best-fit", 200, 5, 0, 5)};
  b.results = {result("exact", 150, 1, 0, 1), result("best-fit", 50, 50, 0, 50)};
  const TradeoffPlot plot = tradeoff_plot({&a, &b}, TradeoffY::upstream_calls, false);
  ASSERT_EQ(plot.points.size(), 4u);
  EXPECT_EQ(plot.points[2].report, 1u);
  EXPECT_EQ(plot.points[2].result, 0u);
  ASSERT_EQ(plot.frontiers.size(), 2u);
  // b's exact beats a's best-fit, but each report's frontier is its own.
  EXPECT_EQ(plot.frontiers[0], (Indices{0, 1}));
  EXPECT_EQ(plot.frontiers[1], (Indices{3, 2}));
  EXPECT_FALSE(plot.y_range.log);
  EXPECT_EQ(plot.y_range.lo, 0);
}

TEST(TradeoffPlot, time_axes_are_offered_only_when_every_result_has_them) {
  ReportDoc sim;
  sim.results = {result("exact", 1, 1, 1, 1), result("best-fit", 1, 1, 1, 1)};
  EXPECT_EQ(tradeoff_y_choices({&sim}),
            (std::vector<TradeoffY>{TradeoffY::upstream_calls, TradeoffY::misses}));
  sim.results[0].modelled = ModelledTime{100, 50, 7};
  EXPECT_EQ(tradeoff_y_choices({&sim}).size(), 2u) << "best-fit has no modelled time";
  sim.results[1].modelled = ModelledTime{10, 5, 1};
  EXPECT_EQ(tradeoff_y_choices({&sim}).back(), TradeoffY::modelled_ns);
  EXPECT_EQ(tradeoff_y_value(sim.results[0], TradeoffY::modelled_ns), 157.0);

  ReportDoc real;
  real.results = {result("exact", 1, 1, 1, 1)};
  LatencySummary allocate;
  allocate.count = 3;
  allocate.total_ns = 4200;
  real.results[0].latency["strategy_allocate"] = allocate;
  EXPECT_EQ(tradeoff_y_choices({&real}).back(), TradeoffY::measured_ns);
  EXPECT_EQ(tradeoff_y_value(real.results[0], TradeoffY::measured_ns), 4200.0);
  // A plot of a metric some results lack leaves those out.
  EXPECT_EQ(tradeoff_plot({&sim, &real}, TradeoffY::measured_ns, true).points.size(), 1u);
}

TEST(TradeoffPlot, marks_what_advise_recommends) {
  ReportDoc advice;
  advice.results = {result("exact", 400, 2, 0, 2), result("fifo-shrink:max=3136KiB", 100, 3, 1, 3),
                    result("best-fit", 400, 2, 0, 2)};
  advice.json = {
      {"advice",
       {{{"family", "fifo-shrink"}, {"recommended", {{"strategy", "fifo-shrink:max=3136KiB"}}}},
        {{"family", "fifo-shrink:match=best-fit"}, {"recommended", nullptr}}}}};
  EXPECT_EQ(recommended_strategies(advice.json),
            std::vector<std::string>{"fifo-shrink:max=3136KiB"});
  const TradeoffPlot plot = tradeoff_plot({&advice}, TradeoffY::upstream_calls, true);
  EXPECT_FALSE(plot.points[0].recommended);
  EXPECT_TRUE(plot.points[1].recommended);
  EXPECT_FALSE(plot.points[2].recommended);

  const nlohmann::json pytorch = {
      {"pytorch_advice",
       {{"configurations",
         {{{"strategy", "pytorch-conf:\"\""}}, {{"strategy", "pytorch-conf:\"a:1\""}}}},
        {"least_reserved", {{"index", 1}}},
        {"fewest_upstream_allocs", {{"index", 1}}},
        {"furthest", nullptr}}}};
  EXPECT_EQ(recommended_strategies(pytorch), std::vector<std::string>{"pytorch-conf:\"a:1\""});
  EXPECT_TRUE(recommended_strategies(nlohmann::json::object()).empty());
}

TEST(MissRate, is_the_default_only_when_every_hit_rate_exceeds_90_percent) {
  EXPECT_TRUE(prefer_miss_rate({0.97, 0.999, 0.9999}));
  EXPECT_FALSE(prefer_miss_rate({0.97, 0.85}));
  EXPECT_FALSE(prefer_miss_rate({0.9}));
  EXPECT_FALSE(prefer_miss_rate({}));
}

TEST(LogRange, holds_every_value_above_zero_with_a_margin) {
  const TradeoffRange r = log_range({0, 0.001, 0.03, 0});
  EXPECT_TRUE(r.log);
  EXPECT_LT(r.lo, 0.001);
  EXPECT_GT(r.lo, 0);
  EXPECT_GT(r.hi, 0.03);
  const TradeoffRange empty = log_range({0, 0});
  EXPECT_GT(empty.lo, 0);
  EXPECT_GT(empty.hi, empty.lo);
}

}  // namespace
}  // namespace alloclab::gui
