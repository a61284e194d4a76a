// Reading the CSV interchange format: every column, every accepted odd case.
#include <gtest/gtest.h>

#include <sstream>

#include "alloclab/format/interchange/csv.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

using test::data_file;

TEST(Csv, reads_the_strategies_md_example) {
  const Trace trace = read_csv(data_file("strategies_example.csv"));
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_TRUE(trace.warnings.empty());
  EXPECT_EQ(trace.op(0), Op::run_begin);
  EXPECT_EQ(trace.time_ns(0), 100u);
  EXPECT_EQ(trace.address(0), 0u);
  EXPECT_EQ(trace.op(1), Op::alloc);
  EXPECT_EQ(trace.address(1), 0x7f00a0000000u);
  EXPECT_EQ(trace.size_of(1), 1048576u);
  EXPECT_EQ(trace.thread(1), 1u);
  EXPECT_EQ(trace.device(1), cpu_device);
  EXPECT_EQ(trace.kind(1), MemoryKind::host);
  EXPECT_EQ(trace.op(2), Op::free);
  EXPECT_EQ(trace.address(2), 0x7f00a0000000u);
  EXPECT_EQ(trace.size_of(2), 0u);
  EXPECT_EQ(trace.op(3), Op::run_end);
  EXPECT_EQ(trace.time_ns(3), 200u);
}

TEST(Csv, reads_every_column_in_any_order) {
  const Trace trace = read_csv(data_file("all_columns.csv"));
  ASSERT_EQ(trace.size(), 7u);
  EXPECT_TRUE(trace.warnings.empty());

  const Event begin = trace.event(0);
  EXPECT_EQ(begin.op, Op::run_begin);
  EXPECT_EQ(begin.label, "step 1, warm-up");
  EXPECT_EQ(begin.time_ns, 10u);

  const Event hex_thread = trace.event(1);
  EXPECT_EQ(hex_thread.op, Op::alloc);
  EXPECT_EQ(hex_thread.address, 0x7f0000001000u);  // upper-case hex digits
  EXPECT_EQ(hex_thread.size, 4096u);
  EXPECT_EQ(hex_thread.device, 1);
  EXPECT_EQ(hex_thread.kind, MemoryKind::device);  // defaulted from cuda:1
  EXPECT_EQ(hex_thread.stream, 0x10u);
  EXPECT_EQ(hex_thread.alignment, 256u);
  EXPECT_EQ(hex_thread.thread, 0x2au);
  EXPECT_FALSE(hex_thread.segment);

  const Event biggest = trace.event(2);
  EXPECT_EQ(biggest.size, 18446744073709551615u);
  EXPECT_EQ(biggest.address, 4096u);      // decimal address
  EXPECT_EQ(biggest.device, cpu_device);  // "-1"
  EXPECT_EQ(biggest.kind, MemoryKind::pinned);
  EXPECT_EQ(biggest.alignment, 4096u);

  const Event segment = trace.event(3);
  EXPECT_TRUE(segment.segment);
  EXPECT_EQ(segment.device, 0);  // plain "0" is cuda:0
  EXPECT_EQ(segment.address, 0xffffffffffffffffu);
  EXPECT_EQ(segment.stream, 7u);

  const Event freed = trace.event(4);
  EXPECT_EQ(freed.op, Op::free);
  EXPECT_EQ(freed.kind, MemoryKind::managed);
  EXPECT_EQ(freed.thread, 42u);

  EXPECT_EQ(trace.event(5).op, Op::mark);
  EXPECT_EQ(trace.event(5).label, "padded");  // unquoted fields lose surrounding blanks
  EXPECT_EQ(trace.event(6).op, Op::run_end);
}

TEST(Csv, accepts_crlf_line_endings) {
  const Trace trace = read_csv(data_file("crlf.csv"));
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace.label(0), "crlf, run");
  EXPECT_EQ(trace.size_of(1), 64u);
  EXPECT_EQ(trace.address(2), 0x1000u);
  EXPECT_EQ(trace.op(3), Op::run_end);
}

TEST(Csv, ignores_unknown_columns_with_a_warning_naming_them) {
  const Trace trace = read_csv(data_file("unknown_columns.csv"));
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace.size_of(0), 16u);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0],
            data_file("unknown_columns.csv") + ":1: ignoring unknown column(s) 'pid', 'Note'");
}

TEST(Csv, reads_rfc4180_quoted_labels) {
  const Trace trace = read_csv(data_file("quoted_labels.csv"));
  ASSERT_EQ(trace.size(), 6u);
  EXPECT_EQ(trace.label(0), "a, b");
  EXPECT_EQ(trace.label(1), "say \"hi\"");
  EXPECT_EQ(trace.label(2), "two\nlines");
  EXPECT_EQ(trace.label(3), "  kept spaces  ");
  EXPECT_EQ(trace.label(4), "plain words");
  EXPECT_EQ(trace.label(5), "");
}

TEST(Csv, reads_gzip_files) {
  const Trace plain = read_csv(data_file("strategies_example.csv"));
  const Trace gz = read_csv(data_file("strategies_example.csv.gz"));
  EXPECT_EQ(gz, plain);
  EXPECT_EQ(gz.size(), 4u);
}

TEST(Csv, header_only_file_is_an_empty_trace) {
  std::istringstream in("action,address,size\n");
  EXPECT_TRUE(parse_csv(in, "empty.csv").empty());
}

TEST(Csv, header_names_match_case_insensitively_and_bom_is_skipped) {
  std::istringstream in(
      "\xEF\xBB\xBF"
      "Action, Address ,SIZE\nalloc,16,8\n");
  const Trace trace = parse_csv(in, "bom.csv");
  ASSERT_EQ(trace.size(), 1u);
  EXPECT_EQ(trace.address(0), 16u);
  EXPECT_EQ(trace.size_of(0), 8u);
}

TEST(Csv, alloc_at_address_zero_is_kept_as_a_failed_request) {
  std::istringstream in("action,address,size\nalloc,0,64\nfree,0x0,\n");
  const Trace trace = parse_csv(in, "null.csv");
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace.address(0), 0u);
  EXPECT_EQ(trace.size_of(0), 64u);
  EXPECT_EQ(trace.op(1), Op::free);
}

// Times that go back (a bad merge, a clock gone wrong) passed without a word; the rows are
// replayed in file order, so the load says where they first go back and how often.
TEST(Csv, timestamps_that_go_backwards_are_a_load_warning) {
  std::istringstream in(
      "time_ns,action,address,size\n100,alloc,0x10,8\n90,alloc,0x20,8\n95,free,0x10,\n"
      ",mark,,\n80,free,0x20,\n");
  const Trace trace = parse_csv(in, "back.csv");
  ASSERT_EQ(trace.size(), 5u);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0],
            "back.csv:3: time_ns goes backwards (earlier than the row before), here first and in 2 "
            "row(s) in all; the rows are replayed in file order");
}

TEST(Csv, equal_and_rising_timestamps_and_untimed_rows_are_no_warning) {
  std::istringstream timed("time_ns,action,address,size\n5,alloc,0x10,8\n5,free,0x10,\n6,mark,,\n");
  EXPECT_TRUE(parse_csv(timed, "timed.csv").warnings.empty());
  std::istringstream untimed("action,address,size\nalloc,0x10,8\nfree,0x10,\n");
  EXPECT_TRUE(parse_csv(untimed, "untimed.csv").warnings.empty());
}

}  // namespace
}  // namespace alloclab
