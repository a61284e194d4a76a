// Cost models (--cost-model) and calibration (alloclab calibrate).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "alloclab/format/error.hpp"
#include "alloclab/format/formats.hpp"
#include "alloclab/replay/calibrate.hpp"
#include "alloclab/replay/cost_model.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {
namespace {

ResolvedTrace tiny() {
  return resolve(read_trace(std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv"));
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("alloclab_cost_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& text) {
  const std::string path = temp_file("bad.json", text);
  try {
    load_cost_model(path);
  } catch (const InputError& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "no error";
}

TEST(CostModel, builtins_exist_and_grow_with_size) {
  for (const char* name : {"host", "cuda"}) {
    const std::optional<CostModel> m = builtin_cost_model(name);
    ASSERT_TRUE(m) << name;
    EXPECT_LE(m->allocate.at(4096), m->allocate.at(64 << 20)) << name;
    EXPECT_GT(m->hit_ns, 0) << name;
  }
  EXPECT_FALSE(builtin_cost_model("tpu"));
  // A fresh 1 MiB malloc: ~2 µs + 256 pages × 0.25 µs (PLATFORM.md).
  EXPECT_DOUBLE_EQ(builtin_cost_model("host")->allocate.at(1 << 20), 66'000);
  EXPECT_DOUBLE_EQ(builtin_cost_model("cuda")->allocate.at(64 << 10), 50'000);
}

TEST(CostModel, interpolates_linearly_in_log_size_and_is_flat_beyond_the_ends) {
  CostCurve c;
  c.points = {{1024, 100}, {4096, 300}};
  EXPECT_DOUBLE_EQ(c.at(1024), 100);
  EXPECT_DOUBLE_EQ(c.at(2048), 200);  // halfway in log(size)
  EXPECT_DOUBLE_EQ(c.at(4096), 300);
  EXPECT_DOUBLE_EQ(c.at(1), 100);
  EXPECT_DOUBLE_EQ(c.at(1 << 30), 300);
  CostCurve from_zero;
  from_zero.points = {{0, 0}, {100, 50}};
  EXPECT_DOUBLE_EQ(from_zero.at(50), 25);
}

TEST(CostModel, file_errors_name_the_file_and_the_key) {
  EXPECT_NE(load_error("{").find("alloclab_cost_bad.json: not JSON"), std::string::npos);
  const std::string missing = load_error(R"({"hit_ns": 1, "upstream_deallocate": []})");
  EXPECT_NE(missing.find("alloclab_cost_bad.json"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'upstream_allocate' is missing"), std::string::npos) << missing;
  const std::string bad_ns = load_error(
      R"({"hit_ns": 1, "upstream_allocate": [{"size": 1, "ns": 2}, {"size": 8, "ns": "x"}],
          "upstream_deallocate": [{"size": 1, "ns": 2}]})");
  EXPECT_NE(bad_ns.find("'upstream_allocate[1].ns'"), std::string::npos) << bad_ns;
  const std::string unsorted = load_error(
      R"({"hit_ns": 1, "upstream_allocate": [{"size": 1, "ns": 2}],
          "upstream_deallocate": [{"size": 8, "ns": 2}, {"size": 8, "ns": 3}]})");
  EXPECT_NE(unsorted.find("'upstream_deallocate[1].size'"), std::string::npos) << unsorted;
  const std::string no_hit = load_error(
      R"({"upstream_allocate": [{"size": 1, "ns": 2}], "upstream_deallocate": [{"size": 1, "ns": 2}]})");
  EXPECT_NE(no_hit.find("'hit_ns' is missing"), std::string::npos) << no_hit;
  try {
    load_cost_model("/nonexistent/cost.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/cost.json"), std::string::npos);
  }
}

// 100 ns per upstream allocate, 50 per deallocate, 7 per hit, whatever the size.
CostModel flat_model() {
  CostModel m;
  m.allocate.points = {{1, 100}};
  m.deallocate.points = {{1, 50}};
  m.hit_ns = 7;
  return m;
}

TEST(CostModel, simulation_charges_every_upstream_call_and_hit) {
  const CostModel m = flat_model();
  ReplayOptions options;
  options.cost_model = &m;
  for (const char* spec : {"passthrough", "exact", "fifo-shrink:max=2MiB", "per-run-pool"}) {
    const StrategyResult r = replay_sim(tiny(), spec, options).result;
    ASSERT_TRUE(r.modelled) << spec;
    EXPECT_EQ(r.modelled->upstream_allocate, 100 * r.metrics.upstream_allocs) << spec;
    EXPECT_EQ(r.modelled->upstream_deallocate, 50 * r.metrics.upstream_frees) << spec;
    EXPECT_EQ(r.modelled->hits, 7 * r.metrics.hits) << spec;
    // Counters do not change with a cost model.
    EXPECT_EQ(r.metrics, replay_sim(tiny(), spec).result.metrics) << spec;
    const nlohmann::json j = result_json(r);
    EXPECT_EQ(j["modelled_ns"]["total"], r.modelled->total());
    EXPECT_EQ(result_from_json(j, "test").modelled, r.modelled);
  }
  EXPECT_FALSE(replay_sim(tiny(), "exact").result.modelled);
}

TEST(CostModel, each_run_carries_its_share_of_the_modelled_time) {
  const CostModel m = flat_model();
  ReplayOptions options;
  options.cost_model = &m;
  for (const char* spec : {"passthrough", "exact", "per-run-pool"}) {
    const StrategyResult r = replay_sim(tiny(), spec, options).result;
    ASSERT_EQ(r.runs.size(), 2u) << spec;
    std::uint64_t sum = 0;
    for (const RunMetrics& run : r.runs) {
      ASSERT_TRUE(run.allocation_time_ns) << spec;
      EXPECT_EQ(*run.allocation_time_ns,
                7 * run.hits + 100 * run.upstream_allocs + 50 * run.upstream_frees)
          << spec << ", " << run.label;
      sum += *run.allocation_time_ns;
    }
    // Every operation of tiny.csv is inside a run.
    EXPECT_EQ(sum, r.modelled->total()) << spec;
    const nlohmann::json j = result_json(r);
    EXPECT_EQ(j["runs"][1]["allocation_time_ns"], *r.runs[1].allocation_time_ns);
    EXPECT_EQ(result_from_json(j, "test").runs[1].allocation_time_ns, r.runs[1].allocation_time_ns);
  }
  EXPECT_FALSE(replay_sim(tiny(), "exact").result.runs[0].allocation_time_ns)
      << "a plain simulation has no time";
  EXPECT_FALSE(
      result_json(replay_sim(tiny(), "exact").result)["runs"][0].contains("allocation_time_ns"));
}

TEST(CostModel, cost_model_on_a_real_upstream_is_refused) {
  const CostModel m = *builtin_cost_model("host");
  ReplayOptions options;
  options.upstream = "host-malloc";
  options.cost_model = &m;
  EXPECT_THROW(replay_trace(tiny(), "exact", options), std::invalid_argument);
}

TEST(Calibrate, writes_a_cost_model_that_replay_reads_back) {
  CalibrateOptions options;
  options.upstream = "host-malloc";
  options.sizes = {64, 4096, 1 << 20};
  options.budget_seconds_per_size = 0.002;
  options.touch = true;
  const Calibration c = calibrate(options);
  ASSERT_EQ(c.points.size(), 3u);
  for (const CalibrationPoint& p : c.points) {
    EXPECT_FALSE(p.failed);
    EXPECT_GE(p.allocate.count, options.min_repetitions);
    EXPECT_LE(p.allocate.p50_ns, p.allocate.p99_ns);
  }
  const std::string path = temp_file("calibrated.json", calibration_json(c).dump(1));
  const CostModel m = load_cost_model(path);
  std::filesystem::remove(path);
  ASSERT_EQ(m.allocate.points.size(), 3u);
  EXPECT_EQ(m.allocate.points[2].first, 1u << 20);
  EXPECT_DOUBLE_EQ(m.allocate.points[1].second, static_cast<double>(c.points[1].allocate.p50_ns));
  EXPECT_DOUBLE_EQ(m.hit_ns, c.hit_ns);
  ReplayOptions replay;
  replay.cost_model = &m;
  EXPECT_TRUE(replay_sim(tiny(), "exact", replay).result.modelled);
}

TEST(Calibrate, refuses_the_simulated_upstream_and_unknown_names) {
  CalibrateOptions options;
  options.upstream = "sim";
  EXPECT_THROW(calibrate(options), std::invalid_argument);
  options.upstream = "nope";
  EXPECT_THROW(calibrate(options), std::runtime_error);
}

TEST(Calibrate, default_sizes_run_from_64_bytes_to_256_MiB) {
  const std::vector<std::uint64_t> sizes = default_calibration_sizes();
  EXPECT_EQ(sizes.front(), 64u);
  EXPECT_EQ(sizes.back(), 256u << 20);
  EXPECT_EQ(sizes.size(), 12u);
}

}  // namespace
}  // namespace alloclab
