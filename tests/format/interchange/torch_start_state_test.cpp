// The allocator state at a PyTorch snapshot's first history entry: the dumped `segments` walked
// back through the history (alloclab/format/start_state.hpp).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/error.hpp"
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/start_state.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/trim.hpp"
#include "interchange_test_util.hpp"
#include "tests/real_size.hpp"

namespace alloclab {
namespace {

using nlohmann::json;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t S = 0x7f0000000000;  // a 20 MiB segment held since before the history
constexpr std::uint64_t T = 0x7f0002000000;  // a 2 MiB segment the history frees (empty_cache)
constexpr std::uint64_t U = 0x7f0004000000;  // a 24 MiB segment the history allocates

json entry(const char* action, std::uint64_t addr, std::uint64_t size, std::uint64_t t,
           std::uint64_t stream = 0) {
  return {{"action", action}, {"addr", addr}, {"size", size}, {"stream", stream}, {"time_us", t}};
}

json block(std::uint64_t address, std::uint64_t size, std::uint64_t requested, const char* state) {
  return {{"address", address}, {"size", size}, {"requested_size", requested}, {"state", state}};
}

// Before the history: S holds a 3 MiB block at S (live to the end) and a 5 MB block at S + 3 MiB
// (freed in the history); T holds a 1000 B block (freed, then T is freed). The history also
// allocates U and a 24 MiB block in it, live at the end.
json mid_run_snapshot() {
  json segments =
      json::array({{{"device", 0},
                    {"address", S},
                    {"total_size", 20 * kMiB},
                    {"stream", 0},
                    {"segment_type", "large"},
                    {"segment_pool_id", {0, 0}},
                    {"is_expandable", false},
                    {"blocks",
                     {block(S, 3 * kMiB, 3 * kMiB - 7, "active_allocated"),
                      block(S + 3 * kMiB, 17 * kMiB, 0, "inactive")}}},
                   {{"device", 0},
                    {"address", U},
                    {"total_size", 24 * kMiB},
                    {"stream", 0},
                    {"segment_type", "large"},
                    {"blocks", {block(U, 24 * kMiB, 24 * kMiB, "active_pending_free")}}}});
  json history = json::array(
      {entry("free_completed", S + 3 * kMiB, 5000000, 10), entry("free_completed", T, 1000, 11, 9),
       entry("segment_free", T, 2 * kMiB, 12, 9), entry("segment_alloc", U, 24 * kMiB, 13),
       entry("alloc", U, 24 * kMiB, 14)});
  return {{"segments", segments}, {"device_traces", {history}}};
}

Event marker(std::uint64_t time_ns, Op op) {
  Event e;
  e.time_ns = time_ns;
  e.op = op;
  e.device = 0;
  e.kind = MemoryKind::device;
  return e;
}

Trace parse(const json& snapshot, const std::string& name = "mid.json") {
  return parse_torch_snapshot_json(snapshot.dump(), name);
}

TEST(TorchStartState, a_history_that_starts_mid_run_gives_the_state_at_its_first_entry) {
  const Trace trace = parse(mid_run_snapshot());
  const std::optional<StartState> start = start_state_of(trace);
  ASSERT_TRUE(start);
  ASSERT_EQ(start->segments.size(), 2u);
  EXPECT_EQ(start->segments[0], (StartSegment{0, 0, S, 20 * kMiB, SegmentPool::large}));
  EXPECT_EQ(start->segments[1], (StartSegment{0, 9, T, 2 * kMiB, SegmentPool::unknown}));
  ASSERT_EQ(start->blocks.size(), 3u);
  EXPECT_EQ(start->blocks[0], (StartBlock{0, 0, S, 3 * kMiB - 7, 3 * kMiB}));
  EXPECT_EQ(start->blocks[1], (StartBlock{0, 0, S + 3 * kMiB, 5000000, std::nullopt}));
  EXPECT_EQ(start->blocks[2], (StartBlock{0, 9, T, 1000, std::nullopt}));
  EXPECT_TRUE(start->gaps.empty());
  EXPECT_EQ(start->guessed_bytes, 0u);

  // The frees of blocks from before the history are frees of known blocks, not anomalies.
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.anomalies.free_unknown, 0u);
  EXPECT_EQ(resolved.start_blocks(), 3u);
  EXPECT_EQ(resolved.allocation_count(), 4u);
  EXPECT_EQ(resolved.anomalies.leaks, 1u);  // the 24 MiB block; the 3 MiB one is not the trace's
  const TraceSummary summary = summarize(trace, resolved);
  EXPECT_EQ(summary.allocations, 1u);
  ASSERT_TRUE(summary.start_state);
  EXPECT_EQ(summary.start_state->segments, 2u);
  EXPECT_EQ(summary.start_state->segment_bytes, 22 * kMiB);
  EXPECT_EQ(summary.start_state->blocks_without_capacity, 2u);
  // Live bytes start at the start state's 8.1 MB; the peak comes with the 24 MiB block.
  EXPECT_EQ(summary.peak_live_bytes, 3 * kMiB - 7 + 24 * kMiB);
  const json j = to_json(summary);
  EXPECT_EQ(j["start_state"]["blocks"], 3);
  EXPECT_EQ(j["start_state"]["partial"], false);
}

TEST(TorchStartState, a_snapshot_file_starts_the_replay_from_its_state) {
  // A 20 MiB segment with a 3 MiB block and a 5 MB block live before the history, which frees
  // the second, allocates 4 MB there and frees it again.
  const std::string path = test::data_file("snapshot_mid_run.json");
  const ResolvedTrace resolved = resolve(read_torch_snapshot(path), path);
  ASSERT_TRUE(resolved.start_state);
  ASSERT_EQ(resolved.start_state->blocks.size(), 2u);
  // The 4 MB allocation at the freed block's address does not say where that block ended.
  EXPECT_FALSE(resolved.start_state->blocks[1].capacity);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.allocation_count(), 3u);
}

