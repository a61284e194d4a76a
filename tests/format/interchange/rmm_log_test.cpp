// Reading RMM logging_resource_adaptor logs.
#include <gtest/gtest.h>

#include <sstream>

#include "alloclab/format/interchange/rmm_log.hpp"
#include "alloclab/format/resolve.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

using test::data_file;
using test::input_error;

constexpr std::uint64_t s = 1'000'000'000;
constexpr std::uint64_t day = 86400 * s;

TEST(RmmLog, reads_every_column) {
  const Trace trace = read_rmm_log(data_file("rmm_basic.rmm.csv"));
  ASSERT_EQ(trace.size(), 5u);
  EXPECT_TRUE(trace.warnings.empty());
  const Event first = trace.event(0);
  EXPECT_EQ(first.op, Op::alloc);
  EXPECT_EQ(first.thread, 140573312345856u);
  EXPECT_EQ(first.time_ns, (9 * 3600 + 15 * 60 + 2) * s + 100'000);
  EXPECT_EQ(first.address, 0x7f8a40000000u);
  EXPECT_EQ(first.size, 1024u);
  EXPECT_EQ(first.stream, 0u);
  EXPECT_EQ(first.device, 0);  // the log has no device: cuda:0
  EXPECT_EQ(first.kind, MemoryKind::device);
  EXPECT_EQ(trace.stream(1), 0x7f8a38001020u);
  EXPECT_EQ(trace.op(2), Op::free);
  EXPECT_EQ(trace.size_of(2), 1024u);  // RMM logs the size of frees too
  EXPECT_EQ(trace.time_ns(4) - trace.time_ns(0), 1'900'000u);
  EXPECT_EQ(trace.metadata["rmm"]["allocate_failures"], 0);
}

TEST(RmmLog, nil_pointer_is_address_zero) {
  const Trace trace = read_rmm_log(data_file("rmm_basic.rmm.csv"));
  EXPECT_EQ(trace.op(3), Op::free);
  EXPECT_EQ(trace.address(3), 0u);
  EXPECT_EQ(resolve(trace).anomalies.free_null, 1u);
}

TEST(RmmLog, midnight_wrap_adds_a_day_but_jitter_does_not) {
  const Trace trace = read_rmm_log(data_file("rmm_midnight.log"));
  ASSERT_EQ(trace.size(), 6u);
  EXPECT_EQ(trace.time_ns(0), day - 1'000'000);  // 23:59:59.999
  EXPECT_EQ(trace.time_ns(1), day - 2'000'000);  // a thread a little behind: no wrap
  EXPECT_EQ(trace.time_ns(2), day + 500'000);    // past midnight
  EXPECT_EQ(trace.time_ns(3), day + 1 * s);
  EXPECT_EQ(trace.time_ns(4), day - 2 * s);  // a late line from before midnight
  EXPECT_EQ(trace.time_ns(5), day + 1'000);  // still the second day
  EXPECT_EQ(trace.metadata["rmm"]["midnight_wraps"], 1);
}

TEST(RmmLog, allocate_failure_becomes_an_alloc_at_address_zero) {
  const Trace trace = read_rmm_log(data_file("rmm_failure.csv"));
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace.op(1), Op::alloc);
  EXPECT_EQ(trace.address(1), 0u);
  EXPECT_EQ(trace.size_of(1), 85899345920u);
  EXPECT_EQ(trace.address(2), 0u);
  EXPECT_EQ(trace.size_of(2), 1099511627776u);
  EXPECT_EQ(trace.metadata["rmm"]["allocate_failures"], 2);
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.anomalies.failed_allocs, 2u);
  EXPECT_EQ(resolved.allocation_count(), 1u);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
}

TEST(RmmLog, finds_columns_by_name_past_a_pandas_index) {
  const Trace trace = read_rmm_log(data_file("rmm_pandas_index.csv"));
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_TRUE(trace.warnings.empty());  // an unnamed index column is expected, not unknown
  EXPECT_EQ(trace.thread(0), 0x3fu);
  EXPECT_EQ(trace.stream(0), 5u);
  EXPECT_EQ(trace.size_of(0), 100u);
  EXPECT_EQ(trace.address(0), 0x10000u);
  EXPECT_EQ(trace.time_ns(0), (3600 + 2 * 60 + 3) * s + 500'000'000);  // ".5" is half a second
  EXPECT_EQ(trace.time_ns(1), (3600 + 2 * 60 + 3) * s + 600'000);
}

TEST(RmmLog, skips_a_repeated_header_and_warns_about_named_extra_columns) {
  std::istringstream in(
      "Thread,Time,Action,Pointer,Size,Stream,Device\n"
      "1,00:00:01.000000,allocate,0x10,8,0x0,x\n"
      "Thread,Time,Action,Pointer,Size,Stream,Device\n"
      "1,00:00:02.000000,free,0x10,8,0x0,x\n");
  const Trace trace = parse_rmm_log(in, "r.log");
  ASSERT_EQ(trace.size(), 2u);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0], "r.log:1: ignoring unknown column(s) 'Device'");
}

