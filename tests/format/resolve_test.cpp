#include <gtest/gtest.h>

#include "alloclab/format/resolve.hpp"
#include "tests/split_mix.hpp"
#include "trace_test_util.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::free_event;
using test::make_trace;
using test::marker;

std::string ops_text(const ResolvedTrace& r) {
  std::string out;
  for (const ResolvedOp& op : r.ops) {
    if (!out.empty()) out += ' ';
    switch (op.op) {
      case ReplayOp::alloc:
        out += "a" + std::to_string(op.id);
        break;
      case ReplayOp::free:
        out += "f" + std::to_string(op.id);
        break;
      case ReplayOp::run_begin:
        out += "B";
        break;
      case ReplayOp::run_end:
        out += "E";
        break;
    }
  }
  return out;
}

TEST(Resolve, pairs_frees_with_allocations_by_address) {
  const ResolvedTrace r = resolve(make_trace(
      {marker(Op::run_begin), alloc_event(0x10, 100), alloc_event(0x20, 200), free_event(0x10),
       alloc_event(0x10, 300), free_event(0x20), free_event(0x10), marker(Op::run_end)}));
  EXPECT_EQ(ops_text(r), "B a0 a1 f0 a2 f1 f2 E");
  EXPECT_EQ(r.alloc_size, (std::vector<std::uint64_t>{100, 200, 300}));
  EXPECT_EQ(r.anomalies.total(), 0u);
  EXPECT_EQ(r.anomalies.leaks, 0u);
  EXPECT_FALSE(r.implicit_run);
}

TEST(Resolve, free_of_unknown_address_is_counted_and_skipped) {
  const ResolvedTrace r = resolve(make_trace({alloc_event(0x10, 8), free_event(0x99)}));
  EXPECT_EQ(r.anomalies.free_unknown, 1u);
  EXPECT_EQ(ops_text(r), "B a0");
}

TEST(Resolve, a_trace_that_starts_at_a_fork_counts_unknown_frees_as_inherited) {
  Trace forked =
      make_trace({alloc_event(0x10, 8), free_event(0x99), free_event(0x10), free_event(0x10)});
  forked.metadata["image"] = "fork";
  const ResolvedTrace r = resolve(forked);
  EXPECT_EQ(r.anomalies.inherited_frees, 1u);
  EXPECT_EQ(r.anomalies.free_unknown, 0u);
  EXPECT_EQ(r.anomalies.double_free, 1u);  // still an error: the child freed its own block twice
  EXPECT_EQ(r.anomalies.total(), 1u);
  EXPECT_EQ(ops_text(r), "B a0 f0");

  Trace root = forked;
  root.metadata["image"] = "root";
  EXPECT_EQ(resolve(root).anomalies.free_unknown, 1u);
  EXPECT_EQ(resolve(root).anomalies.inherited_frees, 0u);
}

TEST(Resolve, second_free_of_an_address_is_a_double_free) {
  const ResolvedTrace r =
      resolve(make_trace({alloc_event(0x10, 8), free_event(0x10), free_event(0x10)}));
  EXPECT_EQ(r.anomalies.double_free, 1u);
  EXPECT_EQ(r.anomalies.free_unknown, 0u);
  EXPECT_EQ(ops_text(r), "B a0 f0");
}

TEST(Resolve, free_of_null_is_ignored_and_not_an_error) {
  const ResolvedTrace r = resolve(make_trace({free_event(0), alloc_event(0x10, 8)}));
  EXPECT_EQ(r.anomalies.free_null, 1u);
  EXPECT_EQ(r.anomalies.total(), 0u);
  EXPECT_EQ(ops_text(r), "B a0");
}

TEST(Resolve, alloc_at_a_live_address_frees_the_older_allocation_first) {
  const ResolvedTrace r =
      resolve(make_trace({alloc_event(0x10, 8), alloc_event(0x10, 16), free_event(0x10)}));
  EXPECT_EQ(r.anomalies.alloc_over_live, 1u);
  EXPECT_EQ(ops_text(r), "B a0 f0 a1 f1");
}

TEST(Resolve, allocations_live_at_the_end_are_leaks_never_freed) {
  const ResolvedTrace r =
      resolve(make_trace({alloc_event(0x10, 8), alloc_event(0x20, 16), free_event(0x10)}));
  EXPECT_EQ(r.anomalies.leaks, 1u);
  EXPECT_EQ(r.anomalies.leaked_bytes, 16u);
  EXPECT_EQ(ops_text(r), "B a0 a1 f0");
}