TEST(TorchStartState, a_freed_block_is_sized_by_the_next_allocation_in_its_space) {
  // X (5 MB requested) was cut from its piece with room to spare: 5,000,192 B. While X is live,
  // a 2 MiB allocation takes the front of the free piece after it, at X's end.
  json snapshot = mid_run_snapshot();
  const std::uint64_t x = S + 3 * kMiB;
  snapshot["device_traces"][0] = json::array({entry("alloc", x + 5000192, 2 * kMiB, 1),
                                              entry("free_completed", x + 5000192, 2 * kMiB, 2),
                                              entry("free_completed", x, 5000000, 3)});
  snapshot["segments"].erase(1);
  const std::optional<StartState> start = start_state_of(parse(snapshot));
  ASSERT_TRUE(start);
  ASSERT_EQ(start->blocks.size(), 2u);
  EXPECT_EQ(start->blocks[1].address, x);
  EXPECT_EQ(start->blocks[1].capacity, 5000192u);
  // An allocation after X's free says nothing of X.
  snapshot["device_traces"][0] = json::array(
      {entry("free_completed", x, 5000000, 3), entry("alloc", x + 5000192, 2 * kMiB, 4)});
  const std::optional<StartState> later = start_state_of(parse(snapshot));
  ASSERT_TRUE(later);
  EXPECT_FALSE(later->blocks[1].capacity);
}

TEST(TorchStartState, a_history_from_an_empty_allocator_has_none) {
  json snapshot = mid_run_snapshot();
  snapshot["device_traces"][0] =
      json::array({entry("segment_alloc", S, 20 * kMiB, 1), entry("alloc", S, 3 * kMiB - 7, 2),
                   entry("segment_alloc", U, 24 * kMiB, 3), entry("alloc", U, 24 * kMiB, 4)});
  const Trace trace = parse(snapshot);
  EXPECT_FALSE(trace.metadata.contains(kStartStateKey));
  EXPECT_FALSE(resolve(trace).start_state);
  EXPECT_TRUE(trace.warnings.empty()) << trace.warnings.front();
}

