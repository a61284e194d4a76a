#include "alloclab/live/live_report.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "alloclab/live/live_runs.hpp"
#include "alloclab/replay/live_result.hpp"

namespace alloclab::live {
namespace {

LiveReport sample() {
  LiveReport r;
  r.spec = "plugin:/opt/my plug-ins/sizes.so";  // a spec with a space
  r.pid = 4242;
  r.min_size = 131072;
  r.metrics.requests = 10;
  r.metrics.hits = 7;
  r.metrics.misses = 3;  // requests - hits, which the text does not repeat
  r.metrics.failed_requests = 1;
  r.metrics.upstream_allocs = 3;
  r.metrics.upstream_frees = 2;
  r.metrics.evictions = 1;
  r.metrics.peak_live_bytes = 1 << 20;
  r.metrics.peak_reserved_bytes = 3 << 20;
  r.metrics.final_cached_bytes = 1 << 19;
  r.metrics.slack_bytes = 12345;
  r.in_place_reallocs = 2;
  r.runs = 4;
  LiveHistogram h;
  for (std::uint64_t ns : {40, 41, 900, 70000}) h.record(ns);
  r.latency["strategy_allocate"] = h.raw();
  r.latency["upstream_deallocate"] = LiveHistogram().raw();
  r.strategy_counters["num_ooms"] = 1;
  r.first_failure = LiveFailure{1 << 30, 5000, 100, 200, 300, 77, 123456789};
  // Labels are any bytes: spaces, '%', a line break, UTF-8, none.
  r.run_metrics.push_back(RunMetrics{"forward 1", 5, 3, 2, 0, 0, 1 << 20, 2 << 20, 64, 1500});
  r.run_metrics.push_back(RunMetrics{"100% a\nb\tc \xc3\xa9", 4, 4, 0, 1, 1, 7, 8, 0, 0});
  r.run_metrics.push_back(RunMetrics{"", 1, 0, 1, 1, 0, 9, 9, 0, 7});
  r.runs_not_listed = 3;
  return r;
}

TEST(LiveReport, reads_back_what_it_wrote) {
  const LiveReport r = sample();
  EXPECT_EQ(parse_live_report(to_text(r), "report"), r);
}

TEST(LiveReport, a_devices_report_names_its_device_and_peak_memory) {
  LiveReport r = sample();
  r.device = "cuda-driver:3";
  r.peak_device_bytes = 5ull << 30;
  const std::string text = to_text(r);
  EXPECT_NE(text.find("\ndevice cuda-driver:3\n"), std::string::npos) << text;
  EXPECT_EQ(parse_live_report(text, "report"), r);
  const StrategyResult result = live_result(r);
  EXPECT_EQ(result.device, "cuda-driver:3");
  EXPECT_EQ(result.peak_device_bytes, std::optional<std::uint64_t>(5ull << 30));
  ASSERT_TRUE(result.first_failure);
  EXPECT_EQ(result.first_failure->device, 3);                  // a failure on that device
  EXPECT_EQ(live_result(sample()).first_failure->device, -1);  // the host
  // The host's report has neither.
  EXPECT_EQ(parse_live_report(to_text(sample()), "report").device, "");
  EXPECT_FALSE(live_result(sample()).peak_device_bytes.has_value());
}

TEST(LiveReport, becomes_a_result_with_the_same_counters_and_latencies) {
  const StrategyResult result = live_result(sample());
  EXPECT_EQ(result.strategy, "plugin:/opt/my plug-ins/sizes.so");
  EXPECT_EQ(result.metrics.requests, 10u);
  EXPECT_EQ(result.metrics.misses, 3u);
  EXPECT_EQ(result.metrics.slack_bytes, 12345u);
  ASSERT_TRUE(result.latency.count("strategy_allocate"));
  const LatencySummary& s = result.latency.at("strategy_allocate");
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.max_ns, 70000u);
  EXPECT_EQ(s.total_ns, 40u + 41 + 900 + 70000);
  EXPECT_FALSE(result.latency.count("upstream_deallocate"));  // nothing timed
  ASSERT_TRUE(result.first_failure);
  EXPECT_EQ(result.first_failure->requested_bytes, 1u << 30);
  EXPECT_EQ(result.first_failure->op_index, 77u);
  EXPECT_EQ(result.first_failure->time_ns, 123456789u);
  EXPECT_EQ(result.strategy_counters.at("num_ooms"), 1u);
  EXPECT_EQ(result.runs, sample().run_metrics);
  EXPECT_EQ(result.runs_not_listed, std::optional<std::uint64_t>(3));
  LiveReport all_listed = sample();
  all_listed.runs_not_listed = 0;
  EXPECT_FALSE(live_result(all_listed).runs_not_listed.has_value());
}

TEST(LiveReport, writes_the_contracts_counters_by_their_report_names) {
  const std::string text = to_text(sample());
  EXPECT_NE(text.find("\ncounter pid 4242\n"
                      "counter min_size 131072\n"
                      "counter requests 10\n"
                      "counter hits 7\n"
                      "counter failed_requests 1\n"
                      "counter upstream_allocs 3\n"
                      "counter upstream_frees 2\n"
                      "counter evictions 1\n"
                      "counter peak_live_bytes 1048576\n"
                      "counter peak_reserved_bytes 3145728\n"
                      "counter final_cached_bytes 524288\n"
                      "counter slack_bytes 12345\n"
                      "counter in_place_reallocs 2\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("misses"), std::string::npos) << text;  // requests - hits
  // Read back, misses follows from the two lines.
  const Metrics read =
      parse_live_report("alloclab-live 1\ncounter requests 9\ncounter hits 5\nend\n", "report")
          .metrics;
  EXPECT_EQ(read.misses, 4u);
}

TEST(LiveReport, writes_each_run_on_a_line_of_its_own) {
  const std::string text = to_text(sample());
  EXPECT_NE(text.find("\nrun 5 3 2 0 0 1048576 2097152 64 1500 forward%201\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nrun 4 4 0 1 1 7 8 0 0 100%25%20a%0Ab%09c%20\xc3\xa9\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nrun 1 0 1 1 0 9 9 0 7\n"), std::string::npos) << text;
}

void expect_refused(const std::string& text, const std::string& says) {
  try {
    parse_live_report(text, "live.1.txt");
    FAIL() << "accepted: " << text;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("live.1.txt"), std::string::npos) << e.what();
  }
}

TEST(LiveReport, refuses_damaged_reports_naming_the_file_and_line) {
  const std::string good = to_text(sample());
  expect_refused("", "not a live report");
  expect_refused("something else\n", "not a live report");
  expect_refused(good.substr(0, good.size() / 2), "cut short");
  expect_refused(good.substr(0, good.size() - 4), "cut short");  // no "end" line
  expect_refused("alloclab-live 1\ncounter requests ten\nend\n", "line 2: \"ten\" is not a count");
  expect_refused("alloclab-live 1\ncounter nonsense 1\nend\n", "unknown counter");
  expect_refused("alloclab-live 1\nbucket x 1 1\nend\n", "not listed before");
  expect_refused("alloclab-live 1\nlatency x 0 0 0\nbucket x 99999999 1\nend\n", "out of range");
  expect_refused("alloclab-live 1\ncounter requests 1 2\nend\n", "end of the line");
  expect_refused("alloclab-live 1\nwhat 1\nend\n", "unknown line");
  expect_refused("alloclab-live 1\nrun 1 1 0 0 0 1 1 0\nend\n", "a field is missing");
  expect_refused("alloclab-live 1\nrun 1 1 0 0 0 1 1 0 0 a%2\nend\n", "bad escape");
  expect_refused("alloclab-live 1\nrun 1 1 0 0 0 1 1 0 0 a%zz\nend\n", "bad escape");
  expect_refused("alloclab-live 1\nrun 1 1 0 0 0 1 1 0 0 a b\nend\n", "end of the line");
  std::string too_many = "alloclab-live 1\n";
  for (std::size_t k = 0; k <= LiveRuns::kMaxListed; ++k) too_many += "run 0 0 0 0 0 0 0 0 0\n";
  expect_refused(too_many + "end\n", "more runs than a report lists");
}

}  // namespace
}  // namespace alloclab::live