TEST(Resolve, failed_allocations_are_counted_not_replayed) {
  const ResolvedTrace r = resolve(make_trace({alloc_event(0, 1 << 30), alloc_event(0x10, 8)}));
  EXPECT_EQ(r.anomalies.failed_allocs, 1u);
  EXPECT_EQ(ops_text(r), "B a0");
}

TEST(Resolve, addresses_are_paired_per_device) {
  const ResolvedTrace r =
      resolve(make_trace({alloc_event(0x10, 8, 0, 0), alloc_event(0x10, 16, 0, 1),
                          free_event(0x10, 0, 1), free_event(0x10, 0, 0)}));
  EXPECT_EQ(r.anomalies.total(), 0u);
  EXPECT_EQ(ops_text(r), "B a0 a1 f1 f0");
  EXPECT_EQ(r.device_of(1), 1);
}

TEST(Resolve, run_begin_inside_a_run_ends_that_run_first) {
  const ResolvedTrace r =
      resolve(make_trace({marker(Op::run_begin, "one"), alloc_event(0x10, 8),
                          marker(Op::run_begin, "two"), free_event(0x10), marker(Op::run_end)}));
  EXPECT_EQ(r.anomalies.nested_run_begin, 1u);
  EXPECT_EQ(ops_text(r), "B a0 E B f0 E");
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].label, "one");
  EXPECT_EQ(r.runs[1].label, "two");
}

TEST(Resolve, run_end_outside_a_run_is_ignored) {
  const ResolvedTrace r =
      resolve(make_trace({marker(Op::run_end), alloc_event(0x10, 8), marker(Op::run_begin),
                          marker(Op::run_end), marker(Op::run_end)}));
  EXPECT_EQ(r.anomalies.run_end_outside_run, 2u);
  EXPECT_EQ(ops_text(r), "a0 B E");
  EXPECT_FALSE(r.implicit_run);
}

TEST(Resolve, trace_without_markers_is_one_implicit_run_that_never_ends) {
  const ResolvedTrace r = resolve(make_trace({alloc_event(0x10, 8, 5), free_event(0x10, 9)}));
  EXPECT_TRUE(r.implicit_run);
  EXPECT_EQ(r.anomalies.unterminated_runs, 0u);
  EXPECT_EQ(ops_text(r), "B a0 f0");
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].begin_time_ns, 5u);
  EXPECT_EQ(r.runs[0].end_time_ns, 9u);
}

TEST(Resolve, run_left_open_at_the_end_is_reported) {
  const ResolvedTrace r = resolve(make_trace({marker(Op::run_begin), alloc_event(0x10, 8)}));
  EXPECT_EQ(r.anomalies.unterminated_runs, 1u);
  EXPECT_EQ(ops_text(r), "B a0");
  EXPECT_EQ(r.runs[0].end_op, r.ops.size());
}

TEST(Resolve, marks_are_not_replayed) {
  const ResolvedTrace r = resolve(make_trace({marker(Op::mark, "step"), alloc_event(0x10, 8)}));
  EXPECT_EQ(ops_text(r), "B a0");
}

TEST(Resolve, segment_events_are_counted_beside_the_requests) {
  Event segment = alloc_event(0x1000, 2 << 20);
  segment.segment = true;
  Event segment_free = free_event(0x1000);
  segment_free.segment = true;
  const ResolvedTrace r =
      resolve(make_trace({segment, alloc_event(0x1000, 512), free_event(0x1000), segment_free}));
  EXPECT_EQ(r.segment_allocs, 1u);
  EXPECT_EQ(r.segment_frees, 1u);
  EXPECT_EQ(r.segment_bytes_allocated, 2u << 20);
  EXPECT_EQ(ops_text(r), "B a0 f0");
  EXPECT_EQ(r.anomalies.total(), 0u);
}

Event segment_call(Op op, std::uint64_t address, std::uint64_t size, std::uint64_t time,
                   MemoryKind kind = MemoryKind::device) {
  Event e = op == Op::alloc ? alloc_event(address, size, time, 0) : free_event(address, time, 0);
  e.size = size;
  e.kind = kind;
  e.segment = true;
  e.stream = 7;
  return e;
}

