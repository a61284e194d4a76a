// The Overview's lines for a report whose results have a first failure and a fidelity section
// (a replay of a PyTorch snapshot under a memory limit): one line each, the failure opening to
// the device's state.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

CliResult overview_script(const std::filesystem::path& dir, const std::string& script) {
  const std::string path = (dir / "script.txt").string();
  std::ofstream(path) << script;
  return run_headless("--size 1280x760 --script " + path);
}

TEST(Overview, shows_each_results_first_failure_and_fidelity) {
  const auto dir = scratch_dir("overview-outcomes");
  // The snapshot's recorded allocator made 3 segment allocs (24 MiB) and 2 frees (22 MiB);
  // under 10 MiB, pytorch fails at its 4.77 MiB request (a 20 MiB segment) on cuda:1.
  const std::string snapshot = std::string(ALLOCLAB_TEST_DATA) + "/interchange/snapshot_torch.json";
  const std::string json = (dir / "r.json").string();
  const CliResult cli =
      run_cli("replay " + snapshot + " -s pytorch -s exact --memory-limit 10MiB --json " + json);
  ASSERT_EQ(cli.status, 0) << cli.output;
  const CliResult r = overview_script(
      dir, "open " + json +
               "\nwait\nview overview\n"
               "expect-text overview/first-failure:0 \"pytorch fails first at event 4, +4.0 us, a "
               "request of 4.77 MiB: CUDA out of memory. Tried to allocate 20.00 MiB.\"\n"
               "expect-text overview/fidelity:0 \"pytorch: segment allocs reproduced 1 of 3 "
               "(model 2.00 MiB, recorded 24.00 MiB), frees 0 of 2 (model 0 B, recorded 22.00 "
               "MiB); first divergence at event 2: recorded segment_alloc of 20.00 MiB, model "
               "allocated nothing\"\n"
               "expect-text overview/fidelity:1 \"exact: segment allocs reproduced 0 of 3\"\n"
               "expect-missing overview/first-failure:1\n"
               // Opened, the failure shows the device's state as the terminal does.
               "click overview/first-failure:0\n"
               "expect-text overview/first-failure:0/details \"live 0 B, handed out 0 B, "
               "reserved 0 B (cached 0 B, largest cached block 0 B), limit 10.00 MiB\"\n");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(Overview, shows_what_the_program_of_a_live_report_cost) {
  const auto dir = scratch_dir("overview-live");
  // A report as `alloclab run --json` writes it: a replay report's shape, mode "live", and the
  // program it ran.
  const std::string replayed = (dir / "replayed.json").string();
  const CliResult cli = run_cli("replay " + traces_dir() + "/tiny.csv -s exact --json " + replayed);
  ASSERT_EQ(cli.status, 0) << cli.output;
  nlohmann::json report;
  std::ifstream(replayed) >> report;
  report["mode"] = "live";
  report["program"] = {{"command", {"./app"}},
                       {"pid", 42},
                       {"exit_status", 3},
                       {"wall_seconds", 1.5},
                       {"user_seconds", 1.25},
                       {"system_seconds", 0.125},
                       {"minor_faults", 12345},
                       {"major_faults", 2},
                       {"peak_rss_bytes", 3 << 20},
                       {"min_size", 131072},
                       {"markers", false},
                       {"trace", nullptr},
                       {"other_processes", nlohmann::json::array()}};
  const std::string live = (dir / "live.json").string();
  std::ofstream(live) << report.dump(1);
  const CliResult r = overview_script(
      dir, "open " + live +
               "\nwait\nview overview\n"
               "expect-text overview/program \"program: exit 3, 1.500 s wall, 1.250 s user, "
               "0.125 s system, 12,345 minor and 2 major page faults, peak RSS 3.0 MiB\"\n");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
}  // namespace alloclab::test
