// `advise --pytorch`: the grid and its pruning, the picks on hand-made traces where the answer is
// known (docs/strategies.md, `pytorch`, gives the rules they follow), ties, the all-OOM case,
// the report, and the grid at a realistic size.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/pytorch_advice.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/pytorch.hpp"
#include "pytorch_workload.hpp"
#include "tests/real_size.hpp"

namespace alloclab {
namespace {

constexpr std::uint64_t MiB = 1024 * 1024;

// A device trace built request by request; a slot number stands for an address.
class DeviceTrace {
 public:
  DeviceTrace& alloc(std::uint64_t slot, std::uint64_t size) { return add(Op::alloc, slot, size); }
  DeviceTrace& free(std::uint64_t slot) { return add(Op::free, slot, 0); }
  ResolvedTrace resolved() const { return resolve(trace_); }
  const Trace& trace() const { return trace_; }

 private:
  DeviceTrace& add(Op op, std::uint64_t slot, std::uint64_t size) {
    Event e;
    e.time_ns = ++time_;
    e.op = op;
    e.device = 0;
    e.kind = MemoryKind::device;
    e.address = 0x7f0000000000 + slot * 0x40000000;
    e.size = size;
    trace_.push_back(e);
    return *this;
  }
  Trace trace_;
  std::uint64_t time_ = 0;
};

// A 100 MiB block freed, then 30 MiB live and 100 MiB again: by default the 30 MiB request
// splits the cached 100 MiB segment, so the second 100 MiB needs a new segment (200 MiB), and
// under 150 MiB nothing can be released (the segment holds the live 30 MiB): out of memory at
// event 3. With max_split_size_mb the 100 MiB segment is oversize: never split, the 30 MiB gets
// its own segment and the second 100 MiB reuses it (130 MiB). `then_200` adds a request that
// fails under every setting (event 4).
DeviceTrace fragmenting_trace(bool then_200 = false) {
  DeviceTrace t;
  t.alloc(0, 100 * MiB).free(0).alloc(1, 30 * MiB).alloc(2, 100 * MiB);
  if (then_200) t.alloc(3, 200 * MiB);
  return t;
}

// Ten 33 MiB blocks live together, freed, then one of 37 MiB. Default: ten 34 MiB segments and a
// 38 MiB one (378 MiB, 11 cudaMalloc calls). roundup_power2_divisions:4 rounds 33 and 37 MiB
// both to 40 MiB: ten segments serve all (400 MiB, 10 calls). Expandable segments map 330 MiB
// in 17 pages of 20 MiB (340 MiB, 17 calls), and the 37 MiB block fits in what the ten left.
// Least memory and fewest calls part.
DeviceTrace reuse_for_memory_trace() {
  DeviceTrace t;
  for (std::uint64_t k = 0; k < 10; ++k) t.alloc(k, 33 * MiB);
  for (std::uint64_t k = 0; k < 10; ++k) t.free(k);
  t.alloc(10, 37 * MiB).free(10);
  return t;
}

PyTorchAdvice run(const ResolvedTrace& trace, std::optional<std::uint64_t> limit,
                  std::size_t threads = 2) {
  PyTorchAdviceOptions options;
  options.memory_limit = limit;
  options.threads = threads;
  const PyTorchAdviceOutcome outcome =
      advise_pytorch(trace, pytorch_advice_grid(trace, limit), options);
  EXPECT_FALSE(outcome.interrupted);
  return outcome.advice;
}

std::vector<std::string> confs(const std::vector<PyTorchConfig>& grid) {
  std::vector<std::string> out;
  for (const PyTorchConfig& c : grid) out.push_back(c.conf);
  return out;
}

const PyTorchTrial& trial(const PyTorchAdvice& a, const std::string& conf) {
  for (const PyTorchTrial& t : a.trials)
    if (t.config.conf == conf) return t;
  throw std::runtime_error("no trial " + conf);
}

TEST(PyTorchAdvice, grid_of_small_power_of_two_requests_is_the_default_alone) {
  // Power-of-two sizes round to themselves under every division; nothing reaches 20 MiB or the
  // large pool: no option but expandable segments can change a replay, with or without a limit.
  DeviceTrace t;
  t.alloc(0, 4096).alloc(1, 65536).free(0).alloc(2, MiB).free(1).free(2);
  const std::vector<std::string> expected = {"", "expandable_segments:True"};
  EXPECT_EQ(confs(pytorch_advice_grid(t.resolved(), std::nullopt)), expected);
  EXPECT_EQ(confs(pytorch_advice_grid(t.resolved(), 64 * MiB)), expected);
}

TEST(PyTorchAdvice, grid_leaves_out_settings_that_cannot_change_the_replay) {
  // One 300 MiB request: divisions 2, 4 and 16 round it to 384, 320 and 304 MiB; 8 rounds it to
  // 320 MiB as 4 does, and both lists give it 1 or 4 divisions: left out. max_split_size_mb up
  // to the largest segment (300 MiB; 384 MiB with divisions 2, still under 512).
  DeviceTrace t;
  t.alloc(0, 300 * MiB).free(0);
  const std::vector<std::string> ms = {"max_split_size_mb:20", "max_split_size_mb:64",
                                       "max_split_size_mb:128", "max_split_size_mb:256"};
  const std::vector<std::string> rs = {"roundup_power2_divisions:2", "roundup_power2_divisions:4",
                                       "roundup_power2_divisions:16"};
  std::vector<std::string> expected = {""};
  expected.insert(expected.end(), rs.begin(), rs.end());
  expected.insert(expected.end(), ms.begin(), ms.end());
  for (const std::string& m : ms)
    for (const std::string& r : rs) expected.push_back(m + "," + r);
  for (const std::string& m : ms)
    for (const char* n : {"64", "256"}) expected.push_back(m + ",max_non_split_rounding_mb:" + n);
  // Last, expandable segments, alone, with each rounding kept, and with each max_split_size_mb
  // a piece can reach: up to the 300 MiB the one request maps (15 pages of 20 MiB).
  expected.push_back("expandable_segments:True");
  for (const std::string& r : rs) expected.push_back("expandable_segments:True," + r);
  for (const std::string& m : ms) expected.push_back("expandable_segments:True," + m);
  EXPECT_EQ(confs(pytorch_advice_grid(t.resolved(), std::nullopt)), expected);

  // A limit adds the garbage collection thresholds, alone and with every max_split_size_mb,
  // replayed under a memory fraction of 1 of the limit; not with expandable segments, where
  // collection has no fixed segment to free (no state to start from here).
  const std::vector<PyTorchConfig> limited = pytorch_advice_grid(t.resolved(), 1024 * MiB);
  EXPECT_EQ(limited.size(), expected.size() + 2 + 2 * ms.size());
  for (const PyTorchConfig& c : limited) {
    const bool gc = c.conf.find("garbage_collection_threshold") != std::string::npos;
    EXPECT_EQ(c.memory_fraction, gc) << c.conf;
    EXPECT_EQ(c.spec, "pytorch-conf:\"" + c.conf + "\"" +
                          (gc ? ",per_process_memory_fraction=1,device_memory=1073741824" : ""));
    // No list form in this grid: a ',' separates two options.
    EXPECT_EQ(c.keys, c.conf.empty()                          ? 0u
                      : c.conf.find(',') == std::string::npos ? 1u
                                                              : 2u)
        << c.conf;
  }
  EXPECT_EQ(limited[1 + rs.size() + ms.size()].conf, "garbage_collection_threshold:0.6");
  EXPECT_EQ(limited[limited.size() - 1 - 1 - rs.size() - ms.size()].conf,
            "garbage_collection_threshold:0.8,max_split_size_mb:256");
  EXPECT_EQ(limited.back().conf, "expandable_segments:True,max_split_size_mb:256");
}

TEST(PyTorchAdvice, a_list_rounding_is_kept_where_it_rounds_differently) {
  // 100 MiB with [64:8,>:4] has 4 divisions (112 MiB), 30 MiB has 8 (30 MiB): unlike any single
  // value. PyTorch's documented list gives both 1 division, as the default: left out.
  const std::vector<std::string> grid =
      confs(pytorch_advice_grid(fragmenting_trace().resolved(), std::nullopt));
  EXPECT_NE(std::find(grid.begin(), grid.end(), "roundup_power2_divisions:[64:8,>:4]"), grid.end());
  EXPECT_EQ(
      std::find(grid.begin(), grid.end(), "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"),
      grid.end());
}

TEST(PyTorchAdvice, max_split_size_avoids_the_oom_that_fragmentation_causes_by_default) {
  const ResolvedTrace trace = fragmenting_trace().resolved();
  const PyTorchAdvice a = run(trace, 150 * MiB);
  ASSERT_FALSE(a.trials.empty());
  const PyTorchTrial& def = a.trials[0];
  EXPECT_EQ(def.config.conf, "");
  ASSERT_TRUE(def.oom());
  EXPECT_EQ(def.first_failure->event_index, 3u);
  EXPECT_EQ(def.first_failure->requested_bytes, 100 * MiB);
  // Every rounding still splits the cached segment: it runs out too.
  EXPECT_TRUE(trial(a, "roundup_power2_divisions:4").oom());

  ASSERT_TRUE(a.least_reserved && a.fewest_upstream_allocs);
  EXPECT_FALSE(a.all_oom());
  EXPECT_FALSE(a.furthest);
  // max_split_size_mb 20 and 64 tie (130 MiB, 2 calls): the earlier in the grid wins.
  EXPECT_EQ(a.trials[*a.least_reserved].config.conf, "max_split_size_mb:20");
  EXPECT_EQ(a.trials[*a.fewest_upstream_allocs].config.conf, "max_split_size_mb:20");
  const PyTorchTrial& pick = a.trials[*a.least_reserved];
  EXPECT_EQ(pick.metrics.peak_reserved_bytes, 130 * MiB);
  EXPECT_EQ(pick.metrics.upstream_allocs, 2u);
  EXPECT_EQ(trial(a, "max_split_size_mb:64").metrics.peak_reserved_bytes, 130 * MiB);

  // The report's full replays: the default and the pick, each as a plain replay makes it.
  ASSERT_EQ(a.results.size(), 2u);
  ReplayOptions limited;
  limited.memory_limit = 150 * MiB;
  EXPECT_EQ(a.results[0].strategy, "pytorch-conf:\"\"");
  EXPECT_EQ(a.results[1].metrics, replay_sim(trace, pick.config.spec, limited).result.metrics);
  EXPECT_TRUE(a.results[0].first_failure.has_value());
  EXPECT_FALSE(a.results[1].first_failure.has_value());
}

TEST(PyTorchAdvice, least_memory_and_fewest_cuda_malloc_calls_can_be_different_settings) {
  const PyTorchAdvice a = run(reuse_for_memory_trace().resolved(), std::nullopt);
  ASSERT_TRUE(a.least_reserved && a.fewest_upstream_allocs);
  const PyTorchTrial& least = a.trials[*a.least_reserved];
  const PyTorchTrial& fewest = a.trials[*a.fewest_upstream_allocs];
  // Expandable segments hold least: 340 MiB, mapped page by page (17 pages of 20 MiB, each an
  // upstream call). The default holds 378 MiB in 11 segments.
  EXPECT_EQ(least.config.conf, "expandable_segments:True");
  EXPECT_EQ(least.metrics.peak_reserved_bytes, 340 * MiB);
  EXPECT_EQ(least.metrics.upstream_allocs, 17u);
  EXPECT_EQ(trial(a, "").metrics.peak_reserved_bytes, 378 * MiB);
  EXPECT_EQ(trial(a, "").metrics.upstream_allocs, 11u);
  // Divisions 2 also make 10 calls, with 480 MiB: the tie goes to less memory.
  EXPECT_EQ(fewest.config.conf, "roundup_power2_divisions:4");
  EXPECT_EQ(fewest.metrics.peak_reserved_bytes, 400 * MiB);
  EXPECT_EQ(fewest.metrics.upstream_allocs, 10u);
  EXPECT_EQ(trial(a, "roundup_power2_divisions:2").metrics.upstream_allocs, 10u);
  // Without a limit nothing runs out of memory.
  for (const PyTorchTrial& t : a.trials) EXPECT_FALSE(t.oom()) << t.config.conf;
  ASSERT_EQ(a.results.size(), 3u);  // the default and the two picks
}

TEST(PyTorchAdvice, when_every_setting_runs_out_it_names_the_one_that_got_furthest) {
  const PyTorchAdvice a = run(fragmenting_trace(true).resolved(), 150 * MiB);
  EXPECT_TRUE(a.all_oom());
  EXPECT_FALSE(a.least_reserved);
  EXPECT_FALSE(a.fewest_upstream_allocs);
  ASSERT_TRUE(a.furthest);
  const PyTorchTrial& f = a.trials[*a.furthest];
  EXPECT_EQ(f.config.conf, "max_split_size_mb:20");
  EXPECT_EQ(f.first_failure->event_index, 4u);
  EXPECT_EQ(a.trials[0].first_failure->event_index, 3u);
  const std::string text = pytorch_advice_text(a);
  EXPECT_NE(text.find("Every setting runs out of memory under the 150.00 MiB limit; none avoids "
                      "it.\n# the one that got furthest: out of memory at event 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nPYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20\n"), std::string::npos);
}

TEST(PyTorchAdvice, the_answer_does_not_depend_on_the_thread_count) {
  const ResolvedTrace trace = fragmenting_trace().resolved();
  const PyTorchAdvice one = run(trace, 150 * MiB, 1);
  const PyTorchAdvice four = run(trace, 150 * MiB, 4);
  ASSERT_EQ(one.trials.size(), four.trials.size());
  for (std::size_t i = 0; i < one.trials.size(); ++i)
    EXPECT_EQ(one.trials[i].metrics, four.trials[i].metrics) << one.trials[i].config.conf;
  EXPECT_EQ(one.least_reserved, four.least_reserved);
  EXPECT_EQ(one.fewest_upstream_allocs, four.fewest_upstream_allocs);
}

TEST(PyTorchAdvice, a_conf_line_is_quoted_only_where_a_shell_needs_it) {
  EXPECT_EQ(pytorch_conf_line(""), "PYTORCH_CUDA_ALLOC_CONF=");
  EXPECT_EQ(pytorch_conf_line("max_split_size_mb:64,garbage_collection_threshold:0.6"),
            "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64,garbage_collection_threshold:0.6");
  EXPECT_EQ(pytorch_conf_line("roundup_power2_divisions:[64:8,>:4]"),
            "PYTORCH_CUDA_ALLOC_CONF='roundup_power2_divisions:[64:8,>:4]'");
}

TEST(PyTorchAdvice, report_holds_every_configuration_and_the_picks) {
  const DeviceTrace t = fragmenting_trace();
  const ResolvedTrace trace = t.resolved();
  const PyTorchAdvice a = run(trace, 150 * MiB);
  ReportContext context;
  context.command_line = "alloclab advise --pytorch x --memory-limit 150MiB";
  const nlohmann::json r = make_pytorch_advice_report(summarize(t.trace(), trace), a, context);
  EXPECT_EQ(r["schema_version"], report_schema_version);
  ASSERT_EQ(r["results"].size(), 2u);
  EXPECT_EQ(r["results"][0]["strategy"], "pytorch-conf:\"\"");
  const nlohmann::json& p = r["pytorch_advice"];
  EXPECT_EQ(p["memory_limit_bytes"], 150 * MiB);
  EXPECT_EQ(p["memory_fraction"], "per_process_memory_fraction=1,device_memory=157286400");
  EXPECT_EQ(p["not_modelled"], nlohmann::json::array({"backend:cudaMallocAsync"}));
  EXPECT_EQ(p["all_oom"], false);
  ASSERT_EQ(p["configurations"].size(), a.trials.size());
  const nlohmann::json& def = p["configurations"][0];
  EXPECT_EQ(def["conf"], "");
  EXPECT_EQ(def["line"], "PYTORCH_CUDA_ALLOC_CONF=");
  EXPECT_EQ(def["keys"], 0);
  EXPECT_EQ(def["oom"], true);
  EXPECT_EQ(def["first_failure_event_index"], 3);
  EXPECT_EQ(def["first_failure"]["requested_bytes"], 100 * MiB);
  EXPECT_EQ(def["num_ooms"], 1);
  EXPECT_EQ(def["peak_reserved_bytes"], a.trials[0].metrics.peak_reserved_bytes);
  EXPECT_TRUE(def["reserved_per_live"].is_number());
  const nlohmann::json& least = p["least_reserved"];
  EXPECT_EQ(least["conf"], "max_split_size_mb:20");
  EXPECT_EQ(least["line"], "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20");
  EXPECT_EQ(p["configurations"][least["index"].get<std::size_t>()]["oom"], false);
  EXPECT_EQ(p["configurations"][least["index"].get<std::size_t>()]["first_failure"], nullptr);
  EXPECT_EQ(p["fewest_upstream_allocs"]["index"], least["index"]);
  EXPECT_EQ(p["default"]["index"], 0);
  EXPECT_EQ(p["furthest"], nullptr);
}

// What torch.cuda.memory._snapshot() writes under "allocator_settings" for PyTorch's defaults.
nlohmann::json default_settings() {
  nlohmann::json divisions = nlohmann::json::object();
  for (std::uint64_t k = 0; k < 16; ++k) divisions[std::to_string(std::uint64_t{1} << k)] = 0;
  return {{"PYTORCH_CUDA_ALLOC_CONF", ""},          {"max_split_size", -1},
          {"garbage_collection_threshold", 0.0},    {"expandable_segments", false},
          {"pinned_num_register_threads", 1},       {"release_lock_on_cudamalloc", false},
          {"pinned_use_cuda_host_register", false}, {"roundup_power2_divisions", divisions}};
}

TEST(PyTorchAdvice, recorded_defaults_are_the_empty_conf) {
  const auto r = recorded_pytorch_conf(default_settings(), 1024 * MiB);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->conf, "");
  EXPECT_TRUE(r->not_expressed.empty());
  // Nothing recorded (older snapshots, or traces of other origins): no baseline of their own.
  EXPECT_FALSE(recorded_pytorch_conf(nlohmann::json::object(), std::nullopt));
  EXPECT_FALSE(recorded_pytorch_conf(nullptr, std::nullopt));
  EXPECT_FALSE(recorded_pytorch_conf("expandable_segments:True", std::nullopt));
}

TEST(PyTorchAdvice, recorded_settings_become_the_models_conf) {
  // PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:4],
  // max_non_split_rounding_mb:64,garbage_collection_threshold:0.8,expandable_segments:True,
  // release_lock_on_cudamalloc:True", as the snapshot records it: the structured values, and the
  // string for what has none (max_non_split_rounding_mb).
  nlohmann::json s = default_settings();
  s["PYTORCH_CUDA_ALLOC_CONF"] =
      "max_split_size_mb:128, roundup_power2_divisions:[256:1,512:2,>:4],"
      "max_non_split_rounding_mb:64,garbage_collection_threshold:0.8,expandable_segments:True,"
      "release_lock_on_cudamalloc:True";
  s["max_split_size"] = 128 * MiB;
  s["garbage_collection_threshold"] = 0.8;
  s["expandable_segments"] = true;
  s["release_lock_on_cudamalloc"] = true;
  for (std::uint64_t k = 0; k < 16; ++k)
    s["roundup_power2_divisions"][std::to_string(std::uint64_t{1} << k)] = k < 9    ? 1
                                                                           : k == 9 ? 2
                                                                                    : 4;
  const auto r = recorded_pytorch_conf(s, 1024 * MiB);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->not_expressed.empty()) << r->not_expressed.front();
  EXPECT_EQ(r->conf,
            "garbage_collection_threshold:0.8,expandable_segments:True,max_split_size_mb:128,"
            "max_non_split_rounding_mb:64,roundup_power2_divisions:[256:0,512:2,1024:4,>:4]");
  const PyTorchOptions o = parse_pytorch_alloc_conf(r->conf);
  EXPECT_EQ(o.max_split_size, 128 * MiB);
  EXPECT_EQ(o.max_non_split_rounding, 64 * MiB);
  EXPECT_TRUE(o.expandable_segments);
  ASSERT_TRUE(o.garbage_collection_threshold);
  EXPECT_EQ(*o.garbage_collection_threshold, parse_ratio("0.8"));
  EXPECT_EQ(o.divisions_for(300 * MiB), 0u);
  EXPECT_EQ(o.divisions_for(600 * MiB), 2u);
  EXPECT_EQ(o.divisions_for(2000 * MiB), 4u);
  EXPECT_EQ(o.divisions_for(std::uint64_t{40} << 30), 4u);

