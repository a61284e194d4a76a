// The first failed request of a replay: where it was, the device's state there (the figures of
// PyTorch's out-of-memory message and those it lacks), pytorch's num_alloc_retries and num_ooms,
// stopping there by default, and the report section read back. The expected values are
// worked out by hand in the comments.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "alloclab/format/error.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/first_failure.hpp"
#include "alloclab/replay/merge.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

Event event(Op op, std::uint64_t address, std::uint64_t size, std::uint64_t time,
            DeviceId device = cpu_device, std::uint64_t stream = 0) {
  Event e;
  e.op = op;
  e.address = address;
  e.size = size;
  e.time_ns = time;
  e.device = device;
  e.stream = stream;
  return e;
}

Event marker(Op op, std::uint64_t time) {
  Event e;
  e.op = op;
  e.time_ns = time;
  e.label = "step";
  return e;
}

ResolvedTrace resolved(const std::vector<Event>& events) {
  Trace t;
  for (const Event& e : events) t.push_back(e);
  return resolve(t);
}

// `exact:round=1024` under a 10 KiB limit, on stream 7 of the host:
//   event 0  run_begin                      (op 0)
//   event 1  A = alloc 6000 -> 6 KiB block   reserved 6 KiB
//   event 2  B = alloc 3000 -> 3 KiB         reserved 9 KiB, handed out 9 KiB (its peak)
//   event 3  free A                          6 KiB cached
//   event 4  a mark (not replayed)
//   event 5  C = alloc 1000 -> 1 KiB         reserved 10 KiB (its peak)
//   event 6  D = alloc 8000 -> 8 KiB: 10 + 8 > 10 fails; the 6 KiB go back (an eviction);
//            4 + 8 > 10 fails again: the first failure (op 5)
//   event 7  free B                          3 KiB cached
//   event 8  E = alloc 100 -> 1 KiB          miss, reserved 5 KiB
//   event 9  F = alloc 20000: fails (the 3 KiB go back first)
//   event 10 run_end
ResolvedTrace exact_trace() {
  return resolved({marker(Op::run_begin, 1000), event(Op::alloc, 0x10, 6000, 1100, cpu_device, 7),
                   event(Op::alloc, 0x20, 3000, 1200, cpu_device, 7),
                   event(Op::free, 0x10, 0, 1250, cpu_device, 7), marker(Op::mark, 1260),
                   event(Op::alloc, 0x30, 1000, 1300, cpu_device, 7),
                   event(Op::alloc, 0x40, 8000, 1400, cpu_device, 7),
                   event(Op::free, 0x20, 0, 1500, cpu_device, 7),
                   event(Op::alloc, 0x50, 100, 1600, cpu_device, 7),
                   event(Op::alloc, 0x60, 20000, 1700, cpu_device, 7), marker(Op::run_end, 1800)});
}

ReplayOptions limited(std::uint64_t limit, bool stop = true) {
  ReplayOptions options;
  options.memory_limit = limit;
  options.stop_at_first_failure = stop;
  options.check_invariants = true;
  return options;
}

TEST(FirstFailure, exact_by_hand) {
  const StrategyResult r = replay_sim(exact_trace(), "exact:round=1024", limited(10 * KiB)).result;
  ASSERT_TRUE(r.first_failure);
  const FirstFailure& f = *r.first_failure;
  EXPECT_EQ(f.op_index, 5u);
  EXPECT_EQ(f.event_index, 6u);
  EXPECT_EQ(f.time_ns, 1400u);
  EXPECT_EQ(f.since_start_ns, 400u);
  EXPECT_EQ(f.requested_bytes, 8000u);
  EXPECT_EQ(f.upstream_request_bytes, 8 * KiB);
  EXPECT_EQ(f.stream, 7u);
  EXPECT_EQ(f.device, cpu_device);
  EXPECT_EQ(f.live_bytes, 4000u);  // B and C
  EXPECT_EQ(f.allocated_bytes, 4 * KiB);
  EXPECT_EQ(f.reserved_bytes, 4 * KiB);
  EXPECT_EQ(f.cached_bytes(), 0u);  // exact gave its whole cache back before failing
  EXPECT_EQ(f.largest_cached_block, 0u);
  EXPECT_EQ(f.memory_limit, 10 * KiB);
  EXPECT_EQ(f.allowed_bytes, std::nullopt);
  EXPECT_EQ(f.peak_allocated_bytes, 9 * KiB);
  EXPECT_EQ(f.peak_reserved_bytes, 10 * KiB);
  EXPECT_DOUBLE_EQ(f.fragmentation(), 0.0);
  EXPECT_DOUBLE_EQ(f.gmlake_fragmentation(), 0.1);  // 1 - 9/10
  EXPECT_EQ(out_of_memory_message(f),
            "CUDA out of memory. Tried to allocate 8.00 KiB. Of the allocated memory 4.00 KiB is "
            "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved "
            "but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)");
  EXPECT_TRUE(r.strategy_counters.empty());  // exact has none of its own
}

