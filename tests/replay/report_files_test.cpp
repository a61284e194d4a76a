// Report files: written whole with a final newline, read back with errors that name the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <unistd.h>

#include "alloclab/format/error.hpp"
#include "alloclab/format/formats.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/merge.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {
namespace {

namespace fs = std::filesystem;

class ReportFiles : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("alloclab-report-files-" + std::to_string(::getpid()) + "-" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string content(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  std::string error_of_reading(const std::string& file) const {
    try {
      (void)read_report_file(file);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(ReportFiles, a_json_file_is_written_indented_by_one_with_a_final_newline) {
  const nlohmann::json value = {{"b", 2}, {"a", {1, 2}}, {"label", std::string("caf\xe9")}};
  write_json_file(path("v.json"), value);
  std::ostringstream expected;
  write_json(expected, value, 1);
  EXPECT_EQ(content(path("v.json")), expected.str() + "\n");
  // Bytes that are not UTF-8 (a Latin-1 label) are replaced, not a failed write.
  EXPECT_NE(content(path("v.json")).find("caf\xef\xbf\xbd"), std::string::npos);
  EXPECT_EQ(read_report_file(path("v.json"))["b"], 2);
}

TEST_F(ReportFiles, a_report_file_is_write_report_and_a_newline) {
  const Trace trace = read_trace(std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv");
  const ResolvedTrace resolved = resolve(trace);
  const TraceSummary summary = summarize(trace, resolved);
  const std::vector<StrategyResult> results = {replay_sim(resolved, "exact").result};
  ReportContext context;
  context.command_line = "alloclab replay tiny.csv -s exact";
  write_report_file(path("r.json"), summary, results, context);
  std::ostringstream expected;
  write_report(expected, summary, results, context);
  EXPECT_EQ(content(path("r.json")), expected.str() + "\n");
}

TEST_F(ReportFiles, reading_names_the_file_and_what_is_wrong) {
  EXPECT_EQ(error_of_reading(path("missing.json")), path("missing.json") + ": cannot open");
  EXPECT_EQ(error_of_reading(dir_.string()), dir_.string() + ": is a directory");
  write("cut.json", "{\"results\": [");
  const std::string cut = error_of_reading(path("cut.json"));
  EXPECT_EQ(cut.rfind(path("cut.json") + ": not JSON (", 0), 0u) << cut;
  write("huge.json", "{\"x\": 1e999}");
  const std::string huge = error_of_reading(path("huge.json"));
  EXPECT_EQ(huge.rfind(path("huge.json") + ": not JSON (", 0), 0u) << huge;
}

}  // namespace
}  // namespace alloclab