  // One division everywhere is the single value; the structured value wins over the string's.
  nlohmann::json single = default_settings();
  single["PYTORCH_CUDA_ALLOC_CONF"] = "roundup_power2_divisions:2";
  for (auto& [key, value] : single["roundup_power2_divisions"].items()) value = 8;
  EXPECT_EQ(recorded_pytorch_conf(single, std::nullopt)->conf, "roundup_power2_divisions:8");
  // A snapshot with the string alone is read from the string.
  const auto from_string = recorded_pytorch_conf(
      {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:64"}}, std::nullopt);
  EXPECT_EQ(from_string->conf, "expandable_segments:True,max_split_size_mb:64");
}

TEST(PyTorchAdvice, recorded_settings_the_model_lacks_are_named_not_dropped) {
  nlohmann::json s = default_settings();
  s["PYTORCH_CUDA_ALLOC_CONF"] =
      "backend:native,pinned_num_register_threads:4,max_split_size_mb:64,"
      "garbage_collection_threshold:0.6";
  s["pinned_num_register_threads"] = 4;
  s["max_split_size"] = 64 * MiB;
  s["garbage_collection_threshold"] = 0.6;
  s["graph_capture_record_stream_reuse"] = true;
  s["some_future_setting"] = "on";
  // Without a memory limit the threshold means nothing (PyTorch collects only under a fraction).
  const auto r = recorded_pytorch_conf(s, std::nullopt);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->conf, "max_split_size_mb:64");
  const auto named = [&](const std::string& start) {
    return std::any_of(r->not_expressed.begin(), r->not_expressed.end(),
                       [&](const std::string& n) { return n.rfind(start, 0) == 0; });
  };
  EXPECT_EQ(r->not_expressed.size(), 4u);
  EXPECT_TRUE(named("pinned_num_register_threads=4 (not modelled)"));
  EXPECT_TRUE(named("graph_capture_record_stream_reuse=true (not modelled)"));
  EXPECT_TRUE(named("some_future_setting=on (unknown setting)"));
  EXPECT_TRUE(
      named("garbage_collection_threshold:0.6 (PyTorch collects only under a memory "
            "fraction"));
  // With one, it is expressed.
  EXPECT_EQ(recorded_pytorch_conf(s, 1024 * MiB)->conf,
            "garbage_collection_threshold:0.6,max_split_size_mb:64");

  // Values the model cannot take as written, and a backend it lacks.
  const auto odd = recorded_pytorch_conf({{"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"},
                                          {"max_split_size", 1000},
                                          {"expandable_segments", "yes"}},
                                         std::nullopt);
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->conf, "");
  ASSERT_EQ(odd->not_expressed.size(), 3u);
  EXPECT_EQ(odd->not_expressed[0].rfind("expandable_segments=yes (", 0), 0u);
  EXPECT_EQ(odd->not_expressed[1].rfind("max_split_size=1000 (not a whole number of MiB", 0), 0u);
  EXPECT_EQ(odd->not_expressed[2].rfind("backend:cudaMallocAsync (", 0), 0u);
}

