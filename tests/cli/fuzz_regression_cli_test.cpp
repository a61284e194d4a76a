// JSON inputs of the CLI with a number beyond a double's range (1e999): the parser refuses it
// with out_of_range, not parse_error, and `merge` let that through as a bare library message
// with no file name. Found with the report fuzz target (fuzz/findings.tsv).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cli_test_util.hpp"

namespace alloclab::test {
namespace {

TEST(FuzzRegression, merge_of_a_report_with_1e999_names_the_file) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("alloclab-fuzz-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string report = (dir / "huge.json").string();
  std::ofstream(report) << R"({"schema_version": 1e999})";
  const CliResult r = run_cli("merge " + (dir / "out.json").string() + " " + report);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(report + ": not JSON"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "out.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace alloclab::test
