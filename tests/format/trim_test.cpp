#include <gtest/gtest.h>

#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/trim.hpp"
#include "trace_test_util.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::free_event;
using test::marker;

TEST(Trim, keeps_the_runs_and_drops_frees_of_blocks_allocated_before_them) {
  const Trace t = test::make_trace(
      {alloc_event(0x10, 100),  // weights: allocated before the runs
       alloc_event(0x20, 5), free_event(0x20), marker(Op::run_begin, "one"), alloc_event(0x30, 8),
       free_event(0x10),                         // dropped
       free_event(0x30), alloc_event(0x10, 64),  // 0x10 reused inside the window: kept
       marker(Op::run_end), marker(Op::run_begin, "two"), free_event(0x10), marker(Op::run_end),
       alloc_event(0x40, 1), free_event(0x40)});
  TrimStats stats;
  const Trace trimmed = trim_to_runs(t, &stats);
  EXPECT_EQ(stats.dropped_before, 3u);
  EXPECT_EQ(stats.dropped_after, 2u);
  EXPECT_EQ(stats.dropped_frees_of_earlier_blocks, 1u);
  EXPECT_EQ(trimmed.size(), 8u);
  EXPECT_EQ(trimmed.op(0), Op::run_begin);
  EXPECT_EQ(trimmed.label(0), "one");
  const ResolvedTrace r = resolve(trimmed);
  EXPECT_EQ(r.anomalies.total(), 0u);
  EXPECT_EQ(r.anomalies.leaks, 0u);
  EXPECT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(trimmed.metadata["trimmed"]["dropped_frees_of_earlier_blocks"], 1);
}

// The frames a stack id resolves to, as values (function, module, file, line, address).
std::vector<StackFrame> frames_of(const Trace& t, std::uint32_t id) {
  std::vector<StackFrame> frames;
  if (id == 0) return frames;
  for (std::uint32_t f : t.stacks().at(id - 1)) frames.push_back(t.frames().at(f));
  return frames;
}

// Start-up before the runs and shutdown after them have stacks and frames of their own; the runs
// share one frame with them and use a stack id that is not the first.
Trace trace_with_stacks_outside_the_runs() {
  Trace t = test::make_trace({alloc_event(0x10, 100), free_event(0x10),
                              marker(Op::run_begin, "one"), alloc_event(0x20, 8),
                              alloc_event(0x30, 16), free_event(0x20), free_event(0x30),
                              marker(Op::run_end), alloc_event(0x40, 1), free_event(0x40)});
  const std::uint32_t startup = t.add_frame({0x100, "Py_Initialize", "libpython3.so", "init.c", 7});
  const std::uint32_t main_frame = t.add_frame({0x200, "main", "python3"});
  const std::uint32_t unused = t.add_frame({0x300, "never_used", "libc.so.6"});
  const std::uint32_t empty = t.add_frame({0x400, "at::empty_cpu", "libtorch_cpu.so", "E.cpp", 42});
  const std::uint32_t conv = t.add_frame({0x500, "at::conv2d", "libtorch_cpu.so"});
  const std::uint32_t atexit_frame = t.add_frame({0x600, "Py_Finalize", "libpython3.so"});
  (void)unused;
  const std::uint32_t s_startup = t.add_stack({startup, main_frame});
  const std::uint32_t s_empty = t.add_stack({empty, conv, main_frame});
  const std::uint32_t s_exit = t.add_stack({atexit_frame, main_frame});
  const std::uint32_t s_conv = t.add_stack({conv, main_frame});
  t.add_stack({startup});  // no event has it
  t.set_stack_id(0, s_startup);
  t.set_stack_id(3, s_empty);
  t.set_stack_id(4, s_conv);
  t.set_stack_id(5, s_empty);  // a free with a stack: kept like any other
  t.set_stack_id(8, s_exit);
  return t;
}

