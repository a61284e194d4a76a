// Golden reports: the counters of every built-in strategy on the bundled traces, checked on
// every test run so that any change in behaviour is seen and explained. To accept a deliberate
// change: ALLOCLAB_UPDATE_GOLDEN=1 build/bin/alloclab_replay_tests --gtest_filter='Golden*'
// and review the diff of tests/data/golden/.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "alloclab/format/formats.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {
namespace {

const std::vector<std::string>& golden_specs() {
  static const std::vector<std::string> specs = {
      "passthrough",
      "exact",
      "best-fit",
      "best-fit:max_ratio=1.5",
      "fifo-shrink:max=8MiB",
      "fifo-shrink:max=8MiB,match=best-fit",
      "fifo-shrink:max_items=16",
      "per-run-pool",
      "rten",
      "exact:round=512",
      "dfdx-limit:max=16MiB",
      "pytorch",
      "pytorch:max_split_size=20MiB,roundup_power2_divisions=4"};
  return specs;
}

// Only the deterministic part of a result: counters and per-run counters.
nlohmann::json deterministic_json(const StrategyResult& r) {
  nlohmann::json j = result_json(r);
  j.erase("series");
  j.erase("timing");
  return j;
}

void check_golden(const std::string& trace_name) {
  const std::string trace_path = std::string(ALLOCLAB_TRACES_DIR) + "/" + trace_name;
  const std::string golden_path =
      std::string(ALLOCLAB_TEST_DATA) + "/golden/" + trace_name + ".json";
  const ResolvedTrace trace = resolve(read_trace(trace_path));
  nlohmann::json actual = nlohmann::json::array();
  for (const std::string& spec : golden_specs())
    actual.push_back(deterministic_json(replay_sim(trace, spec).result));

  if (std::getenv("ALLOCLAB_UPDATE_GOLDEN")) {
    std::ofstream(golden_path) << actual.dump(1) << '\n';
    GTEST_SKIP() << "rewrote " << golden_path;
  }
  std::ifstream in(golden_path);
  ASSERT_TRUE(in) << "missing " << golden_path << " (see the comment at the top of this file)";
  const nlohmann::json expected = nlohmann::json::parse(in);
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_EQ(expected[i], actual[i]) << "strategy " << golden_specs()[i] << " on " << trace_name;
}

TEST(Golden, tiny_csv) {
  check_golden("tiny.csv");
}
TEST(Golden, cnn_inference) {
  check_golden("cnn-inference.alt");
}
TEST(Golden, transformer_varlen) {
  check_golden("transformer-varlen.alt");
}

}  // namespace
}  // namespace alloclab
