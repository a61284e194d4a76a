// Writing CSV: the exact text, and that reading it back gives the same trace.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

#include "alloclab/format/interchange/csv.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

Event make(Op op, std::uint64_t address, std::uint64_t size, std::uint64_t time) {
  Event e;
  e.op = op;
  e.address = address;
  e.size = size;
  e.time_ns = time;
  return e;
}

// One event of every shape: each field takes an unusual value somewhere.
Trace every_field_trace() {
  Trace trace;
  Event begin = make(Op::run_begin, 0, 0, 1);
  begin.label = "run, \"quoted\"\nsecond line";
  trace.push_back(begin);
  Event big = make(Op::alloc, 0xffffffffffffffffu, 18446744073709551615u, 18446744073709551615u);
  big.thread = 0xfffffffffffffffeu;
  big.stream = 0x7f8a38001020u;
  big.device = 3;
  big.kind = MemoryKind::managed;
  big.alignment = std::uint64_t{1} << 63;
  big.pool = 0xfffffffffffffffdu;
  trace.push_back(big);
  Event segment = make(Op::alloc, 0x7000, 2097152, 3);
  segment.segment = true;
  segment.device = 0;
  segment.kind = MemoryKind::device;
  trace.push_back(segment);
  Event pinned = make(Op::alloc, 0, 64, 4);  // a failed request
  pinned.kind = MemoryKind::pinned;
  trace.push_back(pinned);
  Event freed = make(Op::free, 0xffffffffffffffffu, 77, 5);  // a free that carries its size
  freed.device = 3;
  freed.kind = MemoryKind::mapped;
  trace.push_back(freed);
  Event mark = make(Op::mark, 0, 0, 6);
  mark.label = "  spaced\tlabel ";
  trace.push_back(mark);
  Event odd_mark = make(Op::mark, 0x10, 5, 7);  // a marker with an address and size
  trace.push_back(odd_mark);
  trace.push_back(make(Op::free, 0x9000, 0, 8));
  Event in_place = make(Op::alloc, 0x9000, 48, 8);  // a realloc that kept its block
  in_place.realloc_in_place = true;
  trace.push_back(in_place);
  trace.push_back(make(Op::run_end, 0, 0, 8));
  return trace;
}

TEST(CsvWrite, writes_all_columns_in_the_documented_order) {
  Trace trace;
  trace.push_back(make(Op::run_begin, 0, 0, 100));
  Event alloc = make(Op::alloc, 0x7f00a0000000, 1048576, 120);
  alloc.thread = 1;
  alloc.device = 0;
  alloc.kind = MemoryKind::device;
  alloc.alignment = 256;
  alloc.kind = MemoryKind::async_pool;
  alloc.stream = 7;
  alloc.pool = 0x5000;
  trace.push_back(alloc);
  Event mark = make(Op::mark, 0, 0, 150);
  mark.label = "a,b";
  trace.push_back(mark);
  trace.push_back(make(Op::free, 0x7f00a0000000, 0, 180));
  std::ostringstream out;
  write_csv(trace, out);
  EXPECT_EQ(out.str(),
            "time_ns,thread,action,address,size,stream,device,kind,alignment,segment,pool,"
            "realloc_in_place,label\n"
            "100,0,run_begin,,,0,cpu,host,0,0,0,0,\n"
            "120,1,alloc,0x7f00a0000000,1048576,7,cuda:0,async-pool,256,0,20480,0,\n"
            "150,0,mark,,,0,cpu,host,0,0,0,0,\"a,b\"\n"
            "180,0,free,0x7f00a0000000,,0,cpu,host,0,0,0,0,\n");
}

TEST(CsvWrite, round_trips_every_field) {
  const Trace original = every_field_trace();
  const std::string path = test::temp_file("every_field.csv");
  write_csv(original, path);
  const Trace back = read_csv(path);
  ASSERT_EQ(back.size(), original.size());
  for (std::size_t i = 0; i < original.size(); ++i)
    EXPECT_EQ(back.event(i), original.event(i)) << "event " << i;
  // The one warning: its times go from 2^64 - 1 back to 3 on purpose (line 5; the first label
  // spans two lines).
  ASSERT_EQ(back.warnings.size(), 1u) << ::testing::PrintToString(back.warnings);
  EXPECT_EQ(back.warnings[0].rfind(path + ":5: time_ns goes backwards", 0), 0u) << back.warnings[0];
}

TEST(CsvWrite, round_trips_through_gzip) {
  const Trace original = every_field_trace();
  const std::string path = test::temp_file("every_field.csv.gz");
  write_csv(original, path);
  const std::string bytes = test::file_text(path);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_EQ(read_csv(path), original);
}

TEST(CsvWrite, round_trips_an_empty_trace) {
  const std::string path = test::temp_file("empty.csv");
  write_csv(Trace(), path);
  EXPECT_TRUE(read_csv(path).empty());
}

TEST(CsvWrite, refuses_a_label_with_a_control_byte) {
  Trace trace;
  Event mark = make(Op::mark, 0, 0, 1);
  mark.label = "bell\a";
  trace.push_back(mark);
  std::ostringstream out;
  EXPECT_THROW(write_csv(trace, out), std::runtime_error);
}

TEST(CsvWrite, reports_an_unwritable_path) {
  EXPECT_THROW(write_csv(Trace(), "/nonexistent-dir/x.csv"), std::runtime_error);
}

}  // namespace
}  // namespace alloclab