TEST(Resolve, segment_calls_are_kept_with_the_operation_they_come_before) {
  Event request = alloc_event(0x1000, 512, 11, 0);
  request.stream = 7;
  Event request_free = free_event(0x1000, 12, 0);
  const ResolvedTrace r = resolve(make_trace({
      segment_call(Op::alloc, 0x1000, 2 << 20, 10),                   // 0, before op 1
      request,                                                        // 1: op 1
      request_free,                                                   // 2: op 2
      segment_call(Op::free, 0x1000, 2 << 20, 13),                    // 3, after the last op
      segment_call(Op::alloc, 0x9000, 4 << 20, 14, MemoryKind::vmm),  // 4: a segment_map
      segment_call(Op::free, 0x9000, 4 << 20, 15, MemoryKind::vmm),   // 5: a segment_unmap
  }));
  EXPECT_EQ(ops_text(r), "B a0 f0");
  ASSERT_EQ(r.segment_calls.size(), 4u);
  const SegmentCall& first = r.segment_calls[0];
  EXPECT_EQ(first.before_op, 1u);
  EXPECT_EQ(first.event, 0u);
  EXPECT_EQ(first.time_ns, 10u);
  EXPECT_EQ(first.address, 0x1000u);
  EXPECT_EQ(first.size, 2u << 20);
  EXPECT_EQ(first.action, SegmentAction::alloc);
  EXPECT_EQ(r.origins[first.origin].device, 0);
  EXPECT_EQ(r.origins[first.origin].stream, 7u);
  EXPECT_EQ(r.segment_calls[1].before_op, 3u);  // no operation follows: ops.size()
  EXPECT_EQ(r.segment_calls[1].action, SegmentAction::free);
  EXPECT_EQ(r.segment_calls[1].size, 2u << 20);  // a recorded free keeps its size
  EXPECT_EQ(r.segment_calls[2].action, SegmentAction::map);
  EXPECT_EQ(r.segment_calls[3].action, SegmentAction::unmap);
  EXPECT_EQ(r.segment_calls[3].event, 5u);
  EXPECT_EQ(to_string(SegmentAction::unmap), "segment_unmap");
  // The counts are as before: maps with the allocations, unmaps with the frees.
  EXPECT_EQ(r.segment_allocs, 2u);
  EXPECT_EQ(r.segment_frees, 2u);
}

TEST(Resolve, each_operation_of_a_trace_with_segment_calls_knows_its_event) {
  // Events: 0 segment, 1 alloc A, 2 mark, 3 free(0), 4 alloc B, 5 alloc over A (two ops),
  // 6 free B. Ops: 0 the implicit run_begin, then a0 a1 f0 a2 f1.
  const ResolvedTrace r = resolve(make_trace({
      segment_call(Op::alloc, 0x1000, 1 << 20, 1),
      alloc_event(0x1000, 8, 2, 0),
      marker(Op::mark, "step", 3),
      free_event(0, 4, 0),
      alloc_event(0x2000, 8, 5, 0),
      alloc_event(0x1000, 16, 6, 0),
      free_event(0x2000, 7, 0),
  }));
  EXPECT_EQ(ops_text(r), "B a0 a1 f0 a2 f1");
  const std::optional<std::uint64_t> expected[] = {0, 1, 4, 5, 5, 6};
  for (std::uint64_t op = 0; op < r.ops.size(); ++op) EXPECT_EQ(r.event_of_op(op), expected[op]);
  EXPECT_EQ(r.event_of_op(r.ops.size()), std::nullopt);
}

TEST(Resolve, operation_events_survive_the_removal_of_the_implicit_run) {
  // The run marker comes after a segment call and an operation: the placeholder run_begin made
  // for a trace without markers is dropped, and every index after it moves down one.
  const ResolvedTrace r = resolve(make_trace({
      segment_call(Op::alloc, 0x1000, 1 << 20, 1),  // 0
      alloc_event(0x1000, 8, 2, 0),                 // 1: op 0
      marker(Op::run_begin, "step", 3),             // 2: op 1
      free_event(0x1000, 4, 0),                     // 3: op 2
  }));
  EXPECT_EQ(ops_text(r), "a0 B f0");
  ASSERT_EQ(r.segment_calls.size(), 1u);
  EXPECT_EQ(r.segment_calls[0].before_op, 0u);
  EXPECT_EQ(r.event_of_op(0), 1u);
  EXPECT_EQ(r.event_of_op(1), 2u);
  EXPECT_EQ(r.event_of_op(2), 3u);
}

