// What the replay commands print, as library text: the notes on what a replay rests on, the
// sweep, advice, calibration and merged-report tables.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/advise.hpp"
#include "alloclab/replay/calibrate.hpp"
#include "alloclab/replay/merge.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/replay/sweep.hpp"

namespace alloclab {
namespace {

const std::string kTiny = std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";

TEST(ReplayNotes, a_trace_with_run_markers_and_no_anomalies_needs_no_note) {
  TraceSummary s;
  EXPECT_EQ(replay_notes_text(s), "");
}

TEST(ReplayNotes, a_trace_without_run_markers_is_replayed_as_one_run) {
  TraceSummary s;
  s.implicit_run = true;
  EXPECT_EQ(replay_notes_text(s), "(no run markers in the trace: it is replayed as one run)\n");
}

TEST(ReplayNotes, anomalies_are_counted_by_kind_with_a_pointer_to_info) {
  TraceSummary s;
  s.source = "t.csv";
  s.anomalies.double_free = 1;
  EXPECT_EQ(replay_notes_text(s),
            "(the trace has 1 anomaly (double free 1), repaired to be replayed: these numbers "
            "rest on the repaired trace; `alloclab info t.csv` says where they are)\n");
  s.implicit_run = true;
  s.anomalies.free_unknown = 1200;
  s.anomalies.run_end_outside_run = 2;
  EXPECT_EQ(replay_notes_text(s),
            "(no run markers in the trace: it is replayed as one run)\n"
            "(the trace has 1,203 anomalies (free of unknown address 1,200, double free 1, "
            "run_end outside run 2), repaired to be replayed: these numbers rest on the "
            "repaired trace; `alloclab info t.csv` says where they are)\n");
}

TEST(ResultsTable, a_strategy_whose_requests_failed_has_a_note_under_its_row) {
  StrategyResult ok, failing;
  ok.strategy = "exact";
  ok.metrics.requests = 10;
  failing.strategy = "fifo-shrink:max=1MiB";
  failing.metrics.requests = 10;
  failing.metrics.failed_requests = 1;
  const std::string text = results_table_text({ok, failing});
  // Under the row, from where the second column starts ("strategy" is 20 wide, then 2 spaces).
  EXPECT_TRUE(
      text.ends_with("\n" + std::string(22, ' ') + "^ 1 request failed (upstream out of memory)\n"))
      << text;
  EXPECT_EQ(text.find("modelled time"), std::string::npos);
  EXPECT_EQ(text.find("alloc p50/p99"), std::string::npos);
}

// Under the table: the first failure of each failing strategy, then why the replays are short.
TEST(ResultsTable, a_strategy_that_failed_gets_a_block_about_its_first_failure) {
  StrategyResult ok, failing;
  ok.strategy = "exact";
  ok.metrics.requests = 10;
  failing.strategy = "pytorch";
  failing.metrics.requests = 4;
  failing.metrics.failed_requests = 1;
  failing.strategy_counters = {{"num_alloc_retries", 2}, {"num_ooms", 1}};
  failing.stopped_at_first_failure = true;
  FirstFailure f;
  f.op_index = 1234;
  f.event_index = 1301;
  f.since_start_ns = 2'500'000;
  f.requested_bytes = 5 << 20;
  f.upstream_request_bytes = 20 << 20;
  f.device = 1;
  f.stream = 7;
  f.live_bytes = 30 << 20;
  f.allocated_bytes = 32 << 20;
  f.reserved_bytes = 40 << 20;
  f.largest_cached_block = 6 << 20;
  f.memory_limit = 48 << 20;
  f.peak_allocated_bytes = 36 << 20;
  f.peak_reserved_bytes = 48 << 20;
  failing.first_failure = f;
  const std::string text = results_table_text({ok, failing});
  const std::string note_indent(10, ' ');  // "strategy" is 8 wide, then 2 spaces
  const std::string expected_tail =
      note_indent + "^ 1 request failed (upstream out of memory); the replay stopped there\n" +
      note_indent + "^ num_alloc_retries 2, num_ooms 1\n" +
      "first failure of pytorch: a request of 5.00 MiB on cuda:1, stream 7, at operation 1,234 "
      "(trace event 1,301), +2.5 ms\n"
      "  live 30.00 MiB, handed out 32.00 MiB, reserved 40.00 MiB (cached 8.00 MiB, largest "
      "cached block 6.00 MiB), limit 48.00 MiB\n"
      "  fragmentation 20.00% (1 - handed out/reserved); GMLake's 25.00% (1 - peak handed "
      "out/peak reserved)\n"
      "  CUDA out of memory. Tried to allocate 20.00 MiB. Of the allocated memory 32.00 MiB is "
      "allocated by PyTorch, and 8.00 MiB is reserved by PyTorch but unallocated. If reserved "
      "but unallocated memory is large try setting "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
      "documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
      "(a replay stops at its strategy's first failed request, as the program would have; "
      "--keep-going replays every request)\n";
  EXPECT_TRUE(text.ends_with(expected_tail)) << text;
  // Counters of 0 say nothing; a failure with --keep-going has its block but no stop line.
  failing.strategy_counters = {{"num_alloc_retries", 0}, {"num_ooms", 0}};
  failing.stopped_at_first_failure = false;
  failing.first_failure->largest_cached_block.reset();
  const std::string going = results_table_text({failing});
  EXPECT_EQ(going.find("num_alloc_retries"), std::string::npos) << going;
  EXPECT_EQ(going.find("stopped"), std::string::npos) << going;
  EXPECT_EQ(going.find("--keep-going"), std::string::npos) << going;
  EXPECT_NE(going.find("largest cached block unknown"), std::string::npos) << going;
}

TEST(SweepTable, says_how_many_points_and_which_shard) {
  const ResolvedTrace trace = resolve(read_trace(kTiny));
  SweepRun run = plan_sweep({"fifo-shrink:max={1MiB..4MiB:x2}"}, Shard{1, 2});
  replay_sweep(trace, run, {}, 1);
  const std::string text = sweep_table_text(run);
  EXPECT_EQ(text,
            "3 points in all; shard 1/2 replays 1 of them\n"
            "point  strategy              hit rate  peak reserved  up allocs  evictions\n"
            "    1  fifo-shrink:max=2MiB     0.00%       3.00 MiB          6          5\n")
      << text;
  SweepRun whole = plan_sweep({"exact"}, Shard{});
  replay_sweep(trace, whole, {}, 1);
  EXPECT_EQ(sweep_table_text(whole).rfind("1 point in all\n", 0), 0u) << sweep_table_text(whole);
}

TEST(SweepTable, a_point_whose_requests_failed_has_a_note_under_its_row) {
  const ResolvedTrace trace = resolve(read_trace(kTiny));
  SweepRun run = plan_sweep({"exact"}, Shard{});
  ReplayOptions options;
  options.memory_limit = 1024 * 1024;  // the 2 MiB blocks, and more, cannot be had
  replay_sweep(trace, run, options, 1);
  ASSERT_GT(run.results[0].metrics.failed_requests, 0u);
  // From where the third column starts: "point", "strategy" (8 wide), each and 2 spaces. A
  // sweep's replays stop at their first failure, as the program would.
  EXPECT_TRUE(sweep_table_text(run).ends_with(
      "\n" + std::string(17, ' ') +
      "^ 1 request failed (upstream out of memory); the replay stopped there\n"))
      << sweep_table_text(run);
}

Advice advice_saving(std::int64_t saved_bytes, double saved_fraction) {
  Advice a;
  a.family = default_advice_families().front();
  a.baseline.metrics.requests = 4;
  a.baseline.metrics.hits = 2;
  a.baseline.metrics.peak_reserved_bytes = 4 << 20;
  a.max_bytes = 1 << 20;
  a.recommended = a.family.spec(1 << 20);
  a.recommended_result.metrics = a.baseline.metrics;
  a.saved_bytes = saved_bytes;
  a.saved_fraction = saved_fraction;
  a.replays = 9;
  return a;
}

// The advice table's row of `a`, without its line break.
std::string row_of(const Advice& a) {
  const std::string text = advice_text({a}, 0.99);
  const std::size_t row = text.find("\nfifo-shrink ") + 1;
  return text.substr(row, text.find('\n', row) - row);
}

// The row ends with the "saved" cell, then "replays" (7 wide, right-aligned: "      9").
void expect_saved(const Advice& a, const std::string& saved) {
  const std::string row = row_of(a);
  EXPECT_TRUE(row.ends_with(" " + saved + std::string(8, ' ') + "9")) << row;
}

TEST(AdviceText, says_plainly_what_a_recommendation_saves) {
  expect_saved(advice_saving(3 << 20, 0.75), "3.00 MiB (75%)");
  expect_saved(advice_saving(1000, 0.0002), "1000 B (<1%)");
  expect_saved(advice_saving(0, 0), "nothing");
  expect_saved(advice_saving(-(1 << 20), -0.25), "none (1.00 MiB more)");
}

TEST(AdviceText, states_the_target_then_the_table_then_one_paragraph) {
  Advice none = advice_saving(0, 0);
  none.max_bytes.reset();
  none.recommended.clear();
  const Advice some = advice_saving(3 << 20, 0.75);
  const std::string text = advice_text({none, some}, 0.95);
  EXPECT_EQ(text.rfind("target: keep 95% of the unbounded cache's hit rate\n\nfamily ", 0), 0u)
      << text;
  EXPECT_NE(text.find("(no limit helps)"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\n\n" + advice_sentence(none) + " " + advice_sentence(some) + "\n"))
      << text;
}

TEST(CalibrationText, lists_each_size_and_marks_the_failed_ones) {
  Calibration c;
  c.upstream = "host-malloc";
  c.touch = true;
  CalibrationPoint p;
  p.size = 64;
  p.allocate.count = p.deallocate.count = 1000;
  p.allocate.p50_ns = 20;
  p.allocate.p99_ns = 90;
  p.deallocate.p50_ns = 15;
  p.deallocate.p99_ns = 40;
  CalibrationPoint failed;
  failed.size = std::uint64_t{1} << 30;
  failed.failed = true;
  c.points = {p, failed};
  c.hit_ns = 12.34;
  EXPECT_EQ(calibration_text(c),
            "host-malloc, every page touched: latency by size (median and p99 of each call)\n"
            "    size   pairs  alloc p50  alloc p99  free p50  free p99\n"
            "    64 B   1,000      20 ns      90 ns     15 ns     40 ns\n"
            "1.00 GiB  failed\n"
            "cached allocate+free of `exact` (hit_ns): 12.3 ns\n");
}

TEST(MergedReportText, a_partial_merge_says_why) {
  const ResolvedTrace trace = resolve(read_trace(kTiny));
  const TraceSummary summary = summarize(read_trace(kTiny), trace);
  ReportContext context;
  nlohmann::json report = make_report(summary, {replay_sim(trace, "exact").result}, context);
  const std::string table = merged_report_text(report, "m.json");
  EXPECT_EQ(table.rfind("strategy  requests", 0), 0u) << table;
  EXPECT_EQ(table.find("(partial"), std::string::npos) << table;
  report["partial"] = true;
  EXPECT_TRUE(merged_report_text(report, "m.json")
                  .ends_with("\n(partial: an input report was cut short)\n"));
  report["sweep"] = nlohmann::json::object();
  EXPECT_TRUE(merged_report_text(report, "m.json")
                  .ends_with("\n(partial: some sweep points have no result)\n"));
}

}  // namespace
}  // namespace alloclab
