// The side panel says what the selected trace or report is (events, runs, devices, mode,
// anomalies, load warnings) and lists the report's strategies as chips that take a strategy out
// of every view.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gui/chart.hpp"
#include "gui/model.hpp"
#include "gui/summary.hpp"
#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

using gui::SummaryLine;

std::string all_text(const std::vector<SummaryLine>& lines) {
  std::string out;
  for (const SummaryLine& l : lines) out += l.text + (l.warning ? " [!]\n" : "\n");
  return out;
}

TEST(SidePanelSummary, a_trace_reads_as_info_says_it) {
  const nlohmann::json info = {
      {"source", "/data/run/train.alt"},
      {"events", 1234567},
      {"events_by_op", {{"run_begin", 8}, {"run_end", 8}}},
      {"threads", 3},
      {"devices", {"cpu", "cuda:0"}},
      {"streams", 2},
      {"peak_live_bytes", 3u << 20},
      {"duration_ns", 602'800'000},
      {"anomalies",
       {{"double_free", 2}, {"free_unknown", 1}, {"leaks", 11}, {"leaked_bytes", 4096}}},
      {"start_state", {{"segments", 3}}}};
  const std::string text = all_text(gui::trace_summary_lines(info, 0));
  EXPECT_EQ(text,
            "1,234,567 events · 8 runs · 3 threads\n"
            "devices cpu, cuda:0 · 2 streams\n"
            "peak live 3.00 MiB · 602.8 ms\n"
            "anomalies: 3 (free of unknown address 1, double free 2) [!]\n"
            "11 leaks (4.00 KiB) at the end\n"
            "starts from a recorded allocator state\n");
  EXPECT_EQ(gui::trace_name(info), "train.alt");
}

TEST(SidePanelSummary, a_clean_trace_without_runs_and_one_that_lost_events) {
  const nlohmann::json info = {{"events", 1},
                               {"threads", 1},
                               {"devices", {"cpu"}},
                               {"streams", 1},
                               {"anomalies", {{"double_free", 0}}}};
  const std::string clean = all_text(gui::trace_summary_lines(info, 0));
  EXPECT_NE(clean.find("1 event · no run markers · 1 thread\n"), std::string::npos) << clean;
  EXPECT_NE(clean.find("device cpu · 1 stream\n"), std::string::npos) << clean;
  EXPECT_NE(clean.find("anomalies: none\n"), std::string::npos) << clean;
  const std::string lost = all_text(gui::trace_summary_lines(info, 2));
  EXPECT_NE(lost.find("2 load warnings: events were lost [!]"), std::string::npos) << lost;
}

TEST(SidePanelSummary, keys_of_the_wrong_type_are_shown_as_absent_never_thrown) {
  const nlohmann::json odd = {
      {"events", "many"},     {"devices", 7}, {"anomalies", {1, 2}},
      {"source", 12},         {"mode", 3},    {"partial", "yes"},
      {"results", "several"}, {"sweep", 5},   {"trace", {{"below_min_size", 1}}}};
  EXPECT_NO_THROW(gui::trace_summary_lines(odd, 0));
  EXPECT_NO_THROW(gui::report_summary_lines(odd));
  EXPECT_TRUE(gui::trace_summary_lines(nlohmann::json::array(), 0).empty());
  EXPECT_EQ(gui::trace_name(odd), "(unnamed)");
  EXPECT_EQ(all_text(gui::report_summary_lines(odd)), "sim mode · 0 strategies\n");
}

TEST(SidePanelSummary, a_report_says_its_mode_sweep_and_what_it_left_out) {
  nlohmann::json report = {
      {"mode", "live"},
      {"partial", true},
      {"results", nlohmann::json::array({{}, {}})},
      {"sweep", {{"points", {"a", "b", "c", "d"}}, {"point_indices", {1, 3}}}},
      {"trace", {{"below_min_size", {{"min_size", 131072}, {"allocations", 5000}}}}}};
  EXPECT_EQ(all_text(gui::report_summary_lines(report)),
            "live mode · 2 strategies\n"
            "a sweep of 4 points, 2 of them here\n"
            "partial: merged with points missing [!]\n"
            "5,000 allocations below 128.00 KiB left to the real allocator\n");
}

gui::ReportDoc three_strategies() {
  gui::ReportDoc doc;
  for (const char* name : {"exact", "best-fit", "pytorch"}) {
    StrategyResult r;
    r.strategy = name;
    doc.results.push_back(r);
    doc.json["results"].push_back({{"strategy", name}});
    doc.reserved.emplace_back();
    doc.live.emplace_back();
  }
  doc.json["sweep"] = {{"points", {"exact", "best-fit", "pytorch"}}, {"point_indices", {0, 1, 2}}};
  return doc;
}

TEST(SidePanelChips, removing_a_strategy_takes_it_out_of_the_report_everywhere) {
  gui::ReportDoc doc = three_strategies();
  ASSERT_TRUE(gui::Model::remove_result(doc, 1));
  ASSERT_EQ(doc.results.size(), 2u);
  EXPECT_EQ(doc.results[0].strategy, "exact");
  EXPECT_EQ(doc.results[1].strategy, "pytorch");
  EXPECT_EQ(doc.reserved.size(), 2u);
  EXPECT_EQ(doc.live.size(), 2u);
  EXPECT_EQ(doc.json["results"],
            nlohmann::json::array({{{"strategy", "exact"}}, {{"strategy", "pytorch"}}}));
  EXPECT_EQ(doc.json["sweep"]["point_indices"], nlohmann::json::array({0, 2}));
  EXPECT_FALSE(gui::Model::remove_result(doc, 2)) << "no third strategy is left";
  EXPECT_EQ(doc.results.size(), 2u);
}

