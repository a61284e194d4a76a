#include <gtest/gtest.h>

#include <limits>

#include "alloclab/format/summary.hpp"
#include "trace_test_util.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::free_event;
using test::marker;

TEST(Summary, counts_peaks_histograms_and_runs_of_a_hand_worked_trace) {
  const Trace t = test::make_trace(
      {marker(Op::run_begin, "first", 0), alloc_event(0x10, 100, 10), alloc_event(0x20, 1000, 20),
       free_event(0x10, 110), marker(Op::run_end, "", 200), marker(Op::mark, "checkpoint", 250),
       marker(Op::run_begin, "second", 300), alloc_event(0x10, 100, 310), free_event(0x10, 330),
       free_event(0x20, 340), marker(Op::run_end, "", 400)});
  const TraceSummary s = summarize(t, resolve(t));
  EXPECT_EQ(s.events, 11u);
  EXPECT_EQ(s.events_by_op[static_cast<int>(Op::alloc)], 3u);
  EXPECT_EQ(s.events_by_op[static_cast<int>(Op::mark)], 1u);
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.frees, 3u);
  EXPECT_EQ(s.bytes_requested, 1200u);
  EXPECT_EQ(s.peak_live_bytes, 1100u);
  EXPECT_EQ(s.peak_live_time_ns, 20u);
  EXPECT_EQ(s.duration_ns, 400u);
  EXPECT_EQ(s.size_histogram[6], 2u);      // 100 is in [64, 128)
  EXPECT_EQ(s.size_histogram[9], 1u);      // 1000 is in [512, 1024)
  EXPECT_EQ(s.lifetime_histogram[6], 1u);  // 100 ns
  EXPECT_EQ(s.lifetime_histogram[8], 1u);  // 320 ns
  EXPECT_EQ(s.lifetime_histogram[4], 1u);  // 20 ns
  ASSERT_EQ(s.top_sizes_by_count.size(), 2u);
  EXPECT_EQ(s.top_sizes_by_count[0].size, 100u);
  EXPECT_EQ(s.top_sizes_by_bytes[0].size, 1000u);
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.runs[0].label, "first");
  EXPECT_EQ(s.runs[0].allocations, 2u);
  EXPECT_EQ(s.runs[0].peak_live_bytes, 1100u);
  EXPECT_EQ(s.runs[1].allocations, 1u);
  EXPECT_EQ(s.runs[1].peak_live_bytes, 1100u);  // the 1000-byte block lives on into run 2
  EXPECT_EQ(s.runs[1].duration_ns, 100u);
  EXPECT_EQ(s.threads, 1u);
  EXPECT_EQ(s.devices, (std::vector<std::string>{"cpu"}));

  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["peak_live_bytes"], 1100);
  EXPECT_EQ(j["events_by_op"]["run_begin"], 2);
  EXPECT_EQ(j["anomalies"]["total"], 0);
  EXPECT_EQ(j["runs"][1]["label"], "second");
  EXPECT_TRUE(j["file_bytes"].is_null());
}

TEST(Summary, recorded_hit_rate_comes_from_segment_events) {
  Event segment = alloc_event(0x1000, 2 << 20);
  segment.segment = true;
  std::vector<Event> events = {segment};
  for (std::uint64_t i = 0; i < 4; ++i) {
    events.push_back(alloc_event(0x1000, 512));
    events.push_back(free_event(0x1000));
  }
  const Trace t = test::make_trace(events);
  const TraceSummary s = summarize(t, resolve(t));
  ASSERT_TRUE(s.recorded_hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*s.recorded_hit_rate, 0.75);
  EXPECT_EQ(s.segment_allocs, 1u);
}

