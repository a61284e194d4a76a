// PyTorch snapshots read from the pickle torch.cuda.memory._dump_snapshot() writes: the same trace
// as the JSON of the same snapshot, in every protocol, with frames as call stacks; damaged and
// hostile pickles; a realistic size. The *.pickle files are made by
// tests/data/interchange/make_snapshot_pickles.py.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <fstream>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/stacks.hpp"
#include "interchange_test_util.hpp"
#include "pickle_writer.hpp"
#include "tests/real_size.hpp"

namespace alloclab {
namespace {

using test::data_file;
using test::file_text;
using test::input_error;
using test::temp_file;

std::string pickle_file(const std::string& stem, int protocol) {
  return data_file(stem + ".p" + std::to_string(protocol) + ".pickle");
}

// Warnings with the file name taken out, so that two files' warnings compare.
std::vector<std::string> warnings_without(const Trace& trace, const std::string& name) {
  std::vector<std::string> out;
  for (std::string w : trace.warnings) {
    for (std::size_t at; (at = w.find(name)) != std::string::npos;) w.erase(at, name.size());
    out.push_back(w);
  }
  return out;
}

void expect_same_trace(const Trace& a, const std::string& a_name, const Trace& b,
                       const std::string& b_name) {
  EXPECT_TRUE(a == b);  // events, stack ids, stacks, frames
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a.event(i), b.event(i)) << i;
  EXPECT_EQ(a.frames(), b.frames());
  EXPECT_EQ(a.metadata["torch_snapshot"], b.metadata["torch_snapshot"]);
  EXPECT_EQ(warnings_without(a, a_name), warnings_without(b, b_name));
}

TEST(TorchPickle, every_protocol_reads_as_the_json_of_the_same_snapshot) {
  for (const std::string stem : {"snapshot_basic", "snapshot_torch"}) {
    const std::string json = data_file(stem + ".json");
    const Trace expected = read_torch_snapshot_json(json);
    ASSERT_GT(expected.size(), 0u);
    for (int protocol = 2; protocol <= 5; ++protocol) {
      SCOPED_TRACE(stem + " protocol " + std::to_string(protocol));
      const std::string path = pickle_file(stem, protocol);
      expect_same_trace(read_torch_snapshot(path), path, expected, json);
      // Also through the one entry point for every format, and from memory.
      expect_same_trace(read_trace(path), path, expected, json);
      expect_same_trace(parse_torch_snapshot_pickle(file_text(path), path), path, expected, json);
    }
  }
}

TEST(TorchPickle, maps_every_action_as_the_json_reader_does) {
  const Trace t = read_torch_snapshot(pickle_file("snapshot_torch", 4));
  ASSERT_EQ(t.size(), 13u);  // 14 entries, less the free_requested
  const struct {
    Op op;
    bool segment;
    DeviceId device;
  } expected[] = {{Op::alloc, true, 0},  {Op::alloc, false, 0}, {Op::alloc, true, 1},
                  {Op::alloc, false, 0}, {Op::alloc, false, 1}, {Op::free, false, 1},
                  {Op::free, false, 0},  {Op::free, true, 1},   {Op::mark, false, 0},
                  {Op::mark, false, 0},  {Op::alloc, true, 0},  {Op::free, true, 0},
                  {Op::alloc, false, 0}};
  for (std::size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t.op(i), expected[i].op) << i;
    EXPECT_EQ(t.segment(i), expected[i].segment) << i;
    EXPECT_EQ(t.device(i), expected[i].device) << i;
    // 10 and 11: a segment_map and a segment_unmap.
    EXPECT_EQ(t.kind(i), i == 10 || i == 11 ? MemoryKind::vmm : MemoryKind::device) << i;
  }
  EXPECT_EQ(t.time_ns(0), 1700000000000000'000u);
  EXPECT_EQ(t.label(8), "snapshot");
  EXPECT_EQ(t.label(9), "oom device_free=1048576");
  EXPECT_EQ(t.size_of(9), 4294967296u);
  // A stream PyTorch stored as a negative int64 keeps its bits.
  EXPECT_EQ(t.stream(12), static_cast<std::uint64_t>(-94366523066560));
  const auto& meta = t.metadata["torch_snapshot"];
  EXPECT_EQ(meta["free_requested"], 1);
  EXPECT_EQ(meta["devices"], 2);
  EXPECT_EQ(meta["allocator_settings"]["garbage_collection_threshold"], 0.0);
  EXPECT_EQ(meta["allocator_settings"]["expandable_segments"], true);
  EXPECT_EQ(meta["allocator_settings"]["roundup_power2_divisions"]["4"], 0);
  EXPECT_EQ(meta["ring_buffer_may_have_cut"], false);
  EXPECT_TRUE(t.warnings.empty());
  const ResolvedTrace resolved = resolve(t);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.segment_allocs, 3u);
}