TEST(PyTorchAdvice, the_recorded_settings_are_the_first_row_and_not_repeated) {
  const ResolvedTrace trace = reuse_for_memory_trace().resolved();
  const std::vector<PyTorchConfig> plain = pytorch_advice_grid(trace, std::nullopt);
  const std::vector<PyTorchConfig> grid =
      pytorch_advice_grid(trace, std::nullopt, std::string("expandable_segments:True"));
  ASSERT_GE(grid.size(), 2u);
  EXPECT_EQ(grid[0].conf, "expandable_segments:True");
  EXPECT_TRUE(grid[0].recorded);
  EXPECT_EQ(grid[0].keys, 1u);
  EXPECT_EQ(grid[1].conf, "");
  EXPECT_FALSE(grid[1].recorded);
  const std::vector<std::string> c = confs(grid);
  EXPECT_EQ(std::count(c.begin(), c.end(), "expandable_segments:True"), 1);
  EXPECT_EQ(grid.size(), plain.size());  // the same settings, the recorded one moved first

  // Recorded defaults: one row, the default, marked as recorded.
  const std::vector<PyTorchConfig> same = pytorch_advice_grid(trace, std::nullopt, std::string());
  EXPECT_EQ(confs(same), confs(plain));
  EXPECT_TRUE(same[0].recorded);

  // A recorded setting of the grid written in another order is replayed as written, once.
  const std::vector<std::string> p = confs(plain);
  ASSERT_EQ(std::count(p.begin(), p.end(), "max_split_size_mb:20,roundup_power2_divisions:4"), 1);
  const std::vector<std::string> o = confs(pytorch_advice_grid(
      trace, std::nullopt, std::string("roundup_power2_divisions:4,max_split_size_mb:20")));
  EXPECT_EQ(o[0], "roundup_power2_divisions:4,max_split_size_mb:20");
  EXPECT_EQ(std::count(o.begin(), o.end(), "max_split_size_mb:20,roundup_power2_divisions:4"), 0);
  EXPECT_EQ(o.size(), p.size());
}