TEST(FirstFailure, a_replay_stops_at_the_first_failure_unless_told_to_keep_going) {
  const ResolvedTrace trace = exact_trace();
  const StrategyResult stopped = replay_sim(trace, "exact:round=1024", limited(10 * KiB)).result;
  EXPECT_TRUE(stopped.stopped_at_first_failure);
  EXPECT_EQ(stopped.metrics.requests, 4u);  // A, B, C, D
  EXPECT_EQ(stopped.metrics.failed_requests, 1u);
  EXPECT_EQ(stopped.metrics.evictions, 1u);
  EXPECT_EQ(stopped.metrics.final_cached_bytes, 0u);
  ASSERT_EQ(stopped.runs.size(), 1u);  // the open run ends with the replay
  EXPECT_EQ(stopped.runs[0].requests, 4u);
  ASSERT_FALSE(stopped.series.empty());
  EXPECT_EQ(stopped.series.back().first_op, 5u);  // no point after the failed request

  const StrategyResult all = replay_sim(trace, "exact:round=1024", limited(10 * KiB, false)).result;
  EXPECT_FALSE(all.stopped_at_first_failure);
  EXPECT_EQ(all.metrics.requests, 6u);
  EXPECT_EQ(all.metrics.failed_requests, 2u);  // D and F
  EXPECT_EQ(all.metrics.evictions, 2u);        // A's block at D, B's at F
  EXPECT_EQ(all.first_failure, stopped.first_failure);
  EXPECT_EQ(all.series.back().first_op, 9u);  // the run_end

  // Without a failure nothing changes and nothing is described.
  const StrategyResult fits = replay_sim(trace, "exact:round=1024", limited(64 * KiB)).result;
  EXPECT_FALSE(fits.first_failure);
  EXPECT_FALSE(fits.stopped_at_first_failure);
  EXPECT_EQ(fits.metrics.requests, 6u);
}

// `pytorch` under a 64 MiB limit on cuda:0, stream 3, no run markers (op 0 is the implicit
// run_begin, so op k replays event k - 1):
//   event 0  A = 5 MiB: a 20 MiB segment, split: 15 MiB cached
//   event 1  B = 12 MiB: a hit on the 15 MiB piece, split: 3 MiB cached
//   event 2  C = 30 MiB: a 30 MiB segment, reserved 50 MiB
//   event 3  free C: the 30 MiB segment whole and cached
//   event 4  D = 40 MiB: 50 + 40 > 64 fails; release_cached_blocks frees the 30 MiB segment;
//            the retry (num_alloc_retries 1) fits: reserved 60 MiB, 57 MiB handed out (peaks)
//   event 5  E = 10 MiB: 60 + 10 > 64; nothing whole to free; the retry (2) fails: num_ooms 1,
//            the first failure (op 6)
//   event 6  free A: its piece is cached beside B, the segment not whole
//   event 7  F = 20 MiB: fails the same way (retries 3, OOMs 2)
ResolvedTrace pytorch_trace() {
  std::vector<Event> events;
  std::uint64_t time = 0;
  auto add = [&](Op op, std::uint64_t address, std::uint64_t size) {
    events.push_back(event(op, address, size, time += 100, 0, 3));
  };
  add(Op::alloc, 0xa, 5 * MiB);
  add(Op::alloc, 0xb, 12 * MiB);
  add(Op::alloc, 0xc, 30 * MiB);
  add(Op::free, 0xc, 0);
  add(Op::alloc, 0xd, 40 * MiB);
  add(Op::alloc, 0xe, 10 * MiB);
  add(Op::free, 0xa, 0);
  add(Op::alloc, 0xf, 20 * MiB);
  return resolved(events);
}

