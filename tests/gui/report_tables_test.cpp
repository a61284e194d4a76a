#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "alloclab/format/error.hpp"
#include "gui/model.hpp"
#include "gui/views.hpp"
#include "gui_test_util.hpp"

namespace alloclab::gui {
namespace {

// The golden files hold a report's "results" list.
std::shared_ptr<ReportDoc> golden_report(const std::string& name) {
  std::ifstream in(test::golden(name));
  nlohmann::json report = {
      {"schema_version", 1}, {"mode", "sim"}, {"results", nlohmann::json::parse(in)}};
  return report_from_json(std::move(report), name);
}

std::string csv(const Table& t) {
  std::ostringstream out;
  write_csv(out, t);
  return out.str();
}

TEST(ReportTables, overview_rows_hold_the_reports_exact_numbers) {
  const auto report = golden_report("transformer-varlen.alt.json");
  const Table t = overview_table(*report);
  ASSERT_EQ(t.rows.size(), report->json["results"].size());
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const nlohmann::json& j = report->json["results"][r];
    EXPECT_EQ(t.rows[r][0].csv, j["strategy"].get<std::string>());
    for (std::size_t c = 1; c < t.columns.size(); ++c) {
      const std::string& key = t.columns[c].name;
      if (key == "hit_rate")
        EXPECT_DOUBLE_EQ(std::stod(t.rows[r][c].csv), j[key].get<double>());
      else
        EXPECT_EQ(t.rows[r][c].csv, std::to_string(j[key].get<std::uint64_t>())) << key;
    }
  }
}

TEST(ReportTables, csv_quotes_specs_and_keeps_exact_integers) {
  Table t;
  t.columns = {{"strategy", Better::none}, {"bytes", Better::lower}};
  t.rows = {{text_cell("fifo-shrink:max=64MiB,match=best-fit"), bytes_cell(123456789)},
            {text_cell("say \"hi\""), bytes_cell(0)}};
  EXPECT_EQ(
      csv(t),
      "strategy,bytes\n\"fifo-shrink:max=64MiB,match=best-fit\",123456789\n\"say \"\"hi\"\"\",0\n");
}

TEST(ReportTables, best_value_per_column_follows_the_columns_direction) {
  Table t;
  t.columns = {{"s", Better::none},
               {"hit_rate", Better::higher},
               {"reserved", Better::lower},
               {"same", Better::lower}};
  t.rows = {{text_cell("a"), ratio_cell(0.5, true), bytes_cell(10), count_cell(1)},
            {text_cell("b"), ratio_cell(0.9, true), bytes_cell(30), count_cell(1)},
            {text_cell("c"), ratio_cell(0.7, true), bytes_cell(5), count_cell(1)}};
  using Marks = std::vector<std::vector<bool>>;
  EXPECT_EQ(best_cells(t), (Marks{{false, false, false},
                                  {false, true, false},
                                  {false, false, true},
                                  {false, false, false}}));
}

// Three strategies with no upstream frees and one with some: all three are best, not the first.
TEST(ReportTables, every_row_tied_for_the_best_value_is_marked) {
  Table t;
  t.columns = {{"s", Better::none}, {"upstream_frees", Better::lower}};
  t.rows = {{text_cell("best-fit"), count_cell(0)},
            {text_cell("exact"), count_cell(0)},
            {text_cell("fifo-shrink"), count_cell(337)},
            {text_cell("pytorch"), count_cell(0)}};
  EXPECT_EQ(best_cells(t)[1], (std::vector<bool>{true, true, false, true}));
}

TEST(ReportTables, memory_table_and_series_pyramids_come_from_the_report) {
  const auto dir = test::scratch_dir("memory-table");
  const std::string path = (dir / "cnn.json").string();
  const auto cli =
      test::run_cli("replay " + test::traces_dir() +
                    "/cnn-inference.alt -s exact -s fifo-shrink:max=1MiB --json " + path);
  ASSERT_EQ(cli.status, 0) << cli.output;
  std::ifstream in(path);
  const auto report = report_from_json(nlohmann::json::parse(in), path);
  ASSERT_EQ(report->reserved.size(), report->results.size());
  for (std::size_t i = 0; i < report->results.size(); ++i) {
    const StrategyResult& r = report->results[i];
    double lo = 0, hi = 0;
    ASSERT_TRUE(report->reserved[i].range(0, 1e30, lo, hi));
    EXPECT_EQ(hi, static_cast<double>(r.metrics.peak_reserved_bytes)) << r.strategy;
  }
  const Table t = memory_table(*report);
  EXPECT_EQ(t.rows[0][2].csv, std::to_string(report->results[0].metrics.peak_reserved_bytes));
}

TEST(ReportTables, diff_matches_strategies_by_spec_and_gives_b_minus_a) {
  const auto a = golden_report("transformer-varlen.alt.json");
  const auto b = golden_report("cnn-inference.alt.json");
  const Table t = diff_table(*a, *b);
  ASSERT_FALSE(t.rows.empty());
  for (const auto& row : t.rows) {
    const std::string spec = row[0].csv;
    auto find = [&](const ReportDoc& d) {
      for (const auto& r : d.results)
        if (r.strategy == spec) return r.metrics;
      ADD_FAILURE() << spec;
      return Metrics{};
    };
    const Metrics ma = find(*a), mb = find(*b);
    EXPECT_EQ(row[9].sort, static_cast<double>(mb.peak_reserved_bytes) -
                               static_cast<double>(ma.peak_reserved_bytes));
    EXPECT_EQ(row[6].sort,
              static_cast<double>(mb.upstream_allocs) - static_cast<double>(ma.upstream_allocs));
  }
}

// A sweep report of three points, one per spec, whose counters are all 1 (hits 0).
std::shared_ptr<const ReportDoc> three_point_sweep(const std::vector<std::string>& specs) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["results"] = nlohmann::json::array();
  for (const std::string& spec : specs) {
    nlohmann::json r = {{"strategy", spec}};
    for (const char* key : {"requests", "hits", "misses", "upstream_allocs", "upstream_frees",
                            "evictions", "peak_live_bytes", "peak_reserved_bytes",
                            "final_cached_bytes", "slack_bytes", "failed_requests"})
      r[key] = std::uint64_t{1};
    r["hits"] = std::uint64_t{0};
    j["results"].push_back(r);
  }
  j["sweep"] = {{"points", {"a", "b", "c"}}};
  return report_from_json(j, "sweep.json");
}