TEST(PyTorchAdvice, advice_compares_with_the_recorded_settings) {
  // Recorded with max_split_size_mb:20, which avoids the default's OOM under 150 MiB.
  const DeviceTrace t = fragmenting_trace();
  const ResolvedTrace trace = t.resolved();
  PyTorchAdviceOptions options;
  options.memory_limit = 150 * MiB;
  options.threads = 2;
  options.recorded_not_expressed = {"pinned_num_register_threads=4 (not modelled)"};
  const PyTorchAdvice a =
      advise_pytorch(trace,
                     pytorch_advice_grid(trace, 150 * MiB, std::string("max_split_size_mb:20")),
                     options)
          .advice;
  ASSERT_FALSE(a.trials.empty());
  EXPECT_FALSE(a.trials[0].oom());
  EXPECT_TRUE(a.trials[1].oom());  // the default
  EXPECT_EQ(a.default_index(), 1u);
  ASSERT_FALSE(a.results.empty());
  EXPECT_EQ(a.results[0].strategy, "pytorch-conf:\"max_split_size_mb:20\"");
  const nlohmann::json j = pytorch_advice_json(a);
  EXPECT_EQ(j["as_recorded"]["index"], 0);
  EXPECT_EQ(j["as_recorded"]["conf"], "max_split_size_mb:20");
  EXPECT_EQ(j["default"]["index"], 1);
  EXPECT_EQ(j["configurations"][0]["as_recorded"], true);
  EXPECT_EQ(j["configurations"][1]["as_recorded"], false);
  EXPECT_EQ(j["recorded_not_expressed"],
            nlohmann::json::array({"pinned_num_register_threads=4 (not modelled)"}));
  const std::string text = pytorch_advice_text(a);
  EXPECT_NE(text.find("\nmax_split_size_mb:20 (as recorded)  "), std::string::npos) << text;
  EXPECT_NE(text.find("\n(default)  "), std::string::npos) << text;
  EXPECT_NE(text.find("# for comparison: as recorded, 130.00 MiB peak reserved"), std::string::npos)
      << text;

  // Without recorded settings the JSON says so.
  const nlohmann::json plain = pytorch_advice_json(run(trace, 150 * MiB));
  EXPECT_EQ(plain["as_recorded"], nullptr);
  EXPECT_EQ(plain["default"]["index"], 0);
}

