// Reading PyTorch memory snapshots as JSON (the same mapping reads the pickle:
// torch_pickle_test.cpp).
#include <gtest/gtest.h>

#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "alloclab/format/resolve.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

using test::data_file;
using test::input_error;

constexpr std::uint64_t d0_block = 139637976727552;
constexpr std::uint64_t d1_block = 138538465099776;

Trace basic() {
  return read_torch_snapshot_json(data_file("snapshot_basic.json"));
}

TEST(TorchSnapshot, merges_devices_by_time) {
  const Trace trace = basic();
  ASSERT_EQ(trace.size(), 12u);
  const std::uint64_t times_us[] = {1000, 1001, 1002, 1003, 1004, 1006,
                                    1007, 1008, 1010, 1012, 1013, 1014};
  const DeviceId devices[] = {0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0};
  for (std::size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(trace.time_ns(i), times_us[i] * 1000) << i;
    EXPECT_EQ(trace.device(i), devices[i]) << i;
    // Events 10 and 11 are the segment_map and segment_unmap of an expandable segment.
    EXPECT_EQ(trace.kind(i), i >= 10 ? MemoryKind::vmm : MemoryKind::device) << i;
  }
}

TEST(TorchSnapshot, alloc_keeps_the_requested_size_and_stream) {
  const Trace trace = basic();
  EXPECT_EQ(trace.op(1), Op::alloc);
  EXPECT_FALSE(trace.segment(1));
  EXPECT_EQ(trace.address(1), d0_block);
  EXPECT_EQ(trace.size_of(1), 1000u);
  EXPECT_EQ(trace.op(4), Op::alloc);
  EXPECT_EQ(trace.stream(4), 5u);
  EXPECT_EQ(trace.size_of(4), 5000000u);
}

TEST(TorchSnapshot, free_completed_frees_and_free_requested_is_only_counted) {
  const Trace trace = basic();
  // free_requested at 1005 µs is not an event; free_completed at 1007 µs is the free.
  EXPECT_EQ(trace.op(6), Op::free);
  EXPECT_EQ(trace.time_ns(6), 1007'000u);
  EXPECT_EQ(trace.address(6), d0_block);
  for (std::size_t i = 0; i < trace.size(); ++i) EXPECT_NE(trace.time_ns(i), 1005'000u);
  EXPECT_EQ(trace.metadata["torch_snapshot"]["free_requested"], 1);
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.allocation_count(), 3u);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.anomalies.leaks, 1u);  // the 24-byte block is still live
}

TEST(TorchSnapshot, segment_events_are_flagged_as_the_allocators_own) {
  const Trace trace = basic();
  EXPECT_TRUE(trace.segment(0));
  EXPECT_EQ(trace.op(0), Op::alloc);
  EXPECT_EQ(trace.size_of(0), 2097152u);
  EXPECT_TRUE(trace.segment(7));  // segment_free on cuda:1
  EXPECT_EQ(trace.op(7), Op::free);
  EXPECT_EQ(trace.address(7), d1_block);
  EXPECT_TRUE(trace.segment(10));  // segment_map
  EXPECT_EQ(trace.op(10), Op::alloc);
  EXPECT_TRUE(trace.segment(11));  // segment_unmap
  EXPECT_EQ(trace.op(11), Op::free);
  // A mapping tells itself from a whole segment by its kind.
  EXPECT_EQ(trace.kind(0), MemoryKind::device);
  EXPECT_EQ(trace.kind(7), MemoryKind::device);
  EXPECT_EQ(trace.kind(10), MemoryKind::vmm);
  EXPECT_EQ(trace.kind(11), MemoryKind::vmm);
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.segment_allocs, 3u);
  EXPECT_EQ(resolved.segment_frees, 2u);
}

TEST(TorchSnapshot, snapshot_and_oom_become_marks) {
  const Trace trace = basic();
  EXPECT_EQ(trace.op(8), Op::mark);
  EXPECT_EQ(trace.label(8), "snapshot");
  EXPECT_EQ(trace.op(9), Op::mark);
  EXPECT_EQ(trace.label(9), "oom device_free=1048576");
  EXPECT_EQ(trace.size_of(9), 4294967296u);  // the request that failed
  const auto& ooms = trace.metadata["torch_snapshot"]["ooms"];
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_EQ(ooms[0]["device_free"], 1048576);
  EXPECT_EQ(ooms[0]["size"], 4294967296u);
}