TEST(Summary, host_and_device_memory_peak_separately) {
  // Host 100 B live from t=10 to 40; device 1000 B from 20 to 30 and 500 B from 50: the total
  // peaks at 1100 B, host at 100 B, the device at 1000 B.
  auto on = [](Event e, DeviceId device) {
    e.device = device;
    e.kind = device == cpu_device ? MemoryKind::host : MemoryKind::device;
    return e;
  };
  const Trace t =
      test::make_trace({on(alloc_event(0x10, 100, 10), cpu_device),
                        on(alloc_event(0xd000, 1000, 20), 0), on(free_event(0xd000, 30), 0),
                        on(free_event(0x10, 40), cpu_device), on(alloc_event(0xe000, 500, 50), 0)});
  const TraceSummary s = summarize(t, resolve(t));
  EXPECT_EQ(s.peak_live_bytes, 1100u);
  ASSERT_EQ(s.by_device.size(), 2u);
  EXPECT_EQ(s.by_device[0].device, "cpu");
  EXPECT_EQ(s.by_device[0].allocations, 1u);
  EXPECT_EQ(s.by_device[0].frees, 1u);
  EXPECT_EQ(s.by_device[0].peak_live_bytes, 100u);
  EXPECT_EQ(s.by_device[0].peak_live_time_ns, 10u);
  EXPECT_EQ(s.by_device[1].device, "cuda:0");
  EXPECT_EQ(s.by_device[1].allocations, 2u);
  EXPECT_EQ(s.by_device[1].bytes_requested, 1500u);
  EXPECT_EQ(s.by_device[1].peak_live_bytes, 1000u);
  EXPECT_EQ(s.by_device[1].peak_live_time_ns, 20u);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["by_device"][1]["device"], "cuda:0");
  EXPECT_EQ(j["by_device"][1]["peak_live_bytes"], 1000);
}

TEST(Summary, bytes_requested_saturates_instead_of_wrapping) {
  const std::uint64_t half = std::uint64_t{1} << 63;
  const Trace t = test::make_trace({marker(Op::run_begin, "r", 0), alloc_event(0x1000, half, 1),
                                    alloc_event(0x2000, half + 5, 2)});
  const TraceSummary s = summarize(t, resolve(t));
  EXPECT_EQ(s.bytes_requested, std::numeric_limits<std::uint64_t>::max());
  ASSERT_EQ(s.by_device.size(), 1u);
  EXPECT_EQ(s.by_device[0].bytes_requested, std::numeric_limits<std::uint64_t>::max());
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].bytes_requested, std::numeric_limits<std::uint64_t>::max());
}

// Two live allocations of 2^64 - 1 bytes: leaked_bytes wrapped around to 2^64 - 2 (and the live
// bytes with it) while bytes_requested saturated. One rule for every byte total: saturate. The
// live bytes stay exact underneath, so freeing one brings the live total back to 2^64 - 1.
TEST(Summary, every_byte_total_saturates_instead_of_wrapping) {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const Trace t = test::make_trace({marker(Op::run_begin, "r", 0), alloc_event(0x1000, max, 1),
                                    alloc_event(0x2000, max, 2), alloc_event(0x3000, max, 3),
                                    free_event(0x3000, 4), alloc_event(0x4000, 16, 5)});
  const TraceSummary s = summarize(t, resolve(t));
  EXPECT_EQ(s.anomalies.leaks, 3u);
  EXPECT_EQ(s.anomalies.leaked_bytes, max);
  EXPECT_EQ(s.peak_live_bytes, max);
  EXPECT_EQ(s.peak_live_time_ns, 3u);  // when the exact total was highest
  ASSERT_EQ(s.by_device.size(), 1u);
  EXPECT_EQ(s.by_device[0].peak_live_bytes, max);
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].peak_live_bytes, max);
  ASSERT_FALSE(s.top_sizes_by_bytes.empty());
  EXPECT_EQ(s.top_sizes_by_bytes[0].size, max);
  EXPECT_EQ(s.top_sizes_by_bytes[0].count, 3u);
  EXPECT_EQ(s.top_sizes_by_bytes[0].bytes, max);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["anomalies"]["leaked_bytes"], max);
}

TEST(Summary, segment_bytes_saturate_too) {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  Event a = alloc_event(0x1000, max, 1), b = alloc_event(0x2000, max, 2);
  a.segment = b.segment = true;
  const Trace t = test::make_trace({a, b});
  EXPECT_EQ(resolve(t).segment_bytes_allocated, max);
}

TEST(Summary, counts_streams_per_device_and_explicit_pools) {
  std::vector<Event> events;
  for (const std::uint64_t pool : {0x0ull, 0xa000ull, 0xb000ull, 0xa000ull}) {
    Event e = alloc_event(0x1000 + events.size() * 0x100, 64);
    e.device = 0;
    e.kind = MemoryKind::async_pool;
    e.stream = pool == 0xb000 ? 2 : 1;
    e.pool = pool;
    events.push_back(e);
  }
  const Trace t = test::make_trace(events);
  const TraceSummary s = summarize(t, resolve(t));
  EXPECT_EQ(s.streams, 2u);
  EXPECT_EQ(s.pools, 2u);  // 0 (no explicit pool) is not one
  EXPECT_EQ(to_json(s)["pools"], 2);
}

}  // namespace
}  // namespace alloclab