TEST(TorchPickle, frames_become_the_events_call_stacks) {
  const Trace t = read_torch_snapshot(pickle_file("snapshot_torch", 5));
  ASSERT_TRUE(t.has_stacks());
  // Four distinct frames, three distinct non-empty lists (an empty list is no stack).
  ASSERT_EQ(t.frames().size(), 4u);
  ASSERT_EQ(t.stacks().size(), 3u);
  // The alloc at index 1 (forward <- _call_impl <- train_step), innermost first.
  const std::uint32_t id = t.stack_id(1);
  ASSERT_NE(id, 0u);
  const auto& stack = t.stacks()[id - 1];
  ASSERT_EQ(stack.size(), 3u);
  // filename and line are the frame's source location; a snapshot knows no address or module.
  EXPECT_EQ(t.frames()[stack[0]], (StackFrame{0, "forward", "", "/work/model.py", 41}));
  EXPECT_EQ(describe_frame(t.frames()[stack[0]]), "forward (model.py:41)");
  EXPECT_EQ(t.frames()[stack[2]].function, "train_step");
  // Its free (and the free_requested before it) share the list: the same stack.
  EXPECT_EQ(t.stack_id(6), id);
  // A C++ frame without a line (0): just the file.
  const auto& segment_stack = t.stacks()[t.stack_id(0) - 1];
  EXPECT_EQ(t.frames()[segment_stack[0]],
            (StackFrame{0, "c10::cuda::CUDACachingAllocator::malloc", "", "??", 0}));
  EXPECT_EQ(describe_frame(t.frames()[segment_stack[0]]),
            "c10::cuda::CUDACachingAllocator::malloc (?\?)");
  // No frames, or an empty list: no stack.
  EXPECT_EQ(t.stack_id(2), 0u);
  EXPECT_EQ(t.stack_id(12), 0u);
  const StackSites sites = top_stack_sites(t, 5);
  EXPECT_EQ(sites.allocations_with_stack, 3u);
}

TEST(TorchPickle, an_older_snapshot_without_times_reads_with_a_warning) {
  const std::string path = data_file("snapshot_older.pickle");
  const Trace t = read_torch_snapshot(path);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.time_ns(2), 0u);
  EXPECT_EQ(t.op(2), Op::free);
  EXPECT_EQ(t.metadata["torch_snapshot"]["allocator_settings"], nlohmann::json::object());
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0],
            path + ": 3 entries without time_us (an older PyTorch?): their time is 0");
  EXPECT_EQ(t.stack_id(0), t.stack_id(2));
}

TEST(TorchPickle, a_pickle_that_would_run_code_is_refused_naming_file_and_byte) {
  const std::string path = data_file("hostile_os_system.p2.pickle");
  EXPECT_EQ(input_error([&] { read_trace(path); }),
            path +
                ": byte 66: opcode GLOBAL (0x63) would import or call Python code; a memory "
                "snapshot is plain data, and alloclab runs nothing from a pickle");
}

TEST(TorchPickle, entries_it_cannot_take_are_refused_as_in_json) {
  // {"device_traces": [[{"action": "alloc", "addr": "0x1000", "size": 1}]]}, protocol 4.
  const std::string pickle(
      "\x80\x04\x95H\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x0d"
      "device_traces\x94]\x94]\x94}\x94(\x8c\x06"
      "action\x94\x8c\x05"
      "alloc\x94\x8c\x04"
      "addr\x94\x8c\x06"
      "0x1000\x94\x8c\x04size\x94K\x01uaas.",
      83);
  EXPECT_EQ(input_error([&] { parse_torch_snapshot_pickle(pickle, "s.pickle"); }),
            "s.pickle: device_traces[0][0]: 'addr' is not an integer: \"0x1000\"");
}