TEST(Resolve, each_anomaly_is_located_by_event_index_time_address_and_device) {
  Event freed_on_gpu = free_event(0x77, 70, 0);
  freed_on_gpu.thread = 9;
  const ResolvedTrace r = resolve(make_trace({
      marker(Op::run_begin, "a", 10),  // 0
      alloc_event(0x10, 8, 20),        // 1
      free_event(0x99, 30),            // 2: free of unknown address
      free_event(0x10, 40),            // 3
      free_event(0x10, 50),            // 4: double free
      alloc_event(0x20, 8, 60),        // 5
      freed_on_gpu,                    // 6: unknown on cuda:0
      alloc_event(0x20, 8, 80),        // 7: alloc over live
      marker(Op::run_begin, "b", 90),  // 8: nested run_begin
      marker(Op::run_end, {}, 100),    // 9
      marker(Op::run_end, {}, 110),    // 10: run_end outside run
      free_event(0, 120),              // 11: free(NULL), not an anomaly
  }));
  const std::vector<AnomalyAt> expected = {
      {AnomalyKind::free_unknown, 2, 30, 0x99, 0, cpu_device},
      {AnomalyKind::double_free, 4, 50, 0x10, 0, cpu_device},
      {AnomalyKind::free_unknown, 6, 70, 0x77, 9, 0},
      {AnomalyKind::alloc_over_live, 7, 80, 0x20, 0, cpu_device},
      {AnomalyKind::nested_run_begin, 8, 90, 0, 0, cpu_device},
      {AnomalyKind::run_end_outside_run, 10, 110, 0, 0, cpu_device},
  };
  EXPECT_EQ(r.first_anomalies, expected);
  EXPECT_EQ(r.anomalies.total(), expected.size());
  EXPECT_EQ(to_string(AnomalyKind::double_free), "double free");
}

TEST(Resolve, anomalies_in_later_parts_count_events_from_the_start_of_the_trace) {
  StreamResolver resolver;
  const Trace first = make_trace({alloc_event(0x10, 8), free_event(0x10)});
  const Trace second = make_trace({free_event(0x10), free_event(0x30)});
  resolver.add(first);
  resolver.add(second);
  const ResolvedTrace r = resolver.finish(second.origins());
  ASSERT_EQ(r.first_anomalies.size(), 2u);
  EXPECT_EQ(r.first_anomalies[0].event, 2u);
  EXPECT_EQ(r.first_anomalies[0].kind, AnomalyKind::double_free);
  EXPECT_EQ(r.first_anomalies[1].event, 3u);
}

// An alloc of a realloc that returned the block it was given.
Event in_place_alloc(std::uint64_t address, std::uint64_t size, DeviceId device = cpu_device) {
  Event e = alloc_event(address, size, 0, device);
  e.realloc_in_place = true;
  return e;
}

// "f0" for a plain free, "f0k" for one kept for a realloc, "a2r" for an in-place realloc.
std::string flagged_ops_text(const ResolvedTrace& r) {
  std::string out;
  for (const ResolvedOp& op : r.ops) {
    if (!out.empty()) out += ' ';
    if (op.op == ReplayOp::alloc || op.op == ReplayOp::free) {
      out += (op.op == ReplayOp::alloc ? "a" : "f") + std::to_string(op.id);
      if (op.has(ResolvedOp::kept_for_realloc)) out += 'k';
      if (op.has(ResolvedOp::realloc_in_place)) out += 'r';
    } else {
      out += op.op == ReplayOp::run_begin ? "B" : "E";
    }
  }
  return out;
}

TEST(Resolve, an_in_place_realloc_marks_its_free_and_its_alloc) {
  Event other_thread = alloc_event(0x30, 7);
  other_thread.thread = 2;
  Event other_free = free_event(0x30);
  other_free.thread = 2;
  // Another thread's events come between the realloc's two halves.
  const ResolvedTrace r =
      resolve(make_trace({alloc_event(0x10, 100), alloc_event(0x20, 5), free_event(0x10),
                          other_thread, other_free, in_place_alloc(0x10, 50), free_event(0x10)}));
  EXPECT_EQ(flagged_ops_text(r), "B a0 a1 f0k a2 f2 a3r f3");
  EXPECT_EQ(r.in_place_reallocs, (std::vector<InPlaceRealloc>{{3, 0}}));
  EXPECT_EQ(r.kept_for_realloc(3), std::optional<std::uint32_t>(0));
  EXPECT_EQ(r.kept_for_realloc(2), std::nullopt);
  EXPECT_EQ(r.kept_for_realloc(0), std::nullopt);
  EXPECT_EQ(r.anomalies.total(), 0u);
}

