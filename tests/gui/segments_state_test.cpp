// The segments view's data, without a window: segments grouped by device, pool and stream; the
// slider's event and time mapped to operations; and the background worker, which must give the
// state a replay cursor has at any point, forward and back, on a trace of millions of
// operations, while the calls a frame makes (seek, state) return at once.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/replay_cursor.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "gui/segments.hpp"
#include "tests/real_size.hpp"

namespace alloclab::gui {
namespace {

using Clock = std::chrono::steady_clock;

PyTorchSegmentInfo segment(std::uint64_t address, std::uint64_t stream, bool small,
                           std::vector<PyTorchBlockInfo> blocks) {
  PyTorchSegmentInfo s;
  s.address = address;
  s.stream = stream;
  s.small = small;
  for (const PyTorchBlockInfo& b : blocks) s.size += b.size;
  s.blocks = std::move(blocks);
  return s;
}

TEST(SegmentsState, groups_segments_by_device_then_large_pool_first_then_stream) {
  const std::uint64_t MiB = 1 << 20;
  const SegmentsState state = group_segments(
      7, {{0,
           {segment(0x1000, 0, true, {{0x1000, MiB, true}, {0x1000 + MiB, MiB, false}}),
            segment(0x900000, 3, false, {{0x900000, 20 * MiB, false}}),
            segment(0x500000, 0, false, {{0x500000, 4 * MiB, true}, {0x900000, 16 * MiB, false}}),
            segment(0x400000, 0, false, {{0x400000, 20 * MiB, true}})}},
          {1, {segment(0x1000, 0, true, {{0x1000, 2 * MiB, false}})}}});
  EXPECT_EQ(state.position, 7u);
  ASSERT_EQ(state.groups.size(), 4u);
  EXPECT_EQ(state.groups[0].device, 0);
  EXPECT_FALSE(state.groups[0].small);
  EXPECT_EQ(state.groups[0].stream, 0u);
  ASSERT_EQ(state.groups[0].segments.size(), 2u);
  EXPECT_EQ(state.groups[0].segments[0].address, 0x400000u) << "address order within a group";
  EXPECT_EQ(state.groups[0].reserved, 40 * MiB);
  EXPECT_EQ(state.groups[0].allocated, 24 * MiB);
  EXPECT_EQ(state.groups[1].stream, 3u);
  EXPECT_TRUE(state.groups[2].small);
  EXPECT_EQ(state.groups[3].device, 1);
  EXPECT_EQ(state.reserved, 64 * MiB);
  EXPECT_EQ(state.allocated, 25 * MiB);
  EXPECT_EQ(state.cached(), 39 * MiB);
  EXPECT_EQ(state.segments, 5u);
  EXPECT_EQ(state.pieces, 7u);
  EXPECT_EQ(state.widest_large, 20 * MiB);
  EXPECT_EQ(state.widest_small, 2 * MiB);
}

TEST(SegmentsState, the_slider_maps_events_and_times_to_the_operations_through_them) {
  // Event 2 is a free of nothing (not replayed); the resolver adds a run_begin for event 0.
  Trace t;
  const std::uint64_t times[] = {100, 200, 300, 400, 500};
  const Op ops[] = {Op::alloc, Op::alloc, Op::free, Op::free, Op::free};
  const std::uint64_t addresses[] = {0x1000, 0x2000, 0x9000, 0x1000, 0x2000};
  for (int i = 0; i < 5; ++i) {
    Event e;
    e.op = ops[i];
    e.address = addresses[i];
    e.size = ops[i] == Op::alloc ? 64 : 0;
    e.time_ns = times[i];
    t.push_back(e);
  }
  const ResolvedTrace r = resolve(t);
  ASSERT_EQ(r.ops.size(), 5u);  // run_begin, alloc, alloc, free, free
  EXPECT_EQ(event_of(r, 0), 0u);
  EXPECT_EQ(event_of(r, 2), 1u);
  EXPECT_EQ(event_of(r, 3), 3u);
  EXPECT_EQ(ops_through_event(r, 0), 2u);
  EXPECT_EQ(ops_through_event(r, 1), 3u);
  EXPECT_EQ(ops_through_event(r, 2), 3u) << "an event that is not replayed adds nothing";
  EXPECT_EQ(ops_through_event(r, 3), 4u);
  EXPECT_EQ(ops_through_event(r, 99), 5u);
  EXPECT_EQ(ops_through_time(r, 99), 0u);
  EXPECT_EQ(ops_through_time(r, 200), 3u);
  EXPECT_EQ(ops_through_time(r, 450), 4u);
}

TEST(SegmentsState, only_pytorch_family_specs_have_segments) {
  EXPECT_EQ(pytorch_family_error("pytorch"), "");
  EXPECT_EQ(pytorch_family_error("pytorch:max_split_size=64MiB"), "");
  EXPECT_EQ(pytorch_family_error("pytorch-conf:roundup_power2_divisions:4"), "");
  EXPECT_NE(pytorch_family_error("exact").find("not a pytorch"), std::string::npos);
  EXPECT_NE(pytorch_family_error("pytorch:bogus=1"), "");
  EXPECT_NE(pytorch_family_error(""), "");
}

std::shared_ptr<const TraceDoc> big_trace() {
  SyntheticOptions options;
  options.shape = SyntheticShape::transformer;
  options.min_events = test::real_size(2'000'000);
  auto doc = std::make_shared<TraceDoc>();
  doc->path = "big";
  doc->resolved = resolve(generate_synthetic(options));
  return doc;
}

std::uint64_t reserved_at(const ResolvedTrace& trace, std::uint64_t position,
                          const ReplayOptions& options = {}) {
  ReplayCursor cursor(trace, "pytorch", options);
  cursor.advance_to(position);
  return cursor.reserved_bytes();
}

// Waits for the worker to settle at `position`; every seek and state call on the way (what a
// frame makes) must return at once.
std::shared_ptr<const SegmentsState> settle(SegmentsWorker& worker, std::uint64_t position,
                                            double& slowest_ms) {
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  for (;;) {
    const auto t0 = Clock::now();
    worker.seek(position);
    std::shared_ptr<const SegmentsState> state = worker.state();
    const bool done = worker.settled();
    slowest_ms =
        std::max(slowest_ms, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (done && state && state->position == position) return state;
    if (Clock::now() > deadline) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(SegmentsWorker, goes_forward_and_back_on_millions_of_operations_without_blocking_a_frame) {
  const std::shared_ptr<const TraceDoc> trace = big_trace();
  const std::uint64_t n = trace->resolved.ops.size();
  ASSERT_GT(n, test::real_size(2'000'000));
  SegmentsWorker worker(trace, "pytorch", std::nullopt);
  double slowest_ms = 0;
  // To the end, then (before it gets there) back to a third: the replay starts over.
  worker.seek(n);
  EXPECT_FALSE(worker.settled()) << "seek replayed millions of operations before returning";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::uint64_t points[] = {n / 3, n / 3 + 12345, n - 1, n / 2};
  for (const std::uint64_t p : points) {
    const auto state = settle(worker, p, slowest_ms);
    ASSERT_TRUE(state) << "never settled at " << p;
    EXPECT_EQ(state->reserved, reserved_at(trace->resolved, p)) << "at " << p;
  }
  EXPECT_TRUE(worker.error().empty()) << worker.error();
  EXPECT_LT(slowest_ms, 50.0) << "a frame's calls waited for the replay";
}

TEST(SegmentsWorker, finds_the_first_failure_under_a_memory_limit) {
  SyntheticOptions synthetic;
  synthetic.shape = SyntheticShape::cnn;
  synthetic.runs = 4;
  auto doc = std::make_shared<TraceDoc>();
  doc->resolved = resolve(generate_synthetic(synthetic));
  const std::uint64_t peak =
      replay_sim(doc->resolved, "pytorch").result.metrics.peak_reserved_bytes;
  ReplayOptions limited;
  limited.memory_limit = peak / 2;
  const auto expected = replay_sim(doc->resolved, "pytorch", limited).result.first_failure;
  ASSERT_TRUE(expected);

  SegmentsWorker worker(doc, "pytorch", peak / 2);
  double slowest_ms = 0;
  worker.seek(expected->op_index + 1);
  const auto state = settle(worker, expected->op_index + 1, slowest_ms);
  ASSERT_TRUE(state);
  ASSERT_TRUE(worker.failure_searched());
  ASSERT_TRUE(worker.first_failure());
  EXPECT_EQ(*worker.first_failure(), *expected);
  // Right after the failed request the segments are those PyTorch's message describes.
  EXPECT_EQ(state->reserved, expected->reserved_bytes);
  EXPECT_EQ(state->allocated, expected->allocated_bytes);
}

TEST(SegmentsWorker, refuses_a_spec_outside_the_pytorch_family_at_once) {
  auto doc = std::make_shared<TraceDoc>();
  EXPECT_THROW(SegmentsWorker(doc, "best-fit", std::nullopt), std::invalid_argument);
}

}  // namespace
}  // namespace alloclab::gui