TEST(FirstFailure, pytorch_by_hand) {
  const StrategyResult r = replay_sim(pytorch_trace(), "pytorch", limited(64 * MiB)).result;
  ASSERT_TRUE(r.first_failure);
  const FirstFailure& f = *r.first_failure;
  EXPECT_EQ(f.op_index, 6u);
  EXPECT_EQ(f.event_index, 5u);
  EXPECT_EQ(f.time_ns, 600u);
  EXPECT_EQ(f.since_start_ns, 500u);  // since event 0, the implicit run_begin's time
  EXPECT_EQ(f.requested_bytes, 10 * MiB);
  EXPECT_EQ(f.upstream_request_bytes, 10 * MiB);  // a request >= 10 MiB gets its own segment
  EXPECT_EQ(f.device, 0);
  EXPECT_EQ(f.stream, 3u);
  EXPECT_EQ(f.live_bytes, 57 * MiB);
  EXPECT_EQ(f.allocated_bytes, 57 * MiB);
  EXPECT_EQ(f.reserved_bytes, 60 * MiB);
  EXPECT_EQ(f.cached_bytes(), 3 * MiB);
  EXPECT_EQ(f.largest_cached_block, 3 * MiB);
  EXPECT_EQ(f.memory_limit, 64 * MiB);
  EXPECT_EQ(f.peak_allocated_bytes, 57 * MiB);
  EXPECT_EQ(f.peak_reserved_bytes, 60 * MiB);
  EXPECT_DOUBLE_EQ(f.fragmentation(), 0.05);
  EXPECT_DOUBLE_EQ(f.gmlake_fragmentation(), 1.0 - 57.0 / 60.0);
  EXPECT_TRUE(out_of_memory_message(f).starts_with(
      "CUDA out of memory. Tried to allocate 10.00 MiB. Of the allocated memory 57.00 MiB is "
      "allocated by PyTorch, and 3.00 MiB is reserved by PyTorch but unallocated. If"))
      << out_of_memory_message(f);
  const std::map<std::string, std::uint64_t> stopped = {{"num_alloc_retries", 2}, {"num_ooms", 1}};
  EXPECT_EQ(r.strategy_counters, stopped);
  EXPECT_EQ(r.metrics.requests, 5u);

  const StrategyResult all =
      replay_sim(pytorch_trace(), "pytorch", limited(64 * MiB, false)).result;
  const std::map<std::string, std::uint64_t> every = {{"num_alloc_retries", 3}, {"num_ooms", 2}};
  EXPECT_EQ(all.strategy_counters, every);
  EXPECT_EQ(all.metrics.failed_requests, 2u);
  EXPECT_EQ(all.first_failure, r.first_failure);
}

TEST(FirstFailure, pytorch_says_what_its_memory_fraction_allows) {
  // No --memory-limit: the strategy's own limit (50 MiB allowed) makes the request fail.
  ReplayOptions options;
  const StrategyResult r =
      replay_sim(pytorch_trace(), "pytorch:per_process_memory_fraction=0.5,device_memory=100MiB",
                 options)
          .result;
  ASSERT_TRUE(r.first_failure);
  const FirstFailure& f = *r.first_failure;
  // C's segment just fits (20 + 30 <= 50). D (40 MiB): 50 + 40 > 50, the free 30 MiB segment
  // goes, 20 + 40 > 50 still: the first failure, with A and B (17 MiB) handed out.
  EXPECT_EQ(f.op_index, 5u);
  EXPECT_EQ(f.memory_limit, std::nullopt);
  EXPECT_EQ(f.allowed_bytes, 50 * MiB);
  EXPECT_NE(out_of_memory_message(f).find("Tried to allocate 40.00 MiB. 50.00 MiB allowed; Of the "
                                          "allocated memory 17.00 MiB is allocated by PyTorch"),
            std::string::npos)
      << out_of_memory_message(f);
}

