// End-to-end checks of `alloclab sweep`, `merge` and `advise`: sharded sweeps merge to the full
// sweep, bad input is one line and exit status 2.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace {

using Result = alloclab::test::CliResult;

Result run(const std::string& args) {
  return alloclab::test::run_cli(args);
}

// A fresh directory per test, removed at the end.
class SweepCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("alloclab-sweep-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

const std::string kTrace = std::string(ALLOCLAB_TRACES_DIR) + "/cnn-inference.alt";
const std::string kTemplates =
    "-s exact -s 'fifo-shrink:match={exact,best-fit},max={256KiB..16MiB:x2}'";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

nlohmann::json results_without_timing(const nlohmann::json& report) {
  nlohmann::json results = report.at("results");
  for (nlohmann::json& r : results) r.erase("timing");
  return results;
}

TEST_F(SweepCli, shards_merged_equal_the_full_sweep) {
  const Result full =
      run("sweep " + kTrace + " " + kTemplates + " -j 2 --json " + path("full.json"));
  ASSERT_EQ(full.status, 0) << full.output;
  EXPECT_NE(full.output.find("15 points in all"), std::string::npos) << full.output;
  for (const char* shard : {"0", "1"}) {
    const Result r = run("sweep " + kTrace + " " + kTemplates + " --shard " + shard + "/2 --json " +
                         path(std::string("shard") + shard + ".json"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find(std::string("shard ") + shard + "/2 replays"), std::string::npos)
        << r.output;
  }
  const Result merged =
      run("merge " + path("merged.json") + " " + path("shard1.json") + " " + path("shard0.json"));
  ASSERT_EQ(merged.status, 0) << merged.output;
  EXPECT_NE(merged.output.find("fifo-shrink:match=best-fit,max=16MiB"), std::string::npos);

  const nlohmann::json a = read_json(path("full.json"));
  const nlohmann::json b = read_json(path("merged.json"));
  EXPECT_EQ(results_without_timing(a), results_without_timing(b));
  EXPECT_EQ(a["sweep"]["points"], b["sweep"]["points"]);
  EXPECT_EQ(a["sweep"]["point_indices"], b["sweep"]["point_indices"]);
  EXPECT_EQ(a["sweep"]["templates"],
            (nlohmann::json{"exact", "fifo-shrink:match={exact,best-fit},max={256KiB..16MiB:x2}"}));
  EXPECT_EQ(b["partial"], false);
}

TEST_F(SweepCli, merge_with_a_missing_shard_fails_unless_partial_is_allowed) {
  ASSERT_EQ(
      run("sweep " + kTrace + " " + kTemplates + " --shard 0/3 --json " + path("s0.json")).status,
      0);
  const Result missing = run("merge " + path("m.json") + " " + path("s0.json"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.output.find("10 of 15 sweep points have no result: 1-2, 4-5"),
            std::string::npos)
      << missing.output;
  const Result partial = run("merge --allow-partial " + path("m.json") + " " + path("s0.json"));
  ASSERT_EQ(partial.status, 0) << partial.output;
  EXPECT_EQ(read_json(path("m.json"))["partial"], true);
  // The output exists now: merge refuses to overwrite it unless told.
  const Result again = run("merge --allow-partial " + path("m.json") + " " + path("s0.json"));
  EXPECT_EQ(again.status, 2);
  EXPECT_NE(again.output.find("already exists"), std::string::npos) << again.output;
  EXPECT_EQ(run("merge -f --allow-partial " + path("m.json") + " " + path("s0.json")).status, 0);
}

TEST_F(SweepCli, bad_template_is_one_line_and_exit_status_2) {
  const Result r = run("sweep " + kTrace + " -s 'fifo-shrink:max={4GiB..1MiB:x2}'");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output.rfind("alloclab: error: sweep template 'fifo-shrink:max={4GiB..1MiB:x2}', "
                           "group 1 '{4GiB..1MiB:x2}': start a (4GiB) is greater than end b "
                           "(1MiB); accepted forms: ",
                           0),
            0u)
      << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
}

TEST_F(SweepCli, bad_shard_and_bad_point_are_exit_status_2) {
  const Result shard = run("sweep " + kTrace + " -s exact --shard 2/2");
  EXPECT_EQ(shard.status, 2);
  EXPECT_NE(shard.output.find("invalid shard '2/2'"), std::string::npos) << shard.output;
  const Result point = run("sweep " + kTrace + " -s 'fifo-shrink:maxx={1MiB..2MiB:x2}'");
  EXPECT_EQ(point.status, 2);
  EXPECT_NE(point.output.find("sweep point 0 'fifo-shrink:maxx=1MiB'"), std::string::npos)
      << point.output;
}

TEST_F(SweepCli, csv_has_a_leading_point_column) {
  ASSERT_EQ(
      run("sweep " + kTrace + " " + kTemplates + " --shard 1/2 --csv " + path("s.csv")).status, 0);
  std::ifstream in(path("s.csv"));
  std::string header, first;
  std::getline(in, header);
  std::getline(in, first);
  EXPECT_EQ(header.rfind("point,strategy,requests,", 0), 0u) << header;
  EXPECT_EQ(first.rfind("1,\"fifo-shrink:match=exact,max=256KiB\",", 0), 0u) << first;
}

TEST_F(SweepCli, advise_answers_in_plain_language_and_json) {
  const Result r = run("advise " + std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv -j 2 --json " +
                       path("advice.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("fifo-shrink:max=3136KiB keeps 100.0% of exact's hit rate"),
            std::string::npos)
      << r.output;
  const nlohmann::json j = read_json(path("advice.json"));
  ASSERT_EQ(j["advice"].size(), 2u);
  EXPECT_EQ(j["advice"][1]["recommended"]["strategy"], "fifo-shrink:match=best-fit,max=2112KiB");
  EXPECT_EQ(j["target"], 0.99);
  const Result bad = run("advise " + std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv --target 2");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("out of range"), std::string::npos) << bad.output;
}

}  // namespace

namespace {

// Host blocks of 8, 100, 24 and 4096 bytes (the last aligned at 128), a mapping of 8192 bytes,
// and an 8-byte device block.
std::string mixed_trace() {
  return "time_ns,thread,action,address,size,device,kind,alignment,label\n"
         "100,1,alloc,0x1000,8,cpu,host,,\n"
         "110,1,alloc,0x2000,100,cpu,host,,\n"
         "120,1,alloc,0x3000,24,cpu,host,,\n"
         "130,1,alloc,0x4000,4096,cpu,host,128,\n"
         "135,1,alloc,0x8000,8192,cpu,mapped,,\n"
         "140,1,alloc,0x5000,8,cuda:0,device,,\n"
         "150,1,free,0x1000,,cpu,host,,\n"
         "160,1,free,0x2000,,cpu,host,,\n"
         "170,1,free,0x3000,,cpu,host,,\n"
         "180,1,free,0x4000,,cpu,host,,\n"
         "185,1,free,0x8000,,cpu,mapped,,\n"
         "190,1,free,0x5000,,cuda:0,device,,\n";
}

}  // namespace

TEST_F(SweepCli, min_size_leaves_small_host_blocks_to_the_real_allocator) {
  const std::string trace = path("mixed.csv");
  std::ofstream(trace) << mixed_trace();
  const Result replay =
      run("replay " + trace + " -s exact --min-size 64 --json " + path("replay.json"));
  ASSERT_EQ(replay.status, 0) << replay.output;
  EXPECT_NE(replay.output.find("(--min-size 64: 3 host allocations (4.03 KiB) below it or aligned "
                               "above 64 B, and 1 mappings, are left to the real allocator, not "
                               "replayed)\n"),
            std::string::npos)
      << replay.output;
  const nlohmann::json r = read_json(path("replay.json"));
  EXPECT_EQ(r["trace"]["allocations"], 2);  // 100 bytes on the host, 8 on the device
  EXPECT_EQ(r["trace"]["anomalies"]["free_unknown"], 0);
  EXPECT_EQ(r["trace"]["below_min_size"], nlohmann::json({{"min_size", 64},
                                                          {"allocations", 3},
                                                          {"bytes", 4128},
                                                          {"over_aligned", 1},
                                                          {"mappings", 1}}));
  EXPECT_EQ(r["results"][0]["requests"], 2);

  const Result sweep =
      run("sweep " + trace + " -s 'fifo-shrink:max={1KiB..2KiB:x2}' --min-size 64 --json " +
          path("sweep.json"));
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  EXPECT_EQ(read_json(path("sweep.json"))["trace"]["below_min_size"]["allocations"], 3);

  const Result info = run("info " + trace + " --min-size 64");
  ASSERT_EQ(info.status, 0) << info.output;
  EXPECT_NE(info.output.find("left out     3 host allocations (4.03 KiB) below --min-size 64 B or "
                             "aligned above 64 B (1 for their alignment), and 1 mappings: not "
                             "counted above\n"),
            std::string::npos)
      << info.output;

  // A .alt trace (streamed as it is resolved) is filtered alike.
  ASSERT_EQ(run("convert " + trace + " " + path("mixed.alt")).status, 0);
  ASSERT_EQ(
      run("replay " + path("mixed.alt") + " -s exact --min-size 64 --json " + path("alt.json"))
          .status,
      0);
  EXPECT_EQ(read_json(path("alt.json"))["trace"]["below_min_size"], r["trace"]["below_min_size"]);

  // Without it, nothing is left out and the report has no such key.
  ASSERT_EQ(run("replay " + trace + " -s exact --json " + path("all.json")).status, 0);
  const nlohmann::json all = read_json(path("all.json"));
  EXPECT_EQ(all["trace"]["allocations"], 6);
  EXPECT_FALSE(all["trace"].contains("below_min_size"));
  // Sizes take units, as run's --min-size does.
  ASSERT_EQ(run("replay " + trace + " -s exact --min-size 1KiB --json " + path("kib.json")).status,
            0);
  EXPECT_EQ(read_json(path("kib.json"))["trace"]["below_min_size"]["min_size"], 1024);
  // A negative size is refused as record's is.
  const Result negative = run("replay " + trace + " -s exact --min-size -1");
  EXPECT_EQ(negative.status, 2) << negative.output;
}