TEST(RmmLog, accepts_colon_before_microseconds_and_epoch_seconds) {
  std::istringstream colon(
      "Thread,Time,Action,Pointer,Size,Stream\n1,00:00:01:000002,allocate,0x10,8,0x0\n");
  EXPECT_EQ(parse_rmm_log(colon, "c.log").time_ns(0), 1 * s + 2'000);
  std::istringstream epoch(
      "Thread,Time,Action,Pointer,Size,Stream\n1,1634567890.123456,deallocate,0x10,8,0x0\n");
  const Trace trace = parse_rmm_log(epoch, "e.log");
  EXPECT_EQ(trace.time_ns(0), 1634567890123456000u);
  EXPECT_EQ(trace.op(0), Op::free);
}

TEST(RmmLog, rejects_unknown_action_with_line_number) {
  EXPECT_EQ(input_error([] { read_rmm_log(data_file("rmm_bad_action.log")); }),
            data_file("rmm_bad_action.log") +
                ":3: unknown action 'reallocate' (expected allocate, free, allocate failure)");
}

TEST(RmmLog, rejects_an_impossible_time) {
  EXPECT_EQ(input_error([] { read_rmm_log(data_file("rmm_bad_time.log")); }),
            data_file("rmm_bad_time.log") +
                ":3: bad time '25:00:00.000000' in column Time (expected HH:MM:SS.ffffff, a time "
                "of day)");
}

TEST(RmmLog, rejects_missing_columns_listing_them) {
  EXPECT_EQ(input_error([] { read_rmm_log(data_file("rmm_missing_columns.log")); }),
            data_file("rmm_missing_columns.log") +
                ":1: missing required column(s) 'pointer', 'size' (an RMM log starts with the "
                "header Thread,Time,Action,Pointer,Size,Stream)");
}

TEST(RmmLog, rejects_bad_numbers_and_field_counts) {
  const std::string h = "Thread,Time,Action,Pointer,Size,Stream\n";
  const std::pair<std::string, std::string> cases[] = {
      {h + "1,00:00:01.0,allocate,0x10,-8,0x0\n", "r.log:2: negative number '-8' in column Size"},
      {h + "1,00:00:01.0,allocate,0xg,8,0x0\n",
       "r.log:2: bad number '0xg' in column Pointer (expected hex digits after 0x)"},
      {h + "1,00:00:01.0,allocate,0x10,8\n",
       "r.log:2: expected 6 fields as in the header, found 5"},
      {h + "1,00:00:01.1234567890,allocate,0x10,8,0x0\n",
       "r.log:2: bad time '00:00:01.1234567890' in column Time (expected HH:MM:SS.ffffff, a time "
       "of day)"},
      {"", "r.log:1: empty file (no header line Thread,Time,Action,Pointer,Size,Stream)"},
  };
  for (const auto& [text, expected] : cases) {
    std::istringstream in(text);
    EXPECT_EQ(input_error([&] { parse_rmm_log(in, "r.log"); }), expected) << text;
  }
}

}  // namespace
}  // namespace alloclab