TEST(PyTorchAdvice, expandable_segments_with_max_split_size_is_recommended_where_it_wins) {
  // Expandable segments (stream 0, offsets in MiB): A = 100 maps [0, 100), B = 5 maps a page,
  // [105, 120) cached. A freed. C = 18: alone, the search takes [0, 100) (the cached [105, 120)
  // could grow, E2) and splits it, so D = 100 maps 5 more pages (220 MiB). With
  // max_split_size_mb:20 the freed 100 MiB is oversize for C, which grows [105, 120) by a page,
  // and D takes it back (140 MiB). Five 12 MiB blocks then fill [123, 200) page by page; freed,
  // they merge into one 77 MiB piece that serves 60 MiB (fixed segments: a new one). 200 MiB,
  // 10 pages; no other setting goes below 220 MiB.
  DeviceTrace t;
  t.alloc(0, 100 * MiB).alloc(1, 5 * MiB).free(0).alloc(2, 18 * MiB).alloc(3, 100 * MiB);
  for (std::uint64_t k = 0; k < 5; ++k) t.alloc(10 + k, 12 * MiB);
  for (std::uint64_t k = 0; k < 5; ++k) t.free(10 + k);
  t.alloc(20, 60 * MiB);
  const PyTorchAdvice a = run(t.resolved(), std::nullopt);
  EXPECT_EQ(trial(a, "expandable_segments:True").metrics.peak_reserved_bytes, 220 * MiB);
  EXPECT_EQ(trial(a, "max_split_size_mb:20").metrics.peak_reserved_bytes, 246 * MiB);
  const PyTorchTrial& both = trial(a, "expandable_segments:True,max_split_size_mb:20");
  EXPECT_EQ(both.metrics.peak_reserved_bytes, 200 * MiB);
  EXPECT_EQ(both.metrics.upstream_allocs, 10u);
  ASSERT_TRUE(a.least_reserved);
  EXPECT_EQ(a.trials[*a.least_reserved].config.conf,
            "expandable_segments:True,max_split_size_mb:20");
  // 398 MiB of requests, at most 400 MiB mapped: 512 and up cannot matter.
  const std::vector<std::string> grid = confs(pytorch_advice_grid(t.resolved(), std::nullopt));
  EXPECT_NE(std::find(grid.begin(), grid.end(), "expandable_segments:True,max_split_size_mb:256"),
            grid.end());
  EXPECT_EQ(std::find(grid.begin(), grid.end(), "expandable_segments:True,max_split_size_mb:512"),
            grid.end());
  const nlohmann::json j = pytorch_advice_json(a);
  EXPECT_EQ(j["least_reserved"]["conf"], "expandable_segments:True,max_split_size_mb:20");
}

