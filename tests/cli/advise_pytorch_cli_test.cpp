// End-to-end checks of `alloclab advise --pytorch` on snapshot pickles: the recommended lines
// (pasteable), the JSON report, the all-OOM answer, refusals, and a snapshot of realistic size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "tests/format/interchange/pickle_writer.hpp"
#include "tests/real_size.hpp"
#include "tests/replay/pytorch_workload.hpp"

namespace {

using alloclab::test::CliResult;
using alloclab::test::run_cli;
using alloclab::test::SnapshotEntry;

constexpr std::uint64_t kMiB = 1024 * 1024;

// A fresh directory per test, removed at the end.
class AdvisePyTorchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("alloclab-advise-pytorch-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A snapshot pickle of `entries` (alloc / free_completed, one microsecond apart).
  std::string snapshot(const std::string& name, const std::vector<SnapshotEntry>& entries) {
    const std::string file = path(name);
    std::ofstream(file, std::ios::binary) << alloclab::test::snapshot_pickle(entries);
    return file;
  }

  std::filesystem::path dir_;
};

// Entries from (action, slot, MiB) steps; a slot stands for an address.
std::vector<SnapshotEntry> entries(
    const std::vector<std::tuple<const char*, std::uint64_t, std::uint64_t>>& steps) {
  std::vector<SnapshotEntry> out;
  std::int64_t time = 1700000000000000;
  for (const auto& [action, slot, mib] : steps)
    out.push_back({action, 0x7f0000000000 + slot * 0x40000000, mib * kMiB, 0, ++time});
  return out;
}

// 100 MiB freed, 30 MiB kept, 100 MiB again: by default the 30 MiB splits the cached segment and
// the second 100 MiB needs a new one, which 150 MiB cannot hold (pytorch_advice_test.cpp has the
// arithmetic); with max_split_size_mb the 100 MiB segment is never split. `then_200` asks 200
// MiB more (event 4), which no setting fits under 150 MiB.
std::vector<SnapshotEntry> fragmenting(bool then_200 = false) {
  std::vector<std::tuple<const char*, std::uint64_t, std::uint64_t>> steps = {
      {"alloc", 0, 100}, {"free_completed", 0, 100}, {"alloc", 1, 30}, {"alloc", 2, 100}};
  if (then_200) steps.emplace_back("alloc", 3, 200);
  steps.emplace_back("free_completed", 1, 30);
  steps.emplace_back("free_completed", 2, 100);
  return entries(steps);
}

// The line that follows `comment` in the output (the pasteable one).
std::string line_after(const std::string& output, const std::string& comment) {
  const std::size_t at = output.find("\n" + comment);
  if (at == std::string::npos) return "";
  const std::size_t start = output.find('\n', at + 1) + 1;
  return output.substr(start, output.find('\n', start) - start);
}

// Ten 33 MiB blocks, freed, then 37 MiB: expandable segments reserve least (340 MiB in 17
// pages), divisions 4 call least (10 segments of 40 MiB).
std::vector<SnapshotEntry> reuse_for_memory() {
  std::vector<std::tuple<const char*, std::uint64_t, std::uint64_t>> steps;
  for (std::uint64_t k = 0; k < 10; ++k) steps.emplace_back("alloc", k, 33);
  for (std::uint64_t k = 0; k < 10; ++k) steps.emplace_back("free_completed", k, 33);
  steps.emplace_back("alloc", 10, 37);
  steps.emplace_back("free_completed", 10, 37);
  return entries(steps);
}

TEST_F(AdvisePyTorchCli, recommends_the_max_split_size_that_avoids_a_fragmentation_oom) {
  const std::string snap = snapshot("frag.pickle", fragmenting());
  const CliResult r = run_cli("advise --pytorch " + snap + " --memory-limit 150MiB -j 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("\nexpandable_segments:True  "), std::string::npos) << r.output;
  // The table: the default runs out at the second 100 MiB (event 3), the pick does not.
  EXPECT_NE(r.output.find("\n(default)  "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at event 3"), std::string::npos) << r.output;
  EXPECT_NE(
      r.output.find("# least peak reserved without running out of memory: 130.00 MiB peak "
                    "reserved, 2 cudaMalloc calls\nPYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20\n"),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# fewest cudaMalloc calls without running out of memory: 130.00 MiB "
                          "peak reserved, 2 cudaMalloc calls\n"
                          "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# for comparison: the default, out of memory at event 3 ("),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.substr(r.output.size() - 26), "\nPYTORCH_CUDA_ALLOC_CONF=\n") << r.output;

  // The line works as printed: pasted into a shell, the conf replays as recommended.
  const std::string line = line_after(r.output, "# least peak reserved");
  ASSERT_EQ(line.rfind("PYTORCH_CUDA_ALLOC_CONF=", 0), 0u) << r.output;
  const CliResult replayed = alloclab::test::run_shell(
      line + "; " + std::string(ALLOCLAB_CLI) + " replay " + snap +
      " --memory-limit 150MiB -s \"pytorch-conf:$PYTORCH_CUDA_ALLOC_CONF\"");
  ASSERT_EQ(replayed.status, 0) << replayed.output;
  EXPECT_EQ(replayed.output.find("failed"), std::string::npos) << replayed.output;
}

TEST_F(AdvisePyTorchCli, least_memory_and_fewest_calls_are_two_lines_when_they_differ) {
  const std::string snap = snapshot("reuse.pickle", reuse_for_memory());
  const CliResult r = run_cli("advise --pytorch " + snap);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# least peak reserved: 340.00 MiB peak reserved, 17 cudaMalloc "
                          "calls\nPYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# fewest cudaMalloc calls: 400.00 MiB peak reserved, 10 cudaMalloc "
                          "calls\nPYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:4\n"),
            std::string::npos)
      << r.output;
  // Without a limit there is no memory fraction, hence no garbage collection setting.
  EXPECT_EQ(r.output.find("garbage_collection_threshold"), std::string::npos) << r.output;
}

TEST_F(AdvisePyTorchCli, says_so_when_every_setting_runs_out_of_memory) {
  const CliResult r = run_cli("advise --pytorch " + snapshot("all.pickle", fragmenting(true)) +
                              " --memory-limit 150MiB --json " + path("all.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Every setting runs out of memory under the 150.00 MiB limit; none "
                          "avoids it.\n# the one that got furthest: out of memory at event 4"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("# least peak reserved"), std::string::npos) << r.output;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(path("all.json")));
  EXPECT_EQ(j["pytorch_advice"]["all_oom"], true);
  EXPECT_EQ(j["pytorch_advice"]["least_reserved"], nullptr);
  EXPECT_EQ(j["pytorch_advice"]["furthest"]["conf"], "max_split_size_mb:20");
}

TEST_F(AdvisePyTorchCli, json_report_holds_the_grid_and_the_picks) {
  const std::string snap = snapshot("frag.pickle", fragmenting());
  const std::string out = path("advice.json");
  const CliResult r = run_cli("advise --pytorch " + snap + " --memory-limit 150MiB --json " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["mode"], "sim");
  EXPECT_NE(j["command_line"].get<std::string>().find("--pytorch"), std::string::npos);
  EXPECT_EQ(j["trace"]["allocations"], 3);
  ASSERT_EQ(j["results"].size(), 2u);  // the default, and the one pick (both picks agree)
  EXPECT_EQ(j["results"][0]["strategy"], "pytorch-conf:\"\"");
  EXPECT_EQ(j["results"][0]["first_failure"]["event_index"], 3);
  EXPECT_EQ(j["results"][1]["strategy"], "pytorch-conf:\"max_split_size_mb:20\"");
  const nlohmann::json& p = j["pytorch_advice"];
  EXPECT_EQ(p["memory_limit_bytes"], 150 * kMiB);
  EXPECT_EQ(p["all_oom"], false);
  EXPECT_EQ(p["least_reserved"]["line"], "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20");
  EXPECT_EQ(p["fewest_upstream_allocs"]["conf"], "max_split_size_mb:20");
  EXPECT_EQ(p["default"]["index"], 0);
  for (const nlohmann::json& c : p["configurations"]) {
    SCOPED_TRACE(c.dump());
    for (const char* key : {"conf", "line", "keys", "memory_fraction", "strategy", "oom",
                            "first_failure_event_index", "upstream_allocs", "peak_reserved_bytes",
                            "num_alloc_retries", "num_ooms", "reserved_per_live", "first_failure"})
      EXPECT_TRUE(c.contains(key)) << key;
    EXPECT_EQ(c["oom"], !c["first_failure"].is_null());
  }
  // An existing output needs --force; the input is never replaced.
  const CliResult again =
      run_cli("advise --pytorch " + snap + " --memory-limit 150MiB --json " + out);
  EXPECT_EQ(again.status, 2) << again.output;
  EXPECT_NE(again.output.find(out + ": already exists; pass --force to replace it"),
            std::string::npos)
      << again.output;
  EXPECT_EQ(run_cli("advise --pytorch " + snap + " --json " + out + " -f").status, 0);
  const CliResult input = run_cli("advise --pytorch " + snap + " --json " + snap + " -f");
  EXPECT_EQ(input.status, 2) << input.output;
  EXPECT_NE(input.output.find("--json would replace the input"), std::string::npos) << input.output;
}

TEST_F(AdvisePyTorchCli, options_that_do_not_apply_are_refused) {
  const std::string snap = snapshot("frag.pickle", fragmenting());
  struct Case {
    std::string args, message;
  } cases[] = {
      {"advise --pytorch " + snap + " --target 0.9",
       "alloclab: error: --target is the fifo-shrink advice's hit-rate target; --pytorch has "
       "none"},
      {"advise " + snap + " --memory-limit 1GiB",
       "alloclab: error: --memory-limit applies to --pytorch advice only"},
      {"advise --pytorch " + snap + " --memory-limit 12XB", "alloclab: error: "},
      {"advise --pytorch " + snap + " --memory-limit lots", "alloclab: error: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const CliResult r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output.rfind(c.message, 0), 0u) << r.output;
  }
}

TEST_F(AdvisePyTorchCli, a_damaged_snapshot_is_one_line_naming_the_file) {
  const std::string bad = path("bad.pickle");
  std::ofstream(bad, std::ios::binary) << "\x80\x02\xff";  // 0xff is no pickle opcode
  const CliResult r = run_cli("advise --pytorch " + bad + " --memory-limit 1GiB");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("alloclab: error: " + bad + ": byte ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
}

TEST_F(AdvisePyTorchCli, a_snapshot_of_hundreds_of_thousands_of_entries) {
  std::vector<SnapshotEntry> e;
  std::int64_t time = 1700000000000000;
  for (const alloclab::test::WorkloadOp& op :
       alloclab::test::training_workload(alloclab::test::real_size(1500)))
    e.push_back({op.alloc ? "alloc" : "free_completed", op.addr, op.size, 0, ++time});
  ASSERT_GT(e.size(), alloclab::test::real_size(250'000));
  const CliResult r = run_cli("advise --pytorch " + snapshot("big.pickle", e) +
                              " --memory-limit 1400MiB -j 2 --json " + path("big.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# least peak reserved without running out of memory: "),
            std::string::npos)
      << r.output;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(path("big.json")));
  const nlohmann::json& configurations = j["pytorch_advice"]["configurations"];
  EXPECT_GE(configurations.size(), 30u);
  EXPECT_LE(configurations.size(), 100u);
  EXPECT_EQ(j["trace"]["events"], e.size());
}

}  // namespace

namespace {

// A snapshot as JSON (`device_traces` and `allocator_settings`), which alloclab reads as it reads
// the pickle.
std::string snapshot_json(const std::vector<SnapshotEntry>& entries,
                          const nlohmann::json& settings) {
  nlohmann::json history = nlohmann::json::array();
  for (const SnapshotEntry& e : entries)
    history.push_back({{"action", e.action},
                       {"addr", e.addr},
                       {"size", e.size},
                       {"stream", e.stream},
                       {"time_us", e.time_us}});
  return nlohmann::json({{"segments", nlohmann::json::array()},
                         {"device_traces", {history}},
                         {"allocator_settings", settings}})
      .dump();
}

}  // namespace

TEST_F(AdvisePyTorchCli, the_baseline_is_the_snapshots_own_settings) {
  // Taken with max_split_size_mb:20 (which avoids the default's OOM) and 4 pinned-memory
  // threads, which the model lacks.
  const nlohmann::json settings = {
      {"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:20,pinned_num_register_threads:4"},
      {"max_split_size", 20 * kMiB},
      {"garbage_collection_threshold", 0.0},
      {"expandable_segments", false},
      {"pinned_num_register_threads", 4},
      {"release_lock_on_cudamalloc", false},
      {"pinned_use_cuda_host_register", false},
      {"roundup_power2_divisions", {{"1", 0}, {"2", 0}, {"4", 0}}}};
  const std::string snap = path("frag.json");
  std::ofstream(snap) << snapshot_json(fragmenting(), settings);
  const std::string out = path("advice.json");
  const CliResult r =
      run_cli("advise --pytorch " + snap + " --memory-limit 150MiB -j 2 --json " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("alloclab: warning: " + snap +
                          ": recorded allocator settings left out of the \"as recorded\" row: "
                          "pinned_num_register_threads=4 (not modelled)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\nPYTORCH_CUDA_ALLOC_CONF   "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nmax_split_size_mb:20 (as recorded)  "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# for comparison: as recorded, 130.00 MiB peak reserved, 2 cudaMalloc "
                          "calls\nPYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20\n"),
            std::string::npos)
      << r.output;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out));
  const nlohmann::json& p = j["pytorch_advice"];
  EXPECT_EQ(p["as_recorded"]["conf"], "max_split_size_mb:20");
  EXPECT_EQ(p["as_recorded"]["index"], 0);
  EXPECT_EQ(p["default"]["index"], 1);
  EXPECT_EQ(p["configurations"][1]["oom"], true);
  EXPECT_EQ(p["recorded_not_expressed"],
            nlohmann::json::array({"pinned_num_register_threads=4 (not modelled)"}));
  EXPECT_EQ(j["results"][0]["strategy"], "pytorch-conf:\"max_split_size_mb:20\"");

  // Converted to .alt, the snapshot keeps its settings (the header's metadata).
  ASSERT_EQ(run_cli("convert " + snap + " " + path("frag.alt")).status, 0);
  const CliResult alt = run_cli("advise --pytorch " + path("frag.alt") + " --memory-limit 150MiB");
  ASSERT_EQ(alt.status, 0) << alt.output;
  EXPECT_NE(alt.output.find("\nmax_split_size_mb:20 (as recorded)  "), std::string::npos)
      << alt.output;

  // Defaults recorded: the default is the one baseline, and nothing is left out.
  std::ofstream(path("plain.json"))
      << snapshot_json(fragmenting(), {{"PYTORCH_CUDA_ALLOC_CONF", ""}, {"max_split_size", -1}});
  const CliResult plain =
      run_cli("advise --pytorch " + path("plain.json") + " --memory-limit 150MiB");
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("\n(default, as recorded)  "), std::string::npos) << plain.output;
  EXPECT_EQ(plain.output.find("warning"), std::string::npos) << plain.output;
  EXPECT_NE(
      plain.output.find("# for comparison: the default, as recorded, out of memory at event 3"),
      std::string::npos)
      << plain.output;
}
