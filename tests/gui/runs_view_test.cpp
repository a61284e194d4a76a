// The Runs view: per run, each strategy's hit or miss rate, upstream calls and peak reserved
// bytes, with the run's label on the axis and exact values in a tooltip.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gui/views.hpp"
#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

using gui::RunMetric;

RunMetrics run(std::string label, std::uint64_t requests, std::uint64_t hits,
               std::uint64_t allocs = 0, std::uint64_t frees = 0) {
  RunMetrics r;
  r.label = std::move(label);
  r.requests = requests;
  r.hits = hits;
  r.upstream_allocs = allocs;
  r.upstream_frees = frees;
  r.peak_reserved_bytes = 1 << 20;
  return r;
}

gui::ReportDoc report_of(std::vector<std::vector<RunMetrics>> runs_per_strategy) {
  gui::ReportDoc doc;
  int i = 0;
  for (auto& runs : runs_per_strategy) {
    StrategyResult r;
    r.strategy = "s" + std::to_string(i++);
    r.runs = std::move(runs);
    doc.results.push_back(std::move(r));
  }
  return doc;
}

TEST(RunsChart, high_hit_rates_are_shown_as_miss_rates_on_a_log_axis) {
  const auto doc = report_of({{run("warm-up", 1000, 950), run("", 1000, 999)},
                              {run("warm-up", 1000, 1000), run("", 1000, 1000)}});
  const gui::RunsChart c = gui::runs_chart(doc, std::nullopt);
  ASSERT_EQ(c.labels, (std::vector<std::string>{"warm-up", "run 1"}));
  EXPECT_EQ(c.metric, RunMetric::miss_rate);
  EXPECT_TRUE(c.log);
  EXPECT_DOUBLE_EQ(c.values[0][0], 0.05);
  EXPECT_DOUBLE_EQ(c.values[0][1], 0.001);
  EXPECT_DOUBLE_EQ(c.values[1][1], 0.0) << "no miss: drawn on the floor, kept exact";
  EXPECT_LE(c.lo, 0.0001) << "a decade below the smallest miss rate";
  EXPECT_GT(c.lo, 0.0);
  EXPECT_GT(c.hi, 0.05);
}

TEST(RunsChart, a_low_hit_rate_keeps_the_hit_rate_and_a_choice_is_kept) {
  const auto doc = report_of({{run("a", 100, 40, 60, 50), run("b", 0, 0)}});
  const gui::RunsChart c = gui::runs_chart(doc, std::nullopt);
  EXPECT_EQ(c.metric, RunMetric::hit_rate);
  EXPECT_FALSE(c.log);
  EXPECT_DOUBLE_EQ(c.values[0][0], 0.4);
  EXPECT_TRUE(std::isnan(c.values[0][1])) << "a run without requests has no rate";
  const gui::RunsChart calls = gui::runs_chart(doc, RunMetric::upstream_calls);
  EXPECT_EQ(calls.unit, gui::Unit::count);
  EXPECT_DOUBLE_EQ(calls.values[0][0], 110);
  EXPECT_DOUBLE_EQ(calls.values[0][1], 0);
}

TEST(RunsChart, allocation_time_per_run_where_the_report_measured_or_modelled_it) {
  auto doc = report_of({{run("a", 10, 10), run("b", 10, 5)}});
  EXPECT_FALSE(gui::runs_chart(doc, std::nullopt).timed) << "a plain simulation has no time";
  doc.results[0].runs[0].allocation_time_ns = 1500;
  const gui::RunsChart c = gui::runs_chart(doc, RunMetric::allocation_time);
  EXPECT_TRUE(c.timed);
  EXPECT_EQ(c.unit, gui::Unit::ns);
  EXPECT_DOUBLE_EQ(c.values[0][0], 1500);
  EXPECT_TRUE(std::isnan(c.values[0][1])) << "a run without a time is not drawn as zero";
}

