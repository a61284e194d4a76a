// Report files that made the report reader throw something other than InputError (a JSON type
// error with no file or key in it), or accept a negative count as 2^64 - 1. Each file in
// tests/data/fuzz/report/ is one such report; fuzz/findings.tsv says how it was found.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "alloclab/format/error.hpp"
#include "alloclab/replay/cost_model.hpp"
#include "alloclab/replay/merge.hpp"
#include "alloclab/replay/report.hpp"

namespace alloclab {
namespace {

const std::filesystem::path kReports =
    std::filesystem::path(ALLOCLAB_TEST_DATA) / "fuzz" / "report";

nlohmann::json load(const std::string& name) {
  std::ifstream in(kReports / name);
  return nlohmann::json::parse(in);
}

// What `alloclab merge` does with the report: an InputError naming the file and the key.
void expect_merge_refuses(const std::string& name, const std::string& expected) {
  const nlohmann::json report = load(name);
  try {
    (void)merge_reports({{name, report}, {name, report}});
    ADD_FAILURE() << name << ": accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(FuzzRegression, report_run_label_that_is_a_number_is_an_input_error) {
  expect_merge_refuses("run_label_is_a_number.json", "'label' is not a string");
}

TEST(FuzzRegression, report_runs_entry_that_is_not_an_object_is_an_input_error) {
  expect_merge_refuses("runs_entry_is_not_an_object.json", "'runs' entry is not an object");
}

TEST(FuzzRegression, report_series_value_that_is_a_string_is_an_input_error) {
  expect_merge_refuses("series_value_is_a_string.json", "series column 'time_ns'");
}

TEST(FuzzRegression, report_series_value_that_is_negative_is_an_input_error) {
  expect_merge_refuses("series_value_is_negative.json", "series column 'live_min'");
}

TEST(FuzzRegression, report_series_first_op_that_is_a_string_is_an_input_error) {
  expect_merge_refuses("series_first_op_is_a_string.json", "'first_op' is not a list");
}

TEST(FuzzRegression, report_wall_seconds_that_is_a_string_is_an_input_error) {
  expect_merge_refuses("wall_seconds_is_a_string.json", "'timing.wall_seconds' is not a number");
}

// A number beyond a double's range: the JSON parser throws out_of_range, not parse_error, and
// the cost-model reader let it through without the file name.
TEST(FuzzRegression, cost_model_with_1e999_is_an_input_error_naming_the_file) {
  const std::string path = ::testing::TempDir() + "/alloclab-cost-model-1e999.json";
  std::ofstream(path) << R"({"name": "x", "hit_ns": 1e999})";
  try {
    (void)load_cost_model(path);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not JSON"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(FuzzRegression, every_saved_report_input_is_refused_with_an_input_error) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kReports)) {
    const nlohmann::json report = load(entry.path().filename().string());
    EXPECT_THROW((void)merge_reports({{"a.json", report}, {"b.json", report}}), InputError)
        << entry.path();
    ++files;
  }
  EXPECT_GE(files, 6u);
}

}  // namespace
}  // namespace alloclab