TEST(TorchSnapshot, keeps_allocator_settings_and_a_clean_history_is_not_cut) {
  const Trace trace = basic();
  const auto& meta = trace.metadata["torch_snapshot"];
  EXPECT_EQ(meta["allocator_settings"]["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True");
  EXPECT_EQ(meta["devices"], 2);
  EXPECT_EQ(meta["ring_buffer_may_have_cut"], false);
  EXPECT_TRUE(trace.warnings.empty());
}

TEST(TorchSnapshot, notes_a_full_ring_buffer) {
  const std::string path = data_file("snapshot_ring_full.json");
  const Trace trace = read_torch_snapshot_json(path);
  EXPECT_EQ(trace.size(), 5u);
  EXPECT_EQ(trace.metadata["torch_snapshot"]["ring_buffer_may_have_cut"], true);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0], path +
                                   ": device_traces[0] holds 4 entries, the ring buffer's size "
                                   "(4): older events may be lost");
}

TEST(TorchSnapshot, notes_frees_of_blocks_never_allocated) {
  const std::string path = data_file("snapshot_cut.json");
  const Trace trace = read_torch_snapshot_json(path);
  EXPECT_EQ(trace.size(), 3u);
  EXPECT_EQ(trace.metadata["torch_snapshot"]["ring_buffer_may_have_cut"], true);
  ASSERT_EQ(trace.warnings.size(), 2u);
  EXPECT_EQ(trace.warnings[0],
            path +
                ": device_traces[0] frees 1 block(s) it never allocated: its beginning was cut "
                "(ring buffer full, or recording started late); replays start from the state at "
                "its first entry");
  // The freed block was live at the first entry: it is in the start state, in a segment the
  // snapshot (which lists none) does not give.
  EXPECT_NE(trace.warnings[1].find("1 block(s) live at the first entry"), std::string::npos);
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.start_blocks(), 1u);
  EXPECT_EQ(resolved.anomalies.free_unknown, 0u);
}

TEST(TorchSnapshot, ignores_unknown_actions_with_a_warning) {
  const std::string path = data_file("snapshot_unknown_action.json");
  const Trace trace = read_torch_snapshot_json(path);
  EXPECT_EQ(trace.size(), 2u);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0], path + ": ignored entries with unknown actions {\"teleport\":1}");
}

TEST(TorchSnapshot, rejects_an_entry_whose_address_is_not_an_integer) {
  const std::string path = data_file("snapshot_bad_entry.json");
  EXPECT_EQ(input_error([&] { read_torch_snapshot_json(path); }),
            path + ": device_traces[0][1]: 'addr' is not an integer: \"0x1000\"");
}

TEST(TorchSnapshot, rejects_invalid_json_with_its_line) {
  const std::string path = data_file("bad_syntax.json");
  const std::string message = input_error([&] { read_torch_snapshot_json(path); });
  EXPECT_EQ(message.rfind(path + ":3: not valid JSON: ", 0), 0u) << message;
}

TEST(TorchSnapshot, rejects_json_that_is_not_a_snapshot) {
  const std::string path = data_file("not_a_snapshot.json");
  const std::string message = input_error([&] { read_torch_snapshot_json(path); });
  EXPECT_EQ(message.rfind(path + ": not a PyTorch memory snapshot: no \"device_traces\"", 0), 0u)
      << message;
}

TEST(TorchSnapshot, rejects_entries_it_cannot_take) {
  const std::pair<std::string, std::string> cases[] = {
      {R"([1,2])", "s.json: not a PyTorch memory snapshot (the top level is not an object)"},
      {R"({"device_traces": {}})", "s.json: \"device_traces\" is not a list"},
      {R"({"device_traces": [7]})", "s.json: device_traces[0] is not a list"},
      {R"({"device_traces": [[3]]})", "s.json: device_traces[0][0]: entry is not an object"},
      {R"({"device_traces": [[{"addr": 1}]]})",
       "s.json: device_traces[0][0]: 'action' missing or not text"},
      {R"({"device_traces": [[{"action": "alloc", "size": 1}]]})",
       "s.json: device_traces[0][0]: no 'addr'"},
      {R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": -1}]]})",
       "s.json: device_traces[0][0]: negative 'size' -1"},
      {R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 1.5}]]})",
       "s.json: device_traces[0][0]: 'size' is not an integer: 1.5"},
  };
  for (const auto& [text, expected] : cases)
    EXPECT_EQ(input_error([&] { parse_torch_snapshot_json(text, "s.json"); }), expected) << text;
}

TEST(TorchSnapshot, entries_without_time_keep_order_with_a_warning) {
  const Trace trace = parse_torch_snapshot_json(
      R"({"device_traces": [[{"action": "alloc", "addr": 16, "size": 8, "stream": -1},
                             {"action": "free_completed", "addr": 16, "size": 8}]]})",
      "old.json");
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace.stream(0), 0xffffffffffffffffu);  // an int64 stream keeps its bits
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0],
            "old.json: 2 entries without time_us (an older PyTorch?): their time is 0");
}

}  // namespace
}  // namespace alloclab