TEST(RunsChart, strategies_with_fewer_runs_and_reports_without_runs) {
  const auto doc = report_of({{run("x", 10, 10), run("y", 10, 5)}, {run("", 10, 1)}});
  const gui::RunsChart c = gui::runs_chart(doc, RunMetric::hit_rate);
  ASSERT_EQ(c.labels.size(), 2u);
  EXPECT_EQ(c.labels[0], "x") << "a label from whichever strategy has it";
  EXPECT_TRUE(std::isnan(c.values[1][1]));
  EXPECT_TRUE(gui::runs_chart(report_of({{}, {}}), std::nullopt).labels.empty());
}

TEST(RunsChart, tens_of_thousands_of_runs) {
  std::vector<RunMetrics> runs;
  for (int k = 0; k < 50'000; ++k) runs.push_back(run("", 67, k % 7 == 0 ? 59 : 67));
  const gui::RunsChart c = gui::runs_chart(report_of({runs, runs}), std::nullopt);
  ASSERT_EQ(c.labels.size(), 50'000u);
  EXPECT_EQ(c.labels.back(), "run 49999");
  EXPECT_EQ(c.metric, RunMetric::hit_rate) << "59 of 67 is below 90%";
}

TEST(RunsView, a_run_is_hovered_and_its_tooltip_gives_each_strategy_exactly) {
  const auto dir = scratch_dir("runs-view");
  const std::string report = (dir / "r.json").string();
  ASSERT_EQ(run_cli("replay " + traces_dir() + "/torch-cnn-training.alt -s exact -s " +
                    "per-run-pool --json " + report)
                .status,
            0);
  const std::string script = (dir / "s.txt").string();
  // The plot's middle is the middle of 8 runs: run 4.
  std::ofstream(script) << "open " << report << "\nwait\nview runs\nframes 2\n"
                        << "mouse-on \"chart:runs/x:train step 0\"\n"
                        << "mouse-on chart:runs/plot\nframes 2\n"
                        << "expect-text tooltip \"train step 4 (run 4)\"\n"
                        << "expect-text tooltip \"per-run-pool: 89.16%  (hits 1,604 of 1,799\"\n"
                        << "click \"runs:upstream calls\"\nframes 2\n"
                        << "mouse-on chart:runs/plot\nframes 2\n"
                        << "expect-text tooltip \"per-run-pool: 390\"\n"
                        << "expect-missing \"runs:allocation time\"\n";
  const CliResult gui = run_headless("--size 1200x760 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

TEST(RunsView, a_real_replay_shows_each_runs_measured_allocation_time) {
  const auto dir = scratch_dir("runs-time");
  const std::string report = (dir / "r.json").string();
  ASSERT_EQ(run_cli("replay " + traces_dir() + "/torch-cnn-training.alt -s exact --upstream " +
                    "host-malloc --json " + report)
                .status,
            0);
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << report << "\nwait\nview runs\nframes 2\n"
                        << "click \"runs:allocation time\"\nframes 2\n"
                        << "mouse-on chart:runs/plot\nframes 2\n"
                        << "expect-text tooltip \"train step 4 (run 4)\"\n"
                        << "expect-text chart:runs/y \"allocation time per run\"\n";
  const CliResult gui = run_headless("--size 1200x760 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

TEST(RunsView, a_report_without_runs_says_where_runs_come_from) {
  const auto dir = scratch_dir("runs-none");
  const std::string report = (dir / "r.json").string();
  ASSERT_EQ(run_cli("replay " + traces_dir() + "/tiny.csv -s exact --json " + report).status, 0);
  // A report of an older alloclab, or one written by hand: no per-run results.
  nlohmann::json json;
  std::ifstream(report) >> json;
  for (auto& r : json["results"]) r.erase("runs");
  std::ofstream(report, std::ios::trunc) << json.dump();
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << report << "\nwait\nview runs\nframes 2\n"
                        << "expect-missing chart:runs\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

}  // namespace
}  // namespace alloclab::test
