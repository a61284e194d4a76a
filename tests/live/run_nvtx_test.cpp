// `alloclab run --cuda --run-range GLOB`: a program that marks its steps with NVTX ranges only
// (tests/live/programs/nvtx_subject.c, over the stand-in CUDA runtime) gets them as runs, on the
// host's cache and each device's, chosen as `record --cuda --run-range` chooses them; recorded
// under `run --record`, they are the trace's runs, and its replay gives the live counters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_test_util.hpp"
#include "tests/live/live_run_test.hpp"

namespace alloclab {
namespace {

using test::run_cli;

class RunNvtx : public test::LiveRunTest {};

TEST_F(RunNvtx, run_range_needs_cuda) {
  const auto r = run_cli("run --run-range 'step*' -s per-run-pool -- " + std::string(LIVE_SUBJECT) +
                         " churn 3");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--run-range needs --cuda"), std::string::npos) << r.output;
}

#ifdef ALLOCLAB_LIVE_CUDA_LIBRARY

constexpr int kSteps = 9;

TEST_F(RunNvtx, matching_ranges_are_the_runs_of_the_host_and_of_each_device) {
  const auto r = run_cli("run --cuda --run-range 'step*' -s per-run-pool --json " + path("r.json") +
                         " -- " + NVTX_SUBJECT + " " + std::to_string(kSteps));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bad calls: 0"), std::string::npos) << r.output;
  // The injection answers NVTX's levels: 0 for the first push, 1 for a nested one, -1 for a
  // pop without a push (three push/pop steps with an inner push: 3 x (0 + 1)).
  EXPECT_NE(r.output.find("levels: warmup 0 pop 0 steps 3 stray pop -1"), std::string::npos)
      << r.output;
  const nlohmann::json report = read_json(path("r.json"));
  EXPECT_EQ(report["program"]["run_range"], "step*");
  ASSERT_EQ(report["results"].size(), 2u) << report.dump();
  for (const nlohmann::json& result : report["results"]) {
    SCOPED_TRACE(result.dump());
    // Only the outermost matching range of each step is a run: "warmup" and "inner" match
    // nothing, and "step inside a step" is inside a run already.
    const nlohmann::json& runs = result["runs"];
    ASSERT_EQ(runs.size(), static_cast<std::size_t>(kSteps));
    for (int step = 0; step < kSteps; ++step)
      EXPECT_EQ(runs[step]["label"], "step " + std::to_string(step));
    // per-run-pool caches inside a run only: each step's second round of blocks is served from
    // its first, and the pool is released at the step's end.
    const int blocks = result.contains("device") ? 2 : 3;
    for (const nlohmann::json& run : runs) {
      EXPECT_EQ(run["requests"], 2 * blocks);
      EXPECT_EQ(run["hits"], blocks);
      EXPECT_EQ(run["upstream_frees"], blocks);
    }
    // The warmup's blocks, before the first run, were never cached.
    EXPECT_EQ(result["requests"], (2 * kSteps + 1) * blocks);
    EXPECT_EQ(result["hits"], kSteps * blocks);
  }
}

// A profiler that was NVTX's injection (Nsight Systems sets NVTX_INJECTION64_PATH for what it
// runs) loses the ranges to --run-range: the user is told, and the runs are there.
TEST_F(RunNvtx, says_when_it_takes_nvtx_from_another_tool) {
  const auto r = test::run_shell("NVTX_INJECTION64_PATH=/opt/profiler/libInjection64.so " +
                                 std::string(ALLOCLAB_CLI) +
                                 " run --cuda --run-range 'step*' -s exact --json " +
                                 path("r.json") + " -- " + NVTX_SUBJECT + " 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("note: run --run-range takes NVTX's ranges from the injection library "
                          "NVTX_INJECTION64_PATH named (/opt/profiler/libInjection64.so)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_json(path("r.json"))["results"][0]["runs"].size(), 3u);
  EXPECT_EQ(
      run_cli("run --cuda --run-range 'step*' -s exact -- " + std::string(NVTX_SUBJECT) + " 3")
          .output.find("note:"),
      std::string::npos);
}

// PyTorch opens its pluggable allocator in a local scope, out of the marker chain's reach: the
// ranges' runs reach it all the same.
TEST_F(RunNvtx, the_torch_allocator_gets_the_ranges_runs) {
  const auto r =
      run_cli("run --cuda --run-range 'step*' -s per-run-pool --json " + path("r.json") + " -- " +
              NVTX_SUBJECT + " " + std::to_string(kSteps) + " " + ALLOCLAB_TORCH_LIBRARY);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bad calls: 0"), std::string::npos) << r.output;
  const nlohmann::json report = read_json(path("r.json"));
  ASSERT_EQ(report["results"].size(), 2u) << report.dump();
  const nlohmann::json& device = report["results"][1];
  EXPECT_EQ(device["device"], "cuda:0");
  ASSERT_EQ(device["runs"].size(), static_cast<std::size_t>(kSteps)) << device.dump();
  for (int step = 0; step < kSteps; ++step) {
    EXPECT_EQ(device["runs"][step]["label"], "step " + std::to_string(step));
    EXPECT_EQ(device["runs"][step]["hits"], 2);
  }
}

TEST_F(RunNvtx, without_run_range_the_ranges_are_not_runs) {
  const auto r = run_cli("run --cuda -s per-run-pool --json " + path("r.json") + " -- " +
                         NVTX_SUBJECT + " " + std::to_string(kSteps));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json report = read_json(path("r.json"));
  EXPECT_TRUE(report["program"]["run_range"].is_null());
  for (const nlohmann::json& result : report["results"]) {
    // The whole program is one run: every block after the first of its size is a hit.
    EXPECT_LE(result["runs"].size(), 1u) << result.dump();
    EXPECT_GT(result["hits"].get<int>(), kSteps) << result.dump();
  }
}

// As many steps as a training job's few thousand: every one a run, each run's counters the
// replay's.
TEST_F(RunNvtx, recorded_ranges_are_the_traces_runs_and_its_replay_gives_the_live_counters) {
  constexpr int kManySteps = 3000;
  const std::string trace = path("steps.alt"), live = path("live.json"),
                    replayed = path("replayed.json");
  for (const char* spec : {"per-run-pool", "rten"}) {
    SCOPED_TRACE(spec);
    auto r =
        run_cli(std::string("run -f --cuda --run-range 'step*' -s ") + spec + " --record " + trace +
                " --json " + live + " -- " + NVTX_SUBJECT + " " + std::to_string(kManySteps));
    ASSERT_EQ(r.status, 0) << r.output;
    r = run_cli("replay " + trace + " -s " + spec + " --min-size 128KiB -f --json " + replayed);
    ASSERT_EQ(r.status, 0) << r.output;
    const nlohmann::json a = read_json(live)["results"][0];
    const nlohmann::json b = read_json(replayed)["results"][0];
    expect_same_counters(a, b);
    ASSERT_EQ(b["runs"].size(), static_cast<std::size_t>(kManySteps));
    ASSERT_EQ(a["runs"].size(), b["runs"].size());
    for (std::size_t k = 0; k < b["runs"].size(); ++k) {
      nlohmann::json counted = a["runs"][k];
      counted.erase("allocation_time_ns");  // measured in the program only
      ASSERT_EQ(counted, b["runs"][k]) << "run " << k;
    }
    EXPECT_EQ(a["runs"][2999]["label"], "step 2999");
  }
}

#endif

}  // namespace
}  // namespace alloclab
