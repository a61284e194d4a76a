// End-to-end checks that damage, emptiness and odd inputs are reported where the user looks:
// a trace from which nothing could be read, directories, endless input, pipes, alloclab's own
// Chrome export, a trace repaired before its replay.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace {

using Result = alloclab::test::CliResult;

Result run(const std::string& args) {
  return alloclab::test::run_cli(args);
}

const std::string kCli = ALLOCLAB_CLI;

class InputTrustCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("alloclab-input-trust-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A generated trace of several chunks, and its bytes.
  std::vector<char> generated(const std::string& file) const {
    const Result g = run("generate --shape transformer --events 300000 -o " + file);
    EXPECT_EQ(g.status, 0) << g.output;
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void write(const std::string& file, const std::vector<char>& bytes, std::size_t n) {
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(n));
  }
  static std::size_t first_chunk(const std::vector<char>& bytes) {
    const std::string text(bytes.begin(), bytes.end());
    return text.find("ALTC");
  }

  std::filesystem::path dir_;
};

// `head -c 400 x.alt > t.alt` (the header and part of the first chunk) gave exit 0 and an
// empty report from every command. A non-empty file of which nothing could be read is exit 2.
TEST_F(InputTrustCli, no_event_read_from_a_trace_with_chunks_is_exit_2_in_every_command) {
  const std::vector<char> bytes = generated(path("whole.alt"));
  const std::size_t chunk = first_chunk(bytes);
  ASSERT_NE(chunk, std::string::npos);
  const std::string cut = path("cut.alt");
  write(cut, bytes, chunk + 100);  // the header and the start of the first chunk
  const std::string expected =
      "alloclab: error: " + cut + "@" + std::to_string(chunk) + ", chunk 0: truncated chunk";
  for (const std::string& args :
       {"info " + cut, "info --json " + cut, "info --stacks " + cut, "replay " + cut + " -s exact",
        "sweep " + cut + " -s 'fifo-shrink:max={1MiB..2MiB:x2}'", "advise " + cut,
        "convert " + cut + " " + path("out.csv")}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output.rfind(expected, 0), 0u) << r.output;
    EXPECT_NE(r.output.find("; no event could be read from the file\n"), std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(path("out.csv")));
}

// A well-formed trace with no events is an empty trace, not an error.
TEST_F(InputTrustCli, a_header_only_alt_and_a_header_only_csv_are_empty_traces) {
  const std::vector<char> bytes = generated(path("whole.alt"));
  write(path("empty.alt"), bytes, first_chunk(bytes));
  std::ofstream(path("empty.csv")) << "time_ns,action,address,size\n";
  for (const char* name : {"empty.alt", "empty.csv"}) {
    const Result r = run("info " + path(name));
    EXPECT_EQ(r.status, 0) << name << "\n" << r.output;
    EXPECT_NE(r.output.find("events       0 "), std::string::npos) << r.output;
  }
}

// `info` of alloclab's own Chrome export said "not a PyTorch memory snapshot".
TEST_F(InputTrustCli, info_of_alloclabs_chrome_export_says_what_it_is) {
  const std::string exported = path("export.json");
  ASSERT_EQ(run("convert " + std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv " + exported).status, 0);
  const Result r = run("info " + exported);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(exported + ": a Chrome/Perfetto trace that alloclab wrote"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("read the trace it was made from (.alt, .csv)"), std::string::npos)
      << r.output;
}

// A CSV with only a failed allocation showed "peak live 0 B at +18446744073.71 s".
TEST_F(InputTrustCli, nothing_live_has_no_peak_time) {
  const std::string csv = path("failed.csv");
  std::ofstream(csv) << "time_ns,action,address,size\n18,alloc,0,64\n";
  const Result r = run("info " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("peak live    0 B (nothing was live)\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("18446744073"), std::string::npos) << r.output;
}

TEST_F(InputTrustCli, csv_times_that_go_backwards_are_a_load_warning) {
  const std::string csv = path("back.csv");
  std::ofstream(csv) << "time_ns,action,address,size\n100,alloc,0x10,8\n50,free,0x10,\n";
  const Result r = run("info " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("alloclab: warning: " + csv +
                          ":3: time_ns goes backwards (earlier than the row before), here first "
                          "and in 1 row(s) in all; the rows are replayed in file order\n"),
            std::string::npos)
      << r.output;
}

// A replay's numbers rest on the repaired trace when it had anomalies: the terminal says so,
// with a pointer to `alloclab info`; the JSON report carries the counts in its trace summary.
TEST_F(InputTrustCli, a_replay_of_a_repaired_trace_says_so) {
  const std::string csv = path("anomalies.csv");
  std::ofstream(csv) << "time_ns,action,address,size\n"
                     << "1,alloc,0x10,8\n2,free,0x20,\n3,free,0x10,\n4,free,0x10,\n";
  const std::string note =
      "(the trace has 2 anomalies (free of unknown address 1, double free "
      "1), repaired to be replayed: these numbers rest on the repaired "
      "trace; `alloclab info " +
      csv + "` says where they are)\n";
  const std::string report = path("report.json");
  for (const std::string& args :
       {"replay " + csv + " -s exact --json " + report,
        "sweep " + csv + " -s 'fifo-shrink:max={1KiB..2KiB:x2}'", "advise " + csv}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find(note), std::string::npos) << r.output;
  }
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(j["trace"]["anomalies"]["total"], 2);
  EXPECT_EQ(j["trace"]["first_anomalies"].size(), 2u);

  const Result clean = run("replay " + std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv -s exact");
  ASSERT_EQ(clean.status, 0) << clean.output;
  EXPECT_EQ(clean.output.find("repaired"), std::string::npos) << clean.output;
}

}  // namespace