TEST(PyTorchAdvice, collection_with_expandable_segments_only_with_fixed_segments_to_collect) {
  // Collection frees whole fixed segments only; with expandable segments those are the ones the
  // trace starts with.
  ResolvedTrace trace = fragmenting_trace().resolved();
  const auto has = [](const std::vector<PyTorchConfig>& grid, const std::string& conf) {
    return std::any_of(grid.begin(), grid.end(),
                       [&](const PyTorchConfig& c) { return c.conf == conf; });
  };
  const std::string gc = "garbage_collection_threshold:0.6,expandable_segments:True";
  EXPECT_FALSE(has(pytorch_advice_grid(trace, 1024 * MiB), gc));
  StartState start;
  start.segments.push_back({0, 0, 0x7e0000000000, 40 * MiB, SegmentPool::large});
  trace.start_state = start;
  const std::vector<PyTorchConfig> grid = pytorch_advice_grid(trace, 1024 * MiB);
  ASSERT_TRUE(has(grid, gc));
  EXPECT_TRUE(has(grid, "garbage_collection_threshold:0.8,expandable_segments:True"));
  for (const PyTorchConfig& c : grid)
    EXPECT_EQ(c.memory_fraction, c.conf.find("garbage") == 0) << c.conf;
  // Without a limit there is no memory fraction, hence no collection at all.
  EXPECT_FALSE(has(pytorch_advice_grid(trace, std::nullopt), gc));
}