TEST(Resolve, an_in_place_realloc_keeps_the_block_of_the_last_free_at_its_address) {
  const ResolvedTrace r =
      resolve(make_trace({alloc_event(0x10, 8), free_event(0x10), alloc_event(0x10, 16),
                          free_event(0x10), in_place_alloc(0x10, 4), in_place_alloc(0x40, 4),
                          free_event(0x40), in_place_alloc(0x40, 2)}));
  EXPECT_EQ(flagged_ops_text(r), "B a0 f0 a1 f1k a2r a3 f3k a4r");
  EXPECT_EQ(r.in_place_reallocs, (std::vector<InPlaceRealloc>{{2, 1}, {4, 3}}));
}

TEST(Resolve, a_realloc_flag_without_the_realloc_free_is_ignored) {
  // No free at the address before it; an alloc over a live block (a missed free); a free of the
  // address on another device.
  const ResolvedTrace r = resolve(
      make_trace({in_place_alloc(0x10, 8), alloc_event(0x20, 8), in_place_alloc(0x20, 16),
                  alloc_event(0x50, 8, 0, 0), free_event(0x50, 0, 0), in_place_alloc(0x50, 8, 1)}));
  EXPECT_EQ(flagged_ops_text(r), "B a0 a1 f1 a2 a3 f3 a4");
  EXPECT_TRUE(r.in_place_reallocs.empty());
  EXPECT_EQ(r.anomalies.alloc_over_live, 1u);
  EXPECT_EQ(r.anomalies.total(), 1u);
}

TEST(Resolve, an_in_place_realloc_finds_its_free_after_the_first_marker_moves_operations) {
  // The free is emitted after the placeholder run_begin, which the first marker removes.
  const ResolvedTrace r =
      resolve(make_trace({alloc_event(0x10, 8), free_event(0x10), marker(Op::run_begin),
                          in_place_alloc(0x10, 4), marker(Op::run_end)}));
  EXPECT_EQ(flagged_ops_text(r), "a0 f0k B a1r E");
  EXPECT_EQ(r.in_place_reallocs, (std::vector<InPlaceRealloc>{{1, 0}}));
}

TEST(Resolve, an_in_place_realloc_pairs_with_a_free_of_an_earlier_part) {
  StreamResolver resolver;
  const Trace first = make_trace({alloc_event(0x10, 8), free_event(0x10)});
  const Trace second = make_trace({in_place_alloc(0x10, 4)});
  resolver.add(first);
  resolver.add(second);
  const ResolvedTrace r = resolver.finish(second.origins());
  EXPECT_EQ(flagged_ops_text(r), "B a0 f0k a1r");
}

TEST(Resolve, only_the_first_anomalies_are_listed_but_all_are_counted) {
  std::vector<Event> events;
  for (std::uint64_t i = 0; i < ResolvedTrace::max_listed_anomalies + 500; ++i)
    events.push_back(free_event(0x1000 + 16 * i));
  const ResolvedTrace r = resolve(make_trace(events));
  EXPECT_EQ(r.anomalies.free_unknown, ResolvedTrace::max_listed_anomalies + 500);
  ASSERT_EQ(r.first_anomalies.size(), ResolvedTrace::max_listed_anomalies);
  EXPECT_EQ(r.first_anomalies.back().event, ResolvedTrace::max_listed_anomalies - 1);
}

std::vector<std::uint64_t> events_of_ops(const ResolvedTrace& r) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = 0; k < r.ops.size(); ++k) out.push_back(r.event_of_op(k).value());
  return out;
}

TEST(Resolve, each_operation_maps_back_to_the_event_it_replays_or_comes_from) {
  Event segment = alloc_event(0x1000, 2 << 20);
  segment.segment = true;
  const ResolvedTrace r = resolve(make_trace({
      segment,                     // 0: not replayed (before it: the implicit run_begin)
      alloc_event(0x10, 8),        // 1: a0
      marker(Op::mark, "m"),       // 2: not replayed
      marker(Op::run_begin, "r"),  // 3: the implicit run_begin goes; B
      alloc_event(0x20, 8),        // 4: a1
      alloc_event(0, 8),           // 5: failed, not replayed
      free_event(0),               // 6: free(NULL), not replayed
      free_event(0x10),            // 7: f0
      free_event(0x10),            // 8: double free, not replayed
      alloc_event(0x20, 8),        // 9: over a live block: f1, then a2
      marker(Op::run_begin, "n"),  // 10: nested: E, then B
      free_event(0x20),            // 11: f2
      marker(Op::run_end),         // 12: E
      marker(Op::run_end),         // 13: outside a run, not replayed
      free_event(0x99),            // 14: unknown, not replayed
      alloc_event(0x30, 8),        // 15: a3
  }));
  EXPECT_EQ(ops_text(r), "a0 B a1 f0 f1 a2 E B f2 E a3");
  EXPECT_EQ(events_of_ops(r), (std::vector<std::uint64_t>{1, 3, 4, 7, 9, 9, 10, 10, 11, 12, 15}));
  // One break per place the correspondence jumps, not one per operation.
  EXPECT_EQ(r.op_event_breaks.size(), 7u);
}

