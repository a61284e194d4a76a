// Merging shard reports of a real sweep, and every way a merge refuses its inputs.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/error.hpp"
#include "alloclab/replay/latency.hpp"
#include "alloclab/replay/merge.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sweep.hpp"

namespace alloclab {
namespace {

using nlohmann::json;

const std::vector<std::string> kTemplates = {
    "exact", "fifo-shrink:match={exact,best-fit},max={256KiB..16MiB:x2}"};

struct Loaded {
  ResolvedTrace resolved;
  TraceSummary summary;
};

Loaded load(const char* name) {
  const Trace trace = read_alt(std::string(ALLOCLAB_TRACES_DIR) + "/" + name);
  Loaded out;
  out.resolved = resolve(trace);
  out.summary = summarize(trace, out.resolved);
  return out;
}

const Loaded& cnn() {
  static const Loaded loaded = load("cnn-inference.alt");
  return loaded;
}

json sweep_report(const Loaded& trace, Shard shard) {
  ReplayOptions options;
  const SweepRun run = run_sweep(trace.resolved, kTemplates, shard, options, 2);
  return make_sweep_report(trace.summary, run, ReportContext{});
}

// The reports of shards 0..n-1 of the sweep, as merge inputs named shard-i.json (replayed once
// per n and kept, so that the tests stay fast).
std::vector<MergeInput> shards(std::size_t n) {
  static std::map<std::size_t, std::vector<MergeInput>> cache;
  std::vector<MergeInput>& out = cache[n];
  if (out.empty())
    for (std::size_t i = 0; i < n; ++i)
      out.push_back({"shard-" + std::to_string(i) + ".json", sweep_report(cnn(), Shard{i, n})});
  return out;
}

// Results without their timings (which differ between any two runs).
json without_timing(json results) {
  for (json& r : results) r.erase("timing");
  return results;
}

std::string merge_error(const std::vector<MergeInput>& inputs, MergeOptions options = {}) {
  try {
    (void)merge_reports(inputs, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, shards_of_a_sweep_merge_to_the_unsharded_report) {
  const json full = sweep_report(cnn(), Shard{});
  ASSERT_EQ(full["results"].size(), 15u);
  std::vector<MergeInput> inputs = shards(3);
  std::swap(inputs[0], inputs[2]);  // input order does not matter
  const json merged = merge_reports(inputs);
  EXPECT_EQ(without_timing(merged["results"]), without_timing(full["results"]));
  EXPECT_EQ(merged["sweep"]["points"], full["sweep"]["points"]);
  EXPECT_EQ(merged["sweep"]["point_indices"], full["sweep"]["point_indices"]);
  EXPECT_EQ(merged["sweep"]["shard"], (json{{"index", 0}, {"count", 1}}));
  EXPECT_EQ(merged["partial"], false);
  EXPECT_EQ(merged["merged_from"].size(), 3u);
  EXPECT_EQ(merged["merged_from"][0]["source"], "shard-2.json");
  EXPECT_EQ(merged["trace"], full["trace"]);
}

TEST(Merge, missing_points_are_listed) {
  std::vector<MergeInput> inputs = shards(3);
  inputs.erase(inputs.begin() + 1);
  const std::string message = merge_error(inputs);
  EXPECT_NE(message.find("5 of 15 sweep points have no result: 1, 4, 7, 10, 13"), std::string::npos)
      << message;
  EXPECT_NE(message.find("--allow-partial"), std::string::npos) << message;
}

TEST(Merge, allow_partial_marks_the_report_partial) {
  std::vector<MergeInput> inputs = shards(3);
  inputs.erase(inputs.begin() + 1);
  MergeOptions options;
  options.allow_partial = true;
  const json merged = merge_reports(inputs, options);
  EXPECT_EQ(merged["partial"], true);
  EXPECT_EQ(merged["results"].size(), 10u);
  EXPECT_EQ(merged["sweep"]["point_indices"], (json{0, 2, 3, 5, 6, 8, 9, 11, 12, 14}));
  EXPECT_EQ(merged["results"][1]["strategy"], merged["sweep"]["points"][2]);
}

TEST(Merge, another_trace_is_refused_naming_the_file) {
  std::vector<MergeInput> inputs = shards(2);
  inputs[1] = {"other.json", sweep_report(load("transformer-varlen.alt"), Shard{1, 2})};
  const std::string message = merge_error(inputs);
  EXPECT_NE(message.find("other.json: not the same trace as shard-0.json"), std::string::npos)
      << message;
}

TEST(Merge, another_schema_version_is_refused_naming_the_file) {
  std::vector<MergeInput> inputs = shards(2);
  inputs[1].report["schema_version"] = report_schema_version + 1;
  const std::string message = merge_error(inputs);
  EXPECT_NE(message.find("shard-1.json: schema_version"), std::string::npos) << message;
}

TEST(Merge, another_sweep_is_refused_naming_the_file) {
  std::vector<MergeInput> inputs = shards(2);
  inputs[1].report["sweep"]["points"][0] = "best-fit";
  const std::string message = merge_error(inputs);
  EXPECT_NE(message.find("shard-1.json: not a shard of the same sweep"), std::string::npos)
      << message;
}

TEST(Merge, identical_duplicates_are_fine_and_disagreeing_ones_are_not) {
  std::vector<MergeInput> inputs = shards(2);
  MergeInput again = inputs[0];
  again.source = "again.json";
  again.report["results"][0]["timing"]["wall_seconds"] = 123.0;  // timings may differ
  inputs.push_back(again);
  EXPECT_EQ(merge_reports(inputs)["results"].size(), 15u);

  inputs.back().report["results"][1]["evictions"] = std::uint64_t{999999};
  const std::string message = merge_error(inputs);
  EXPECT_NE(message.find("again.json: point 2"), std::string::npos) << message;
  EXPECT_NE(message.find("has another result in shard-0.json"), std::string::npos) << message;
}

TEST(Merge, plain_replay_reports_concatenate_in_input_order) {
  const json a =
      make_report(cnn().summary, {replay_sim(cnn().resolved, "best-fit").result}, ReportContext{});
  const json b =
      make_report(cnn().summary, {replay_sim(cnn().resolved, "exact").result}, ReportContext{});
  const json merged = merge_reports({{"a.json", a}, {"b.json", b}});
  ASSERT_EQ(merged["results"].size(), 2u);
  EXPECT_EQ(merged["results"][0]["strategy"], "best-fit");
  EXPECT_EQ(merged["results"][1]["strategy"], "exact");
  EXPECT_FALSE(merged.contains("sweep"));

  const std::string message = merge_error({{"a.json", a}, {"s.json", shards(1)[0].report}});
  EXPECT_NE(message.find("s.json is a sweep report but a.json is not"), std::string::npos)
      << message;
}

// `merge m.json r.json r.json` wrote every strategy twice. The same strategy from several plain
// reports is kept once, in the place it first had; only a measurement may differ.
TEST(Merge, a_strategy_in_several_plain_reports_is_kept_once) {
  const json r = make_report(
      cnn().summary,
      {replay_sim(cnn().resolved, "exact").result, replay_sim(cnn().resolved, "best-fit").result},
      ReportContext{});
  const json twice = merge_reports({{"r.json", r}, {"r.json", r}});
  ASSERT_EQ(twice["results"].size(), 2u);
  EXPECT_EQ(twice["results"], r["results"]);
  EXPECT_EQ(twice["merged_from"].size(), 2u);

  json other = make_report(cnn().summary,
                           {replay_sim(cnn().resolved, "per-run-pool").result,
                            replay_sim(cnn().resolved, "exact").result},
                           ReportContext{});
  other["results"][1]["timing"]["wall_seconds"] = 123.0;  // measured: may differ
  other["results"][1]["wall_seconds"] = 4.5;
  const json overlapping = merge_reports({{"r.json", r}, {"other.json", other}});
  ASSERT_EQ(overlapping["results"].size(), 3u);
  EXPECT_EQ(overlapping["results"][0], r["results"][0]);
  EXPECT_EQ(overlapping["results"][1]["strategy"], "best-fit");
  EXPECT_EQ(overlapping["results"][2]["strategy"], "per-run-pool");
}

TEST(Merge, a_strategy_whose_plain_reports_disagree_is_refused_naming_both_files) {
  const json r =
      make_report(cnn().summary, {replay_sim(cnn().resolved, "exact").result}, ReportContext{});
  json limited = r;
  limited["results"][0]["failed_requests"] = std::uint64_t{7};  // e.g. another --memory-limit
  const std::string message = merge_error({{"r.json", r}, {"limited.json", limited}});
  EXPECT_NE(message.find("limited.json: strategy exact has another result in r.json"),
            std::string::npos)
      << message;
}

TEST(Merge, real_replay_latency_histograms_are_kept_and_checked) {
  StrategyResult real = replay_sim(cnn().resolved, "exact").result;
  LatencyHistogram h;
  for (std::uint64_t v : {20ull, 25ull, 4'000ull}) h.record(v);
  real.latency["strategy_allocate"] = h.summary();
  const json a = make_report(cnn().summary, {real}, ReportContext{});
  const json merged = merge_reports({{"a.json", a}});
  EXPECT_EQ(merged["results"][0]["latency"]["strategy_allocate"]["histogram"],
            json::parse("[[21, 1], [25, 1], [4095, 1]]"));

  json broken = a;
  broken["results"][0]["latency"]["strategy_allocate"]["histogram"][2][1] = std::uint64_t{5};
  const std::string message = merge_error({{"a.json", a}, {"broken.json", broken}});
  EXPECT_NE(message.find("broken.json"), std::string::npos) << message;
  EXPECT_NE(message.find("histogram counts add up to 7, not 3"), std::string::npos) << message;
}

TEST(Merge, malformed_inputs_are_refused_naming_the_file) {
  EXPECT_NE(merge_error({{"x.json", json::array()}}).find("x.json: not a report"),
            std::string::npos);
  json no_results = shards(1)[0].report;
  no_results.erase("results");
  EXPECT_NE(merge_error({{"y.json", no_results}}).find("y.json: report has no 'results'"),
            std::string::npos);
  json bad_index = shards(1)[0].report;
  bad_index["sweep"]["point_indices"][0] = 99;
  EXPECT_NE(merge_error({{"z.json", bad_index}}).find("z.json: sweep.point_indices holds 99"),
            std::string::npos);
  EXPECT_NE(merge_error({}).find("no reports"), std::string::npos);
}

TEST(Merge, describe_indices_folds_runs) {
  EXPECT_EQ(describe_indices({0, 3, 4, 5, 9}), "0, 3-5, 9");
  EXPECT_EQ(describe_indices({}), "");
  EXPECT_EQ(describe_indices({1, 3, 5, 7}, 2), "1, 3, and 2 more");
}

}  // namespace
}  // namespace alloclab