TEST(PyTorchAdvice, grid_of_a_training_trace_of_hundreds_of_thousands_of_events) {
  Trace trace;
  std::uint64_t time = 0;
  for (const test::WorkloadOp& op : test::training_workload(test::real_size(1500))) {
    Event e;
    e.time_ns = ++time;
    e.op = op.alloc ? Op::alloc : Op::free;
    e.device = 0;
    e.kind = MemoryKind::device;
    e.address = op.addr;
    e.size = op.size;
    trace.push_back(e);
  }
  const ResolvedTrace resolved = resolve(trace);
  ASSERT_GT(resolved.ops.size(), test::real_size(250'000));
  // Peak live is about 1.3 GiB: under 1400 MiB some settings run out of memory, some do not.
  const std::uint64_t limit = 1400 * MiB;
  const std::vector<PyTorchConfig> grid = pytorch_advice_grid(resolved, limit);
  // Tens of settings: every axis present, max_split_size_mb up to the 600 MiB buffers.
  EXPECT_GE(grid.size(), 30u);
  EXPECT_LE(grid.size(), 100u);
  const auto has = [&](const std::string& conf) {
    return std::any_of(grid.begin(), grid.end(),
                       [&](const PyTorchConfig& c) { return c.conf == conf; });
  };
  EXPECT_TRUE(has("max_split_size_mb:512"));
  EXPECT_FALSE(has("max_split_size_mb:1024"));
  EXPECT_TRUE(has("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"));
  EXPECT_TRUE(has("max_split_size_mb:128,max_non_split_rounding_mb:256"));
  EXPECT_TRUE(has("garbage_collection_threshold:0.6,max_split_size_mb:64"));

  PyTorchAdviceOptions options;
  options.memory_limit = limit;
  options.threads = 2;
  const PyTorchAdviceOutcome outcome = advise_pytorch(resolved, grid, options);
  const PyTorchAdvice& a = outcome.advice;
  ASSERT_EQ(a.trials.size(), grid.size());
  // The picks are what they claim among the settings that do not run out of memory.
  ASSERT_TRUE(a.least_reserved && a.fewest_upstream_allocs);
  for (const PyTorchTrial& x : a.trials) {
    if (x.oom()) continue;
    EXPECT_EQ(x.metrics.requests, resolved.alloc_size.size());
    EXPECT_LE(a.trials[*a.least_reserved].metrics.peak_reserved_bytes,
              x.metrics.peak_reserved_bytes);
    EXPECT_LE(a.trials[*a.fewest_upstream_allocs].metrics.upstream_allocs,
              x.metrics.upstream_allocs);
  }
  EXPECT_TRUE(
      std::any_of(a.trials.begin(), a.trials.end(), [](const PyTorchTrial& x) { return x.oom(); }));
  EXPECT_FALSE(a.all_oom());
  EXPECT_EQ(a.results.front().strategy, "pytorch-conf:\"\"");
}

}  // namespace
}  // namespace alloclab