TEST(Resolve, a_trace_replayed_event_for_event_has_one_break) {
  const ResolvedTrace r = resolve(make_trace(
      {marker(Op::run_begin), alloc_event(0x10, 8), free_event(0x10), marker(Op::run_end)}));
  EXPECT_EQ(r.op_event_breaks, (std::vector<ResolvedTrace::OpEventBreak>{{0, 0}}));
  EXPECT_EQ(events_of_ops(r), (std::vector<std::uint64_t>{0, 1, 2, 3}));
}

// The implicit run_begin took event 0 (a segment event); the operations after it had no break
// of their own, and once it goes the first of them needs one.
TEST(Resolve, dropping_the_implicit_run_begin_keeps_the_events_of_what_follows) {
  Event segment = alloc_event(0x1000, 2 << 20);
  segment.segment = true;
  const ResolvedTrace r = resolve(
      make_trace({segment, alloc_event(0x10, 8), alloc_event(0x20, 8), marker(Op::run_begin)}));
  EXPECT_EQ(ops_text(r), "a0 a1 B");
  EXPECT_EQ(events_of_ops(r), (std::vector<std::uint64_t>{1, 2, 3}));
  const ResolvedTrace only_marker =
      resolve(make_trace({segment, marker(Op::run_begin), alloc_event(0x10, 8)}));
  EXPECT_EQ(events_of_ops(only_marker), (std::vector<std::uint64_t>{1, 2}));
}

TEST(Resolve, operations_of_later_parts_map_to_events_counted_from_the_start) {
  StreamResolver resolver;
  const Trace first = make_trace({alloc_event(0x10, 8), marker(Op::mark)});
  const Trace second = make_trace({free_event(0x10), alloc_event(0x20, 8)});
  resolver.add(first);
  resolver.add(second);
  const ResolvedTrace r = resolver.finish(second.origins());
  EXPECT_EQ(ops_text(r), "B a0 f0 a1");
  EXPECT_EQ(events_of_ops(r), (std::vector<std::uint64_t>{0, 0, 2, 3}));
}

TEST(Resolve, operations_made_by_hand_map_to_no_event) {
  ResolvedTrace r;
  r.ops.push_back({0, ReplayOp::alloc});
  EXPECT_EQ(r.event_of_op(0), std::nullopt);
}

ResolveOptions min_size(std::uint64_t bytes) {
  ResolveOptions o;
  o.min_size = bytes;
  return o;
}

Event aligned(Event e, std::uint64_t alignment) {
  e.alignment = alignment;
  return e;
}

Event on_device(Event e) {
  e.kind = MemoryKind::device;
  e.device = 0;
  return e;
}

TEST(ResolveMinSize, small_host_allocations_get_no_id_and_no_operation) {
  const Trace t = make_trace({alloc_event(0x10, 8), alloc_event(0x20, 100), alloc_event(0x30, 15),
                              free_event(0x10), free_event(0x20), alloc_event(0x40, 16),
                              free_event(0x30), free_event(0x40)});
  const ResolvedTrace r = resolve(t, "trace", min_size(16));
  EXPECT_EQ(ops_text(r), "B a0 f0 a1 f1");
  EXPECT_EQ(r.alloc_size, (std::vector<std::uint64_t>{100, 16}));
  EXPECT_EQ(r.anomalies.total(), 0u);  // their frees are matched, silently
  EXPECT_EQ(r.anomalies.leaks, 0u);
  EXPECT_EQ(r.below_min_size, (BelowMinSize{16, 2, 23, 0, 0}));
  // Each operation still names its event.
  EXPECT_EQ(r.event_of_op(1), 1u);
  EXPECT_EQ(r.event_of_op(2), 4u);
  EXPECT_EQ(r.event_of_op(3), 5u);
  // Off (the default): everything is kept and nothing is counted.
  const ResolvedTrace all = resolve(t);
  EXPECT_EQ(all.alloc_size.size(), 4u);
  EXPECT_EQ(all.below_min_size, BelowMinSize{});
}