TEST(TorchStartState, blocks_in_no_known_segment_are_guessed_and_said) {
  json snapshot = mid_run_snapshot();
  snapshot.erase("segments");
  const Trace trace = parse(snapshot, "nosegments.json");
  const std::optional<StartState> start = start_state_of(trace);
  ASSERT_TRUE(start);
  EXPECT_EQ(start->segments.size(), 1u);  // T, from its segment_free
  EXPECT_EQ(start->blocks.size(), 2u);    // S + 3 MiB and T
  EXPECT_EQ(start->guessed_bytes, 5000000u);
  ASSERT_EQ(start->gaps.size(), 1u);
  EXPECT_NE(start->gaps[0].find("1 block(s) live at the first entry"), std::string::npos);
  bool warned = false;
  for (const std::string& w : trace.warnings) warned |= w == start->gaps[0];
  EXPECT_TRUE(warned);
}

TEST(TorchStartState, a_history_that_disagrees_with_the_dump_is_said) {
  json snapshot = mid_run_snapshot();
  // An alloc the dump does not show live and the history never frees.
  snapshot["device_traces"][0].push_back(entry("alloc", S + 10 * kMiB, kMiB * 2, 20));
  const std::optional<StartState> start = start_state_of(parse(snapshot));
  ASSERT_TRUE(start);
  ASSERT_FALSE(start->gaps.empty());
  EXPECT_NE(start->gaps[0].find("the history and the dump disagree"), std::string::npos);
}

TEST(TorchStartState, expandable_and_private_pool_segments_are_said) {
  json snapshot = mid_run_snapshot();
  snapshot["segments"][0]["is_expandable"] = true;
  snapshot["segments"][1]["segment_pool_id"] = {1, 2};
  const std::optional<StartState> start = start_state_of(parse(snapshot));
  ASSERT_TRUE(start);
  ASSERT_EQ(start->gaps.size(), 2u);
  EXPECT_NE(start->gaps[0].find(
                "1 expandable segment(s), which a replay starts from as fixed-size segments"),
            std::string::npos);
  EXPECT_NE(start->gaps[1].find("private pools"), std::string::npos);
}

TEST(TorchStartState, older_snapshots_without_block_addresses_tile_their_segments) {
  json snapshot = mid_run_snapshot();
  for (json& b : snapshot["segments"][0]["blocks"]) b.erase("address");
  const std::optional<StartState> start = start_state_of(parse(snapshot));
  ASSERT_TRUE(start);
  EXPECT_EQ(start->blocks[0].address, S);
  EXPECT_EQ(start->blocks[0].capacity, 3 * kMiB);
}

TEST(TorchStartState, bad_segments_are_refused_naming_the_item) {
  const auto error_of = [](const json& snapshot) {
    return test::input_error([&] { parse(snapshot, "bad.json"); });
  };
  json snap = mid_run_snapshot();
  snap["segments"] = 5;
  EXPECT_EQ(error_of(snap), "bad.json: \"segments\" is not a list");
  snap = mid_run_snapshot();
  snap["segments"][1]["blocks"][0]["size"] = 25 * kMiB;
  EXPECT_EQ(error_of(snap), "bad.json: segments[1].blocks[0]: lies outside its segment [" +
                                std::to_string(U) + ", +25165824)");
  snap = mid_run_snapshot();
  snap["segments"][0]["blocks"][1]["state"] = "weird";
  EXPECT_EQ(error_of(snap),
            "bad.json: segments[0].blocks[1]: 'state' is not active_allocated, "
            "active_pending_free or inactive: \"weird\"");
  snap = mid_run_snapshot();
  snap["segments"][0]["device"] = 3;
  EXPECT_EQ(error_of(snap), "bad.json: segments[0]: device 3, but device_traces lists 1 device(s)");
  snap = mid_run_snapshot();
  snap["segments"][0]["segment_type"] = "medium";
  EXPECT_EQ(error_of(snap),
            "bad.json: segments[0]: 'segment_type' is not \"small\" or \"large\": \"medium\"");
  snap = mid_run_snapshot();
  snap["segments"][0]["total_size"] = -1;
  EXPECT_EQ(error_of(snap), "bad.json: segments[0]: negative 'total_size'");
}