TEST(Trim, keeps_only_the_stacks_and_frames_the_kept_events_use) {
  const Trace t = trace_with_stacks_outside_the_runs();
  TrimStats stats;
  const Trace trimmed = trim_to_runs(t, &stats);
  ASSERT_EQ(trimmed.size(), 6u);
  EXPECT_EQ(trimmed.stacks().size(), 2u);
  EXPECT_EQ(trimmed.frames().size(), 3u);  // at::empty_cpu, at::conv2d, main
  EXPECT_EQ(stats.dropped_stacks, 3u);
  EXPECT_EQ(stats.dropped_frames, 3u);
  EXPECT_EQ(trimmed.metadata["trimmed"]["dropped_stacks"], 3);
  EXPECT_EQ(trimmed.metadata["trimmed"]["dropped_frames"], 3);
  // Every kept event names the same frames as before, through renumbered ids.
  for (std::size_t i = 0; i < trimmed.size(); ++i)
    EXPECT_EQ(frames_of(trimmed, trimmed.stack_id(i)), frames_of(t, t.stack_id(i + 2))) << i;
  EXPECT_EQ(trimmed.stack_id(0), 0u);
  EXPECT_NE(trimmed.stack_id(1), 0u);
  EXPECT_EQ(trimmed.stack_id(1), trimmed.stack_id(3));  // still one stack, not two copies
  EXPECT_EQ(trimmed.stack_id_entries().size(), 3u);
  for (const auto& frame : trimmed.frames()) {
    EXPECT_NE(frame.function, "never_used");
    EXPECT_NE(frame.function, "Py_Initialize");
    EXPECT_NE(frame.function, "Py_Finalize");
  }
}

TEST(Trim, the_kept_stacks_survive_a_round_trip_through_alt) {
  const Trace trimmed = trim_to_runs(trace_with_stacks_outside_the_runs());
  const test::TempFile file("trim-stacks.alt");
  write_alt(trimmed, file.path());
  const Trace back = read_alt(file.path());
  EXPECT_EQ(back.stacks(), trimmed.stacks());
  EXPECT_EQ(back.frames(), trimmed.frames());
  EXPECT_EQ(back.stack_id_entries(), trimmed.stack_id_entries());
}

TEST(Trim, a_window_without_stacks_keeps_no_table) {
  Trace t = test::make_trace({alloc_event(0x10, 1), marker(Op::run_begin), alloc_event(0x20, 2),
                              marker(Op::run_end), free_event(0x10)});
  t.set_stack_id(0, t.add_stack({t.add_frame({0x100, "startup", "a.so"})}));
  const Trace trimmed = trim_to_runs(t);
  EXPECT_TRUE(trimmed.stacks().empty());
  EXPECT_TRUE(trimmed.frames().empty());
  EXPECT_FALSE(trimmed.has_stacks());
}

TEST(Trim, a_trace_without_stacks_has_no_stack_counts) {
  const Trace t = test::make_trace(
      {alloc_event(0x10, 1), marker(Op::run_begin), alloc_event(0x20, 2), marker(Op::run_end)});
  TrimStats stats;
  const Trace trimmed = trim_to_runs(t, &stats);
  EXPECT_EQ(trimmed.size(), 3u);
  EXPECT_TRUE(trimmed.frames().empty());
  EXPECT_TRUE(trimmed.stacks().empty());
  EXPECT_EQ(stats.dropped_stacks, 0u);
  EXPECT_EQ(stats.dropped_frames, 0u);
  EXPECT_EQ(trimmed.metadata["trimmed"], (nlohmann::json{{"to", "runs"},
                                                         {"dropped_before", 1},
                                                         {"dropped_after", 0},
                                                         {"dropped_frees_of_earlier_blocks", 0}}));
}

TEST(Trim, a_trace_without_runs_is_unchanged) {
  const Trace t = test::make_trace({alloc_event(0x10, 1), free_event(0x10)});
  EXPECT_TRUE(trim_to_runs(t) == t);
  Trace stacked = test::make_trace({alloc_event(0x10, 1), free_event(0x10)});
  stacked.add_frame({0x300, "never_used", "libc.so.6"});
  stacked.set_stack_id(0, stacked.add_stack({stacked.add_frame({0x100, "f", "a.so"})}));
  EXPECT_TRUE(trim_to_runs(stacked) == stacked);  // unused frames too: nothing is trimmed
}

}  // namespace
}  // namespace alloclab