TEST(ResolveMinSize, device_allocations_are_always_kept) {
  const ResolvedTrace r = resolve(
      make_trace({on_device(alloc_event(0x10, 8)), on_device(aligned(alloc_event(0x20, 512), 256)),
                  on_device(free_event(0x10)), on_device(free_event(0x20))}),
      "trace", min_size(4096));
  EXPECT_EQ(ops_text(r), "B a0 a1 f0 f1");
  EXPECT_EQ(r.below_min_size.allocations, 0u);
}

TEST(ResolveMinSize, host_allocations_aligned_above_64_bytes_are_left_out_whatever_their_size) {
  const Trace t = make_trace(
      {aligned(alloc_event(0x10, 4096), 128), aligned(alloc_event(0x20, 4096), 64),
       aligned(alloc_event(0x30, 8), 256), free_event(0x10), free_event(0x20), free_event(0x30)});
  const ResolvedTrace r = resolve(t, "trace", min_size(16));
  EXPECT_EQ(ops_text(r), "B a0 f0");
  EXPECT_EQ(r.alloc_size, (std::vector<std::uint64_t>{4096}));
  // 8 bytes aligned at 256 is below the minimum anyway: only the 4096 bytes count as
  // over-aligned.
  EXPECT_EQ(r.below_min_size, (BelowMinSize{16, 2, 4104, 1, 0}));
  EXPECT_EQ(r.anomalies.total(), 0u);
}

TEST(ResolveMinSize, anonymous_mappings_are_left_out_as_run_leaves_them_to_the_kernel) {
  Event mapping = alloc_event(0x100000, 1 << 20);
  mapping.kind = MemoryKind::mapped;
  Event unmapping = free_event(0x100000);
  unmapping.kind = MemoryKind::mapped;
  const Trace t = make_trace({mapping, alloc_event(0x10, 4096), unmapping, free_event(0x10)});
  const ResolvedTrace r = resolve(t, "trace", min_size(16));
  EXPECT_EQ(ops_text(r), "B a0 f0");
  EXPECT_EQ(r.below_min_size, (BelowMinSize{16, 0, 0, 0, 1}));
  EXPECT_EQ(r.anomalies.total(), 0u);
}

TEST(ResolveMinSize, an_in_place_realloc_of_a_replayed_block_stays_replayed_whatever_its_size) {
  // 0x10: 4096 bytes kept, shrunk in place to 8 (as `alloclab run` keeps it); 0x20: 8 bytes left
  // out, grown in place to 4096 (a plain allocation, by its size).
  Event shrunk = alloc_event(0x10, 8);
  shrunk.realloc_in_place = true;
  Event grown = alloc_event(0x20, 4096);
  grown.realloc_in_place = true;
  const Trace t = make_trace({alloc_event(0x10, 4096), alloc_event(0x20, 8), free_event(0x10),
                              shrunk, free_event(0x20), grown, free_event(0x10), free_event(0x20)});
  const ResolvedTrace r = resolve(t, "trace", min_size(16));
  EXPECT_EQ(ops_text(r), "B a0 f0 a1 a2 f1 f2");
  EXPECT_EQ(r.alloc_size, (std::vector<std::uint64_t>{4096, 8, 4096}));
  EXPECT_TRUE(r.ops[2].has(ResolvedOp::kept_for_realloc));
  EXPECT_TRUE(r.ops[3].has(ResolvedOp::realloc_in_place));
  EXPECT_FALSE(r.ops[4].has(ResolvedOp::realloc_in_place));
  EXPECT_EQ(r.below_min_size.allocations, 1u);
  EXPECT_EQ(r.anomalies.total(), 0u);
}