TEST(TorchStartState, travels_through_an_alt_file_and_is_checked_on_load) {
  const Trace trace = parse(mid_run_snapshot());
  const std::string path = test::temp_file("start_state.alt");
  write_alt(trace, path);
  const Trace back = read_alt(path);
  EXPECT_EQ(start_state_of(back), start_state_of(trace));
  EXPECT_EQ(resolve(back).start_blocks(), 3u);

  // A damaged state is refused with the file's name, whatever the format.
  Trace damaged = trace;
  damaged.metadata[kStartStateKey]["blocks"][1][2] = S + kMiB;  // inside the block before it
  EXPECT_EQ(test::input_error([&] { resolve(damaged, "d.alt"); }),
            "d.alt: allocator_state_at_start: blocks[1] overlaps the one before it or is out of "
            "order");
  damaged = trace;
  damaged.metadata[kStartStateKey]["segments"][0] = "x";
  EXPECT_EQ(test::input_error([&] { resolve(damaged, "d.alt"); }),
            "d.alt: allocator_state_at_start: segments[0] is not a list of 5 values: \"x\"");
}

TEST(TorchStartState, trimming_to_runs_drops_the_state_and_its_blocks_frees) {
  json snapshot = mid_run_snapshot();
  // A run around the last two entries only; the frees of start blocks come before it.
  Trace trace = parse(snapshot);
  Trace with_run;
  with_run.metadata = trace.metadata;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (i == 3) with_run.push_back(marker(13'000'000 - 1, Op::run_begin));
    with_run.push_back(trace.event(i));
  }
  with_run.push_back(marker(15'000'000, Op::run_end));
  const Trace trimmed = trim_to_runs(with_run);
  EXPECT_FALSE(trimmed.metadata.contains(kStartStateKey));
  EXPECT_EQ(resolve(trimmed).anomalies.free_unknown, 0u);
}

TEST(TorchStartState, hundreds_of_thousands_of_live_blocks_are_reconstructed) {
  // One 2 GiB segment tiled with 4 KiB blocks live since before the history, half of them freed
  // by it: a real-sized state, read and resolved without anomalies.
  constexpr std::uint64_t n = test::real_size(250000), piece = 4096;
  json blocks = json::array();
  for (std::uint64_t k = 0; k < n; ++k)
    blocks.push_back(block(S + k * piece, piece, piece - 1, "active_allocated"));
  json history = json::array();
  for (std::uint64_t k = 0; k < n; k += 2) {
    history.push_back(entry("free_completed", S + k * piece, piece - 1, 100 + k));
    history.push_back(entry("alloc", S + k * piece, piece - 1, 101 + k));
  }
  json snapshot = {{"segments",
                    {{{"device", 0},
                      {"address", S},
                      {"total_size", n * piece},
                      {"stream", 0},
                      {"segment_type", "large"},
                      {"blocks", blocks}}}},
                   {"device_traces", {history}}};
  const Trace trace = parse(snapshot, "big.json");
  const ResolvedTrace resolved = resolve(trace);
  ASSERT_TRUE(resolved.start_state);
  EXPECT_EQ(resolved.start_blocks(), n);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.anomalies.leaks, n / 2);  // the blocks the history allocated again
}

}  // namespace
}  // namespace alloclab