// A report of the bundled training trace under exact, best-fit and pytorch, in `dir` ("" if
// the replay failed).
std::string three_strategy_report(const std::filesystem::path& dir) {
  const std::string report = (dir / "r.json").string();
  const CliResult r =
      run_cli("replay " + traces_dir() +
              "/torch-cnn-training.alt -s exact -s best-fit -s pytorch --json " + report);
  EXPECT_EQ(r.status, 0) << r.output;
  return r.status == 0 ? report : std::string();
}

TEST(SidePanelChips, a_chip_clicked_in_the_window_takes_its_strategy_out_of_the_views) {
  const auto dir = scratch_dir("chips");
  const std::string report = three_strategy_report(dir);
  ASSERT_FALSE(report.empty());
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << report << "\nwait\nframes 2\n"
                        << "expect-text panel/report \"sim mode · 3 strategies\"\n"
                        << "expect-text panel/trace \"28,815 events · 8 runs · 1 thread\"\n"
                        << "expect-text panel/trace \"11 leaks\"\n"
                        << "click chip:best-fit/x\nframes 2\n"
                        << "expect-missing chip:best-fit\n"
                        << "expect-text panel/report \"sim mode · 2 strategies\"\n"
                        << "export-csv " << (dir / "out.csv").string() << "\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  ASSERT_EQ(gui.status, 0) << gui.output;
  const auto rows = read_csv((dir / "out.csv").string());
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.count("best-fit"), 0u) << "the views no longer compare it";
  EXPECT_EQ(rows.count("exact"), 1u);
}

TEST(Highlight, a_strategy_picked_anywhere_fades_the_others) {
  ASSERT_TRUE(gui::highlighted_strategy().empty());
  const ImU32 full = gui::series_color(1), faded = gui::series_color(1, 0.2f);
  EXPECT_EQ(gui::strategy_color(1, "exact"), full) << "nothing highlighted";
  gui::toggle_highlight("best-fit");
  EXPECT_EQ(gui::highlighted_strategy(), "best-fit");
  EXPECT_EQ(gui::strategy_color(1, "best-fit"), full);
  EXPECT_EQ(gui::strategy_color(1, "exact"), faded);
  gui::toggle_highlight("exact");
  EXPECT_EQ(gui::highlighted_strategy(), "exact") << "another pick moves the highlight";
  gui::toggle_highlight("exact");
  EXPECT_TRUE(gui::highlighted_strategy().empty()) << "picking it again clears it";
}

TEST(Highlight, a_legend_entry_clicked_in_one_view_highlights_in_every_view) {
  const auto dir = scratch_dir("highlight");
  const std::string report = three_strategy_report(dir);
  ASSERT_FALSE(report.empty());
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << report << "\nwait\nview hit-rate\nframes 2\n"
                        << "expect-missing panel/highlight\n"
                        << "click chart:hit-rate/legend:best-fit\nframes 2\n"
                        << "expect-text panel/highlight \"highlighted: best-fit\"\n"
                        << "view runs\nframes 2\n"
                        << "expect-text panel/highlight \"highlighted: best-fit\"\n"
                        << "click chip:best-fit\nframes 2\n"
                        << "expect-missing panel/highlight\n"
                        << "click chip:pytorch\nframes 2\n"
                        << "expect-text panel/highlight \"highlighted: pytorch\"\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

// The Diff, Trade-off and Sweep views pick a strategy on a click and show the pick of another view.
TEST(Highlight, diff_tradeoff_and_sweep_views_pick_and_keep_the_highlight) {
  const auto dir = scratch_dir("highlight-views");
  const std::string report = three_strategy_report(dir);
  ASSERT_FALSE(report.empty());
  const std::string copy = (dir / "again.json").string();
  std::filesystem::copy_file(report, copy);
  const std::string sweep = (dir / "sweep.json").string();
  const CliResult swept = run_cli("sweep " + traces_dir() +
                                  "/transformer-varlen.alt -s 'fifo-shrink:max={1MiB..4MiB:x2}' "
                                  "--json " +
                                  sweep);
  ASSERT_EQ(swept.status, 0) << swept.output;
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << report << "\nwait\nopen " << copy << "\nwait\n"
                        << "view diff\nframes 2\n"
                        << "click chart:diff-reserved/legend:best-fit\nframes 2\n"
                        << "expect-text panel/highlight \"highlighted: best-fit\"\n"
                        << "view tradeoff\nframes 2\n"
                        << "click chart:tradeoff/point:pytorch\nframes 2\n"
                        << "expect-text panel/highlight \"highlighted: pytorch\"\n"
                        << "open " << sweep << "\nwait\nview sweep\nframes 2\n"
                        << "click chart:sweep-hit-rate/point:fifo-shrink:max=2MiB\nframes 2\n"
                        << "expect-text panel/highlight \"highlighted: fifo-shrink:max=2MiB\"\n"
                        << "click chart:sweep-hit-rate/point:fifo-shrink:max=2MiB\nframes 2\n"
                        << "expect-missing panel/highlight\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

}  // namespace
}  // namespace alloclab::test