TEST(ResolveMinSize, anomalies_around_left_out_blocks_are_counted_as_without_the_filter) {
  // A second free of a left-out block is a double free, a free of an address never seen is
  // unknown, and an allocation over a live left-out block missed its free: the same anomalies
  // as the whole trace has.
  const Trace t =
      make_trace({alloc_event(0x10, 8), free_event(0x10), free_event(0x10), free_event(0x99),
                  alloc_event(0x20, 8), alloc_event(0x20, 64), free_event(0x20),
                  alloc_event(0x30, 64), alloc_event(0x30, 8), free_event(0x30)});
  const ResolvedTrace filtered = resolve(t, "trace", min_size(16));
  const ResolvedTrace whole = resolve(t);
  EXPECT_EQ(filtered.anomalies.double_free, 1u);
  EXPECT_EQ(filtered.anomalies.free_unknown, 1u);
  EXPECT_EQ(filtered.anomalies.alloc_over_live, 2u);
  EXPECT_EQ(filtered.anomalies.total(), whole.anomalies.total());
  // The 64-byte block at 0x30 is freed by the allocation over it, as without the filter.
  EXPECT_EQ(ops_text(filtered), "B a0 f0 a1 f1");
  EXPECT_EQ(filtered.anomalies.leaks, 0u);
}

TEST(ResolveMinSize, a_million_events_of_mixed_sizes_keep_exactly_the_large_blocks) {
  // 500,000 host allocations of 1 to 256 bytes (some aligned at 64), each freed later, among up
  // to 1,000 live blocks at once, plus device allocations of any size.
  test::SplitMix rng{42};
  std::vector<Event> events;
  events.reserve(1'000'000);
  std::vector<std::uint64_t> live;
  std::uint64_t next_address = 0x100000;
  std::uint64_t expected_kept = 0, expected_left = 0, expected_left_bytes = 0, over_aligned = 0;
  std::vector<std::uint64_t> kept_sizes;
  while (events.size() < 1'000'000) {
    if (live.size() < 1000 && (live.empty() || rng.below(2) == 0)) {
      const std::uint64_t size = 1 + rng.below(256);
      const bool device = rng.below(8) == 0;
      Event e = alloc_event(next_address, size, events.size());
      if (device) e = on_device(e);
      if (rng.below(16) == 0) e.alignment = rng.below(2) == 0 ? 64 : 128;
      const bool left = !device && (size < 64 || e.alignment > run_block_alignment);
      if (left) {
        ++expected_left;
        expected_left_bytes += size;
        if (size >= 64) ++over_aligned;
      } else {
        ++expected_kept;
        kept_sizes.push_back(size);
      }
      events.push_back(e);
      live.push_back(next_address + (device ? 1 : 0));
      next_address += 512;
    } else {
      const std::size_t k = rng.below(live.size());
      const std::uint64_t tagged = live[k];
      live[k] = live.back();
      live.pop_back();
      Event f = free_event(tagged & ~std::uint64_t{1}, events.size());
      if (tagged & 1) f = on_device(f);
      events.push_back(f);
    }
  }
  const Trace t = make_trace(events);
  const ResolvedTrace r = resolve(t, "trace", min_size(64));
  EXPECT_EQ(r.alloc_size, kept_sizes);
  EXPECT_EQ(r.below_min_size,
            (BelowMinSize{64, expected_left, expected_left_bytes, over_aligned, 0}));
  EXPECT_GT(expected_left, 100'000u);
  EXPECT_GT(expected_kept, 100'000u);
  EXPECT_EQ(r.anomalies.total(), 0u);
  // Every kept block is allocated once and freed at most once, after its allocation; blocks
  // still live at the end are the leaks.
  std::vector<int> state(r.alloc_size.size(), 0);
  std::uint64_t frees = 0;
  for (const ResolvedOp& op : r.ops) {
    if (op.op == ReplayOp::alloc) {
      EXPECT_EQ(state[op.id]++, 0);
    }
    if (op.op == ReplayOp::free) {
      EXPECT_EQ(state[op.id]++, 1);
      ++frees;
    }
  }
  EXPECT_EQ(r.anomalies.leaks, expected_kept - frees);
  EXPECT_EQ(r.ops.size(), 1 + expected_kept + frees);
  // Streamed in parts, the same.
  StreamResolver parts(t.size(), "trace", min_size(64));
  const std::size_t half = t.size() / 2;
  parts.add(make_trace(std::vector<Event>(events.begin(), events.begin() + half)));
  parts.add(make_trace(std::vector<Event>(events.begin() + half, events.end())));
  const ResolvedTrace streamed = parts.finish(t.origins());
  EXPECT_EQ(streamed.ops.size(), r.ops.size());
  EXPECT_EQ(streamed.alloc_size, r.alloc_size);
  EXPECT_EQ(streamed.below_min_size, r.below_min_size);
}

}  // namespace
}  // namespace alloclab