TEST(FirstFailure, each_device_is_described_by_its_own_bytes) {
  // Under a 4 KiB limit per device: cuda:0 fills its 4 KiB; cuda:1 has 3 KiB and fails a
  // request of 2 KiB, with its own bytes only.
  const ResolvedTrace trace =
      resolved({event(Op::alloc, 0x10, 4 * KiB, 1, 0), event(Op::alloc, 0x10, 3 * KiB, 2, 1),
                event(Op::alloc, 0x20, 2 * KiB, 3, 1)});
  const StrategyResult r = replay_sim(trace, "exact", limited(4 * KiB)).result;
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.first_failure->device, 1);
  EXPECT_EQ(r.first_failure->live_bytes, 3 * KiB);
  EXPECT_EQ(r.first_failure->reserved_bytes, 3 * KiB);
  EXPECT_EQ(r.first_failure->peak_reserved_bytes, 3 * KiB);
}

TEST(FirstFailure, pytorch_format_size_is_pytorchs) {
  EXPECT_EQ(pytorch_format_size(0), "0 bytes");
  EXPECT_EQ(pytorch_format_size(1024), "1024 bytes");
  EXPECT_EQ(pytorch_format_size(1025), "1.00 KiB");
  EXPECT_EQ(pytorch_format_size(MiB), "1024.00 KiB");
  EXPECT_EQ(pytorch_format_size(20 * MiB), "20.00 MiB");
  EXPECT_EQ(pytorch_format_size(1024 * MiB), "1024.00 MiB");
  EXPECT_EQ(pytorch_format_size(2 * 1024 * MiB + 100 * MiB), "2.10 GiB");
}

class FirstFailureReport : public testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("alloclab-first-failure-" + std::to_string(::getpid()) + ".json");
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(FirstFailureReport, survives_a_round_trip_through_a_report_file) {
  const ResolvedTrace trace = pytorch_trace();
  std::vector<StrategyResult> results = {
      replay_sim(trace, "pytorch", limited(64 * MiB)).result,
      replay_sim(trace, "exact", limited(64 * MiB, false)).result,
      replay_sim(trace, "exact").result};
  ASSERT_TRUE(results[0].first_failure && results[1].first_failure);
  ASSERT_FALSE(results[2].first_failure);
  write_report_file(path_.string(), TraceSummary{}, results, ReportContext{});
  const nlohmann::json report = read_report_file(path_.string());
  const nlohmann::json& first = report["results"][0];
  EXPECT_EQ(first["stopped_at_first_failure"], true);
  EXPECT_EQ(first["first_failure"]["event_index"], 5);
  EXPECT_EQ(first["first_failure"]["device"], "cuda:0");
  EXPECT_EQ(first["first_failure"]["cached_bytes"], 3 * MiB);
  EXPECT_EQ(first["first_failure"]["message"], out_of_memory_message(*results[0].first_failure));
  EXPECT_EQ(first["strategy_counters"]["num_ooms"], 1);
  EXPECT_EQ(report["results"][1]["stopped_at_first_failure"], false);
  EXPECT_FALSE(report["results"][2].contains("first_failure"));
  EXPECT_FALSE(report["results"][2].contains("stopped_at_first_failure"));
  for (std::size_t i = 0; i < results.size(); ++i) {
    const StrategyResult back = result_from_json(report["results"][i], path_.string());
    EXPECT_EQ(back.first_failure, results[i].first_failure) << i;
    EXPECT_EQ(back.stopped_at_first_failure, results[i].stopped_at_first_failure) << i;
    EXPECT_EQ(back.strategy_counters, results[i].strategy_counters) << i;
  }
}

