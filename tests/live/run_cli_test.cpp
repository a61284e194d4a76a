// `alloclab run` on a real program: its status and output are its own, the report is a
// replay's (mode "live"), and bad cases say so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "alloclab/format/load.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/live/live_runs.hpp"
#include "tests/cli/cli_test_util.hpp"
#include "tests/live/live_run_test.hpp"

namespace alloclab {
namespace {

namespace fs = std::filesystem;
using test::run_cli;

class RunCli : public test::LiveRunTest {
 protected:
  static std::string subject(const std::string& args) {
    return std::string(LIVE_SUBJECT) + " " + args;
  }
};

TEST_F(RunCli, passes_on_the_programs_output_and_exit_status) {
  const auto r = run_cli("run -s exact -- " + subject("exit 7"));
  EXPECT_EQ(r.status, 7) << r.output;
  EXPECT_NE(r.output.find("the program's own output"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("program: exit 7"), std::string::npos) << r.output;
}

TEST_F(RunCli, writes_a_live_report_with_the_contract_counters_and_the_programs_cost) {
  const std::string json = path("live.json");
  const auto r = run_cli("run -s best-fit --json " + json + " -- " + subject("churn 500"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report["mode"], "live");
  const nlohmann::json& result = report["results"][0];
  EXPECT_EQ(result["strategy"], "best-fit");
  // 500 mallocs, 167 reallocs that fit, 72 that move: every one through the strategy.
  EXPECT_EQ(result["requests"], 500 + 167 + 72);
  EXPECT_GT(result["hits"].get<int>(), 400);
  EXPECT_TRUE(result["latency"].contains("strategy_allocate"));
  const nlohmann::json& program = report["program"];
  EXPECT_EQ(program["exit_status"], 0);
  EXPECT_EQ(program["min_size"], 131072);
  EXPECT_GT(program["wall_seconds"].get<double>(), 0.0);
  EXPECT_GT(program["minor_faults"].get<int>(), 0);
  EXPECT_GT(program["peak_rss_bytes"].get<std::uint64_t>(), 0u);
}

TEST_F(RunCli, hands_cached_blocks_to_calloc_zeroed_and_leaves_big_alignments_to_the_allocator) {
  const auto r = run_cli("run -s exact -- " + subject("calloc"));
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST_F(RunCli, serves_alignments_up_to_64_bytes_and_leaves_larger_ones_to_the_allocator) {
  for (const char* spec : {"exact", "pytorch"}) {
    const std::string json = path("aligned.json");
    const auto r =
        run_cli(std::string("run -f -s ") + spec + " --json " + json + " -- " + subject("aligned"));
    ASSERT_EQ(r.status, 0) << spec << r.output;
    EXPECT_EQ(read_json(json)["results"][0]["requests"], 10) << spec;
  }
}

TEST_F(RunCli, serves_many_threads_at_once) {
  const std::string json = path("threads.json");
  const auto r =
      run_cli("run -s fifo-shrink:max=2MiB --json " + json + " -- " + subject("threads"));
  ASSERT_EQ(r.status, 0) << r.output;
  // Four threads of 2000 mallocs, 667 reallocs that fit and 286 that move.
  EXPECT_EQ(read_json(json)["results"][0]["requests"], 4 * (2000 + 667 + 286));
}

TEST_F(RunCli, counts_the_runs_the_program_marks) {
  const std::string json = path("runs.json");
  const auto r = run_cli("run -s rten --markers --json " + json + " -- " + subject("runs"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json result = read_json(json)["results"][0];
  // Each run's pool goes back at its end: every request misses, every block is evicted.
  EXPECT_EQ(result["requests"], 20);
  EXPECT_EQ(result["hits"], 0);
  EXPECT_EQ(result["evictions"], 20);
}

TEST_F(RunCli, passes_the_runs_on_to_the_strategy_while_recording_them) {
  const std::string json = path("runs.json");
  const std::string trace = path("runs.alt");
  const auto r = run_cli("run -s rten --markers --record " + trace + " --json " + json + " -- " +
                         subject("runs"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report["results"][0]["evictions"], 20);  // as without --record: the runs arrived
  EXPECT_EQ(report["trace"]["runs"].size(), 10u);    // and the trace has them too
  EXPECT_EQ(report["program"]["trace"], trace);
}

// What the strategy allocates for itself (its index's nodes, the cache's tables) is alloclab's:
// a trace recorded under `run` holds the program's small allocations exactly as a plain
// `record` of the same deterministic program does, and not one more. The program has the C++
// runtime loaded: for a C program, `run` loads it with its library, and its exception pool (one
// allocation as it loads, before any hook can tell it apart) is still recorded (docs/cli.md).
TEST_F(RunCli, a_recording_under_run_holds_only_what_the_program_allocated) {
  const auto program = [](const std::string& args) {
    return std::string(LIVE_SUBJECT_WITH_LIBSTDCXX) + " " + args;
  };
  const auto small_allocations = [&](const std::string& trace) {
    const std::string json = path("small.json");
    const auto r = run_cli("replay " + trace + " -s exact --min-size 128KiB -f --json " + json);
    EXPECT_EQ(r.status, 0) << r.output;
    return read_json(json)["trace"]["below_min_size"]["allocations"].get<std::uint64_t>();
  };
  const std::string plain = path("plain.alt");
  auto r = run_cli("record -f -o " + plain + " -- " + program("churn 600"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::uint64_t expected = small_allocations(plain);
  ASSERT_GT(expected, 600u) << "the program's 600 and the C++ runtime's";
  // Strategies whose indexes allocate nodes as they grow: a tree, lists, pools, segments.
  for (const char* spec :
       {"exact", "best-fit", "fifo-shrink:max=2MiB", "per-run-pool", "pytorch"}) {
    SCOPED_TRACE(spec);
    const std::string trace = path("under-run.alt");
    r = run_cli(std::string("run -f -s ") + spec + " --record " + trace + " --json " +
                path("live.json") + " -- " + program("churn 600"));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(small_allocations(trace), expected);
  }
}

TEST_F(RunCli, returns_null_and_enomem_when_the_strategy_cannot_serve) {
  const std::string json = path("enomem.json");
  const auto r = run_cli("run -s exact --json " + json + " -- " + subject("enomem"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json result = read_json(json)["results"][0];
  EXPECT_EQ(result["failed_requests"], 1);
  EXPECT_EQ(result["first_failure"]["requested_bytes"], std::uint64_t{1} << 60);
}

TEST_F(RunCli, lists_a_forked_childs_report_beside_the_programs) {
  const std::string json = path("fork.json");
  const auto r = run_cli("run -s exact --json " + json + " -- " + subject("fork"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json report = read_json(json);
  EXPECT_EQ(report["program"]["other_processes"].size(), 1u);
  EXPECT_NE(r.output.find("1 more processes ran with the strategy"), std::string::npos);
}

// The prediction against reality: a deterministic single-threaded program, run with each
// built-in strategy and recorded at the same time; the replay of that trace under the same spec
// and minimum size gives the live counters, reallocs in place and moved included.
TEST_F(RunCli, the_replay_of_a_runs_trace_gives_its_live_counters_for_every_builtin) {
  const char* const specs[] = {"passthrough",
                               "exact",
                               "best-fit",
                               "best-fit:max_ratio=1.5",
                               "fifo-shrink:max=2MiB",
                               "fifo-shrink:max_items=3,match=best-fit",
                               "per-run-pool",
                               "rten",
                               "pytorch",
                               "pytorch:roundup_power2_divisions=4"};
  const char* const keys[] = {
      "requests",       "hits",      "misses",          "failed_requests",     "upstream_allocs",
      "upstream_frees", "evictions", "peak_live_bytes", "peak_reserved_bytes", "final_cached_bytes",
      "slack_bytes"};
  for (const char* spec : specs) {
    SCOPED_TRACE(spec);
    const std::string trace = path("run.alt"), live = path("live.json"),
                      replayed = path("replayed.json");
    auto r = run_cli(std::string("run -f -s ") + spec + " --record " + trace + " --json " + live +
                     " -- " + subject("churn 600"));
    ASSERT_EQ(r.status, 0) << r.output;
    r = run_cli("replay " + trace + " -s " + spec + " --min-size 128KiB -f --json " + replayed);
    ASSERT_EQ(r.status, 0) << r.output;
    const nlohmann::json a = read_json(live)["results"][0];
    const nlohmann::json b = read_json(replayed)["results"][0];
    for (const char* key : keys) EXPECT_EQ(a[key], b[key]) << key;
    // The run did take reallocs in place: the trace says so, and the replay kept them.
    EXPECT_GT(a["hits"].get<int>(), 0);
  }
}

// The same property run by run: a program that marks its runs, run with --markers and recorded;
// the replay of its trace gives each run's live counters, label included. Twelve thousand runs:
// the live report lists the first LiveRuns::kMaxListed (the replay lists them all) and counts
// the others.
TEST_F(RunCli, the_replay_of_a_runs_trace_gives_its_live_counters_run_by_run) {
  constexpr std::size_t kRuns = 12'000;
  for (const char* spec : {"per-run-pool", "rten", "exact"}) {
    SCOPED_TRACE(spec);
    const std::string trace = path("steps.alt"), live = path("live.json"),
                      replayed = path("replayed.json");
    auto r = run_cli(std::string("run -f --markers -s ") + spec + " --record " + trace +
                     " --json " + live + " -- " + subject("steps " + std::to_string(kRuns)));
    ASSERT_EQ(r.status, 0) << r.output;
    r = run_cli("replay " + trace + " -s " + spec + " --min-size 128KiB -f --json " + replayed);
    ASSERT_EQ(r.status, 0) << r.output;
    const nlohmann::json a = read_json(live)["results"][0];
    const nlohmann::json b = read_json(replayed)["results"][0];
    expect_same_counters(a, b);
    ASSERT_EQ(b["runs"].size(), kRuns);
    ASSERT_EQ(a["runs"].size(), live::LiveRuns::kMaxListed);
    EXPECT_EQ(a["runs_not_listed"], kRuns - live::LiveRuns::kMaxListed);
    EXPECT_FALSE(b.contains("runs_not_listed"));
    for (std::size_t k = 0; k < live::LiveRuns::kMaxListed; ++k) {
      nlohmann::json counted = a["runs"][k];
      // Measured in the program; the replay of a simulation has none.
      ASSERT_TRUE(counted.contains("allocation_time_ns")) << "run " << k;
      counted.erase("allocation_time_ns");
      ASSERT_EQ(counted, b["runs"][k]) << "run " << k;
    }
    EXPECT_EQ(a["runs"][1234]["label"], "step 1234");
    // The runs differ from one another, so the equality says something.
    std::set<std::string> distinct;
    for (std::size_t k = 0; k < 100; ++k) distinct.insert(a["runs"][k].dump());
    EXPECT_GT(distinct.size(), 10u);
  }
}

// A failure numbered as the replay numbers the operations of the run's trace: the failed request
// has no event there (the program got no block), so its index is that of the operation after it,
// and its time lies between the events around it.
TEST_F(RunCli, numbers_a_live_failure_as_the_replay_of_its_trace_numbers_operations) {
  const std::string trace = path("enomem.alt"), live = path("live.json");
  const auto r = run_cli("run -s exact --record " + trace + " --json " + live + " -- " +
                         subject("enomem-after-churn"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json failure = read_json(live)["results"][0]["first_failure"];
  ResolveOptions options;
  options.min_size = 128 * 1024;
  const ResolvedTrace ops = load_resolved(trace, std::nullopt, options).resolved;
  // After the failure: one malloc and its free.
  const std::uint64_t next = ops.ops.size() - 2;
  EXPECT_EQ(failure["op_index"], next);
  EXPECT_GT(next, 50u);
  EXPECT_GT(failure["time_ns"].get<std::uint64_t>(), ops.op_time_ns[next - 1]);
  EXPECT_LT(failure["time_ns"].get<std::uint64_t>(), ops.op_time_ns[next]);
  // The terminal says it too.
  EXPECT_NE(r.output.find("at operation " + grouped(next)), std::string::npos) << r.output;
}

TEST_F(RunCli, says_a_killed_program_left_no_report) {
  const auto r = run_cli("run -s exact -- " + subject("kill"));
  EXPECT_EQ(r.status, 128 + 9) << r.output;
  EXPECT_NE(r.output.find("left no report"), std::string::npos) << r.output;
}

TEST_F(RunCli, refuses_a_bad_spec_before_the_program_runs) {
  const std::string json = path("never.json");
  const auto r = run_cli("run -s no-such-strategy --json " + json + " -- " + subject("exit 0"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-strategy"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("the program's own output"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(json));
}

TEST_F(RunCli, never_replaces_an_existing_file_or_the_program_without_force) {
  const std::string json = path("old.json");
  std::ofstream(json) << "keep me";
  auto r = run_cli("run -s exact --json " + json + " -- " + subject("exit 0"));
  EXPECT_EQ(r.status, 2) << r.output;
  std::ifstream kept(json);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "keep me");
  r = run_cli("run -s exact -f --json " + json + " -- " + subject("exit 0"));
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_cli("run -s exact -f --json " + std::string(LIVE_SUBJECT) + " -- " + subject("exit 0"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(fs::exists(LIVE_SUBJECT));
}

TEST_F(RunCli, says_when_the_program_cannot_be_run) {
  const auto r = run_cli("run -s exact -- " + path("no-such-program"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("no-such-program"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace alloclab