TEST(TorchPickle, bad_frames_are_refused_with_the_entry_and_frame) {
  const std::pair<std::string, std::string> cases[] = {
      {R"("frames": 7)", "'frames' is not a list: 7"},
      {R"("frames": [1])", "frames[0] is not an object: 1"},
      {R"("frames": [{"name": "f", "line": 1}])", "frames[0]: no 'filename'"},
      {R"("frames": [{"name": "f", "filename": "a.py", "line": -1}])",
       "frames[0]: 'line' is not a line number: -1"},
      {R"("frames": [{"name": 3, "filename": "a.py", "line": 1}])",
       "frames[0]: 'name' is not text: 3"},
  };
  for (const auto& [frames, what] : cases)
    EXPECT_EQ(
        input_error([&] {
          parse_torch_snapshot_json(
              R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 1, )" + frames + "}]]}",
              "s.json");
        }),
        "s.json: device_traces[0][0]: " + what);
}

// A pickle's memo can list one history under every device, a few bytes each: read so, a small
// file would make a trace of devices times entries.
TEST(TorchPickle, one_history_listed_under_two_devices_is_refused) {
  // {"device_traces": [L, L]}, L = []
  const std::string pickle = std::string("\x80\x02}X\x0d\x00\x00\x00", 8) + "device_traces" +
                             std::string(
                                 "](]q\x00h\x00"
                                 "es.",
                                 10);
  EXPECT_EQ(input_error([&] { parse_torch_snapshot_pickle(pickle, "s.pickle"); }),
            "s.pickle: device_traces[1] is device_traces[0] again (the same list): a snapshot has "
            "one history per device");
}

// Looking a key up walks an entry's keys; a pickle can make every entry of one huge dict.
TEST(TorchPickle, an_entry_or_frame_with_more_keys_than_any_has_is_refused) {
  const auto extra_keys = [](int n) {
    std::string keys;
    for (int k = 0; k < n; ++k) keys += ", \"k" + std::to_string(k) + "\": 0";
    return keys;
  };
  const auto snapshot = [](const std::string& entry) {
    return R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 1)" + entry + "}]]}";
  };
  EXPECT_EQ(parse_torch_snapshot_json(snapshot(extra_keys(61)), "s.json").size(), 1u);  // 64
  EXPECT_EQ(input_error([&] { parse_torch_snapshot_json(snapshot(extra_keys(62)), "s.json"); }),
            "s.json: device_traces[0][0]: an entry of 65 keys, more than a trace entry holds (64)");
  const std::string frame = R"(, "frames": [{"name": "f", "filename": "a.py", "line": 1)";
  EXPECT_EQ(parse_torch_snapshot_json(snapshot(frame + extra_keys(61) + "}]"), "s.json").size(),
            1u);
  EXPECT_EQ(input_error([&] {
              parse_torch_snapshot_json(snapshot(frame + extra_keys(62) + "}]"), "s.json");
            }),
            "s.json: device_traces[0][0]: frames[0] has 65 keys, more than a frame holds (64)");
}

// Each device's events of a trace read from a cut file, in order.
std::vector<std::vector<Event>> by_device(const Trace& t) {
  std::vector<std::vector<Event>> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto d = static_cast<std::size_t>(t.device(i));
    if (out.size() <= d) out.resize(d + 1);
    out[d].push_back(t.event(i));
  }
  return out;
}