TEST(ReportTables, sweep_axis_finds_the_swept_size) {
  const auto report =
      three_point_sweep({"fifo-shrink:max=1MiB", "fifo-shrink:max=2MiB", "fifo-shrink:max=4MiB"});
  const SweepAxis axis = sweep_axis(*report);
  EXPECT_EQ(axis.key, "max");
  EXPECT_TRUE(axis.bytes);
  EXPECT_EQ(axis.values, (std::vector<double>{1 << 20, 2 << 20, 4 << 20}));
  EXPECT_EQ(sweep_table(*report).rows.size(), 3u);
}

TEST(ReportTables, sweep_axis_reads_the_settings_of_a_pytorch_conf_string) {
  const auto report = three_point_sweep(
      {"pytorch-conf:\"roundup_power2_divisions:[256:1,>:4],max_split_size_mb:64\"",
       "pytorch-conf:\"roundup_power2_divisions:[256:1,>:4],max_split_size_mb:128\"",
       "pytorch-conf:\"roundup_power2_divisions:[256:1,>:4],max_split_size_mb:256\""});
  const SweepAxis axis = sweep_axis(*report);
  EXPECT_EQ(axis.key, "max_split_size_mb");
  EXPECT_FALSE(axis.bytes);
  EXPECT_EQ(axis.values, (std::vector<double>{64, 128, 256}));
}

TEST(ReportTables, a_json_that_is_not_a_report_is_refused_with_its_name) {
  try {
    report_from_json(nlohmann::json{{"hello", 1}}, "not-a-report.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not-a-report.json"), std::string::npos);
  }
  EXPECT_THROW(
      report_from_json(nlohmann::json{{"schema_version", 7}, {"results", nlohmann::json::array()}},
                       "x"),
      InputError);
}

TEST(ReportTables, live_bytes_follow_every_operation_of_the_trace) {
  const auto doc = load_trace_doc(test::traces_dir() + "/tiny.csv");
  ASSERT_EQ(doc->live.size(), doc->resolved.ops.size());
  double lo = 0, hi = 0;
  ASSERT_TRUE(doc->live.range(0, 1e30, lo, hi));
  EXPECT_EQ(hi, static_cast<double>(doc->summary["peak_live_bytes"].get<std::uint64_t>()));
}

}  // namespace
}  // namespace alloclab::gui