TEST(FirstFailureJson, a_report_without_the_section_still_loads) {
  nlohmann::json older = result_json(replay_sim(pytorch_trace(), "pytorch").result);
  older.erase("strategy_counters");
  const StrategyResult r = result_from_json(older, "old.json");
  EXPECT_FALSE(r.first_failure);
  EXPECT_FALSE(r.stopped_at_first_failure);
  EXPECT_TRUE(r.strategy_counters.empty());
  // An event index the trace could not give is null, and reads back as unknown.
  FirstFailure f;
  f.device = 2;
  nlohmann::json j = first_failure_json(f);
  EXPECT_TRUE(j["event_index"].is_null());
  EXPECT_EQ(first_failure_from_json(j, "x"), f);
}

TEST(FirstFailureJson, a_broken_section_is_an_error_naming_the_key) {
  nlohmann::json result =
      result_json(replay_sim(pytorch_trace(), "pytorch", limited(64 * MiB)).result);
  result["first_failure"]["reserved_bytes"] = -1;
  try {
    result_from_json(result, "r.json");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r.json, first_failure: key 'reserved_bytes'"),
              std::string::npos)
        << e.what();
  }
  result["first_failure"]["reserved_bytes"] = 1;
  result["first_failure"]["device"] = "gpu";
  EXPECT_THROW(result_from_json(result, "r.json"), InputError);
  result["first_failure"]["device"] = "cuda:0";
  result.erase("stopped_at_first_failure");
  EXPECT_THROW(result_from_json(result, "r.json"), InputError);
}

// A million operations, and 40,000 blocks live when a request fails: recording the first failure
// (which asks the strategy for its largest cached block) costs nothing that grows with the trace;
// stopping there leaves the rest unreplayed, and going on through 2,000 more failures (each one
// releasing and retrying) stays quick too.
TEST(FirstFailure, a_failure_deep_in_a_large_trace_is_found_quickly) {
  std::mt19937_64 rng(42);
  Trace t;
  std::uint64_t time = 0, address = 0x1000, kept_bytes = 0;
  constexpr std::uint64_t kKept = 40'000, kFailing = 2'001;
  for (std::uint64_t i = 0; i < kKept; ++i) {
    const std::uint64_t size = 512 + rng() % (64 * KiB);
    t.push_back(event(Op::alloc, address, size, ++time, 0));
    address += 0x100000;
    kept_bytes += size;
    for (std::uint64_t j = 0; j < 12; ++j) {  // churn: blocks freed again at once
      const std::uint64_t temp = 0x7f0000000000 + 0x100000 * j;
      t.push_back(event(Op::alloc, temp, 512 + rng() % (256 * KiB), ++time, 0));
      t.push_back(event(Op::free, temp, 0, ++time, 0));
    }
  }
  const std::uint64_t failing_event = t.size();
  for (std::uint64_t i = 0; i < kFailing; ++i)  // none of these fits under the limit
    t.push_back(event(Op::alloc, address + 0x100000 * i, 4096 * MiB, ++time, 0));
  const ResolvedTrace trace = resolve(t);
  ASSERT_GE(trace.ops.size(), 1'000'000u);
  // best-fit without max_ratio would hand 256 KiB blocks to 512 B requests and fail early.
  for (const std::string spec :
       {"exact", "best-fit:max_ratio=1.5", "fifo-shrink:max=64MiB", "pytorch"}) {
    for (const bool stop : {true, false}) {
      ReplayOptions options;
      options.memory_limit = 3 * 1024 * MiB;
      options.stop_at_first_failure = stop;
      const auto start = std::chrono::steady_clock::now();
      const StrategyResult r = replay_sim(trace, spec, options).result;
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string where = spec + (stop ? "" : ", keep going");
      ASSERT_TRUE(r.first_failure) << where;
      EXPECT_EQ(r.first_failure->op_index, trace.ops.size() - kFailing) << where;
      EXPECT_EQ(r.first_failure->event_index, failing_event) << where;
      EXPECT_EQ(r.first_failure->live_bytes, kept_bytes) << where;
      EXPECT_EQ(r.stopped_at_first_failure, stop) << where;
      EXPECT_EQ(r.metrics.failed_requests, stop ? 1u : kFailing) << where;
      EXPECT_EQ(r.metrics.requests, kKept * 13 + (stop ? 1u : kFailing)) << where;
      EXPECT_LT(seconds, 10.0) << where;
    }
  }
}

}  // namespace
}  // namespace alloclab