// A file cut anywhere reads up to its last good part, with a warning, or is refused when nothing
// of the history came before the cut: never a crash, never an entry made up of a cut one.
TEST(TorchPickle, every_prefix_reads_up_to_its_last_good_part) {
  for (const std::string stem : {"snapshot_torch", "snapshot_basic"}) {
    for (int protocol = 2; protocol <= 5; ++protocol) {
      SCOPED_TRACE(stem + " protocol " + std::to_string(protocol));
      const std::string whole = file_text(pickle_file(stem, protocol));
      const Trace full = parse_torch_snapshot_pickle(whole, "s.pickle");
      const auto full_devices = by_device(full);
      std::size_t last_events = 0, traces = 0;
      for (std::size_t n = 0; n < whole.size(); ++n) {
        SCOPED_TRACE(n);
        Trace cut;
        try {
          cut = parse_torch_snapshot_pickle(whole.substr(0, n), "s.pickle");
        } catch (const InputError& e) {
          // Only before the history: its first entry is far into the file.
          EXPECT_EQ(last_events, 0u) << e.what();
          continue;
        }
        ++traces;
        ASSERT_FALSE(cut.warnings.empty());
        EXPECT_NE(cut.warnings.back().find("(the file is cut short?)"), std::string::npos)
            << cut.warnings.back();
        EXPECT_LE(cut.metadata["torch_snapshot"]["cut_at_byte"].get<std::uint64_t>(), n);
        // What each device kept is the start of its whole history.
        const auto devices = by_device(cut);
        for (std::size_t d = 0; d < devices.size(); ++d) {
          ASSERT_LT(d, full_devices.size());
          ASSERT_LE(devices[d].size(), full_devices[d].size());
          for (std::size_t i = 0; i < devices[d].size(); ++i)
            EXPECT_EQ(devices[d][i], full_devices[d][i]) << "device " << d << " event " << i;
        }
        // And a longer prefix never keeps less.
        EXPECT_GE(cut.size(), last_events);
        last_events = cut.size();
      }
      EXPECT_GT(traces, 0u);
      EXPECT_LE(last_events, full.size());
    }
  }
}

TEST(TorchPickle, a_file_cut_before_the_history_is_an_error_naming_the_byte) {
  const std::string whole = file_text(pickle_file("snapshot_torch", 2));
  const std::string message =
      input_error([&] { parse_torch_snapshot_pickle(whole.substr(0, 40), "s.pickle"); });
  EXPECT_EQ(message.rfind("s.pickle: byte ", 0), 0u) << message;
  EXPECT_NE(message.find("(the file is cut short?)"), std::string::npos) << message;
}

TEST(TorchPickle, a_cut_file_warns_with_the_byte_and_what_it_kept) {
  const std::string whole = file_text(pickle_file("snapshot_basic", 4));
  const std::size_t n = whole.size() - 200;
  const Trace t = parse_torch_snapshot_pickle(whole.substr(0, n), "s.pickle");
  ASSERT_FALSE(t.warnings.empty());
  const std::string& w = t.warnings.back();
  EXPECT_EQ(w.rfind("s.pickle: byte ", 0), 0u) << w;
  EXPECT_NE(w.find("(the file is cut short?): kept the " + std::to_string(t.size()) +
                   " events read before it"),
            std::string::npos)
      << w;
}

// The writer the large test uses writes what Python's pickle module writes.
TEST(TorchPickle, the_test_writer_writes_what_python_writes) {
  EXPECT_EQ(test::synthetic_snapshot_pickle(1200),
            file_text(data_file("snapshot_synthetic_1200.p2.pickle")));
}

std::uint64_t peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss);
}

// A realistic size: a million entries with frames, read from a file. Timing and memory are
// printed for docs, not asserted.
TEST(TorchPickle, a_million_entries_read) {
  const std::size_t n = test::real_size(1'000'000);
  const std::string path = temp_file("million.pickle");
  {
    const std::string bytes = test::synthetic_snapshot_pickle(n);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
  }
  const auto start = std::chrono::steady_clock::now();
  const Trace t = read_trace(path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(t.size(), n);
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_EQ(t.stacks().size(), 6u);  // 8 frames lists, but lists t and t + 6 hold the same frames
  EXPECT_EQ(t.stack_id(n - 1), t.stack_id(n - 2));
  const ResolvedTrace resolved = resolve(t);
  EXPECT_EQ(resolved.allocation_count(), n / 2);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  std::printf("[ info ] %zu entries read in %.2f s; peak RSS of the test %.0f MiB\n", n, seconds,
              static_cast<double>(peak_rss_kib()) / 1024);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace alloclab
