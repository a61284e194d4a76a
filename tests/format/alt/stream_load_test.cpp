// The streamed load (load_alt_resolved) must give what the whole-trace path gives: read_alt, then
// resolve() and summarize(), field by field, for every kind of trace and every kind of damage.
#include <gtest/gtest.h>

#include <filesystem>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_load.hpp"
#include "alloclab/format/error.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/synthetic.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::chunk_offset;
using test::free_event;
using test::marker;
using test::TempFile;
using test::written;

void expect_same_resolution(const ResolvedTrace& a, const ResolvedTrace& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t k = 0; k < a.ops.size(); ++k) {
    ASSERT_EQ(a.ops[k].id, b.ops[k].id) << "op " << k;
    ASSERT_EQ(a.ops[k].op, b.ops[k].op) << "op " << k;
  }
  EXPECT_EQ(a.op_time_ns, b.op_time_ns);
  EXPECT_EQ(a.alloc_size, b.alloc_size);
  EXPECT_EQ(a.alloc_origin, b.alloc_origin);
  EXPECT_EQ(a.origins, b.origins);
  ASSERT_EQ(a.runs.size(), b.runs.size());
  for (std::size_t r = 0; r < a.runs.size(); ++r) {
    EXPECT_EQ(a.runs[r].label, b.runs[r].label);
    EXPECT_EQ(a.runs[r].begin_op, b.runs[r].begin_op);
    EXPECT_EQ(a.runs[r].end_op, b.runs[r].end_op);
    EXPECT_EQ(a.runs[r].begin_time_ns, b.runs[r].begin_time_ns);
    EXPECT_EQ(a.runs[r].end_time_ns, b.runs[r].end_time_ns);
  }
  EXPECT_EQ(a.implicit_run, b.implicit_run);
  EXPECT_EQ(to_json(a.anomalies), to_json(b.anomalies));
  EXPECT_EQ(a.segment_allocs, b.segment_allocs);
  EXPECT_EQ(a.segment_frees, b.segment_frees);
  EXPECT_EQ(a.segment_bytes_allocated, b.segment_bytes_allocated);
}

// Loads `path` both ways (the streamed one in batches of `batch_events`) and compares them.
void expect_streamed_equals_whole(const std::string& path, std::uint64_t batch_events) {
  SCOPED_TRACE(path + ", batches of " + std::to_string(batch_events));
  AltLoadStats whole_stats;
  const Trace trace = read_alt(path, &whole_stats);
  const ResolvedTrace whole = resolve(trace);
  const TraceSummary whole_summary = summarize(trace, whole);

  AltLoadStats streamed_stats;
  const ResolvedLoad streamed = load_alt_resolved(path, &streamed_stats, batch_events);
  expect_same_resolution(whole, streamed.resolved);
  // to_json covers every field of the summary, warnings and memory_bytes included.
  EXPECT_EQ(to_json(whole_summary), to_json(streamed.summary));
  EXPECT_EQ(whole_summary.warnings, streamed.summary.warnings);
  EXPECT_EQ(whole_stats.file_bytes, streamed_stats.file_bytes);
  EXPECT_EQ(whole_stats.chunks, streamed_stats.chunks);
  EXPECT_EQ(whole_stats.damaged_chunks, streamed_stats.damaged_chunks);
  EXPECT_EQ(whole_stats.lost_events, streamed_stats.lost_events);
  EXPECT_EQ(whole_stats.events, streamed_stats.events);
}

void expect_streamed_equals_whole(const std::string& path) {
  for (std::uint64_t batch : {std::uint64_t{1}, std::uint64_t{250}, alt_stream_batch_events})
    expect_streamed_equals_whole(path, batch);
}

// Every feature the reader and resolver know: runs with labels, nested and stray markers,
// anomalies, several threads, devices and streams, segments, marks, sizes of 4 GiB and more,
// call stacks, and a run left open at the end.
Trace eventful_trace() {
  Trace t;
  const std::uint32_t frame = t.add_frame({0x401000, "main", "/bin/app"});
  const std::uint32_t stack = t.add_stack({frame});
  std::uint64_t time = 1000;
  auto add = [&](Event e) {
    e.time_ns = time;
    time += 7;
    t.push_back(e);
  };
  for (int run = 0; run < 40; ++run) {
    add(marker(Op::run_begin, "step " + std::to_string(run) + " with a label past SSO"));
    for (std::uint64_t k = 0; k < 30; ++k) {
      Event a = alloc_event(0x10000 + k * 0x100, 64 + k * 16 + static_cast<std::uint64_t>(run));
      a.thread = k % 3;
      a.stream = k % 2;
      a.device = k % 5 == 0 ? 1 : cpu_device;
      if (k == 7) a.size = (std::uint64_t{5} << 30) + static_cast<std::uint64_t>(run);
      add(a);
      if (k % 4 == 0) t.set_stack_id(t.size() - 1, stack);
    }
    for (std::uint64_t k = 0; k < 30; k += 2) {
      Event f = free_event(0x10000 + k * 0x100);
      f.device = k % 5 == 0 ? 1 : cpu_device;
      add(f);
    }
    add(free_event(0xdead0000));          // free of an unknown address
    add(free_event(0x10000, 0, 1));       // double free (freed just above)
    add(free_event(0));                   // free(NULL)
    add(alloc_event(0, 8));               // failed allocation
    add(alloc_event(0x10100, 99));        // alloc over a live address
    add(marker(Op::mark, "checkpoint"));  // no effect
    if (run % 10 == 3) add(marker(Op::run_begin, "nested"));
    if (run % 10 == 5) add(marker(Op::run_end));  // followed by a stray one below
    Event segment = alloc_event(0x7000000 + static_cast<std::uint64_t>(run) * 0x1000, 1 << 20);
    segment.segment = true;
    add(segment);
    add(marker(Op::run_end));
  }
  add(marker(Op::run_begin, "left open"));
  add(alloc_event(0x900000, 12));
  return t;
}

// The same without run markers: replayed as one implicit run.
Trace markerless_trace() {
  Trace t;
  for (std::uint64_t k = 0; k < 1000; ++k) {
    t.push_back(alloc_event(0x1000 + (k % 50) * 64, 16 + k % 7, 10 + k));
    if (k % 3 == 0) t.push_back(free_event(0x1000 + (k % 50) * 64, 11 + k));
  }
  return t;
}

// Markers appear only late (after several batches): the placeholder implicit run goes.
Trace late_marker_trace() {
  Trace t;
  for (std::uint64_t k = 0; k < 600; ++k) t.push_back(alloc_event(0x1000 + k * 64, 16, k));
  t.push_back(marker(Op::run_begin, "late", 600));
  t.push_back(free_event(0x1000, 601));
  t.push_back(marker(Op::run_end, {}, 602));
  return t;
}

// A segment run marker is not a run marker: the trace still has an implicit run.
Trace segment_marker_trace() {
  Trace t;
  Event m = marker(Op::run_begin, "segment", 1);
  m.segment = true;
  t.push_back(m);
  t.push_back(alloc_event(0x10, 8, 2));
  t.push_back(free_event(0x10, 3));
  return t;
}

TEST(StreamLoad, bundled_traces_load_the_same_streamed) {
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ALLOCLAB_TRACES_DIR)) {
    if (entry.path().extension() != ".alt") continue;
    expect_streamed_equals_whole(entry.path().string());
    ++seen;
  }
  EXPECT_GT(seen, 0);
}

TEST(StreamLoad, every_synthetic_shape_loads_the_same_streamed) {
  for (const std::string& name : synthetic_shape_names()) {
    SyntheticOptions options;
    options.shape = *parse_synthetic_shape(name);
    options.min_events = 5000;
    TempFile file("shape-" + name + ".alt");
    written(generate_synthetic(options), file);
    expect_streamed_equals_whole(file.path());
  }
}

// The trace of a --follow-fork child: its frees of unknown blocks are inherited, not anomalies.
Trace forked_trace() {
  Trace t = eventful_trace();
  t.metadata["image"] = "fork";
  return t;
}

TEST(StreamLoad, runs_anomalies_origins_segments_and_stacks_load_the_same_streamed) {
  for (const auto& [name, trace] :
       {std::pair{"eventful", eventful_trace()}, std::pair{"markerless", markerless_trace()},
        std::pair{"late", late_marker_trace()}, std::pair{"segment", segment_marker_trace()},
        std::pair{"forked", forked_trace()}}) {
    TempFile file(std::string(name) + ".alt");
    written(trace, file);
    expect_streamed_equals_whole(file.path());
  }
}

TEST(StreamLoad, eventful_trace_really_has_what_it_is_meant_to_test) {
  TempFile file("eventful-check.alt");
  written(eventful_trace(), file);
  const ResolvedLoad load = load_alt_resolved(file.path(), nullptr, 100);
  const Anomalies& a = load.summary.anomalies;
  EXPECT_GT(a.free_unknown, 0u);
  EXPECT_GT(a.double_free, 0u);
  EXPECT_GT(a.alloc_over_live, 0u);
  EXPECT_GT(a.nested_run_begin, 0u);
  EXPECT_GT(a.run_end_outside_run, 0u);
  EXPECT_EQ(a.unterminated_runs, 1u);
  EXPECT_GT(a.leaks, 0u);
  EXPECT_GT(load.summary.segment_events, 0u);
  EXPECT_EQ(load.summary.devices.size(), 2u);
  EXPECT_GT(load.summary.size_histogram[32], 0u);  // the sizes of 5 GiB
  EXPECT_FALSE(load.resolved.implicit_run);

  TempFile markerless("markerless-check.alt");
  written(markerless_trace(), markerless);
  EXPECT_TRUE(load_alt_resolved(markerless.path()).resolved.implicit_run);
}

TEST(StreamLoad, empty_trace_loads_the_same_streamed) {
  TempFile file("empty-trace.alt");
  written(Trace{}, file);
  expect_streamed_equals_whole(file.path());
}

TEST(StreamLoad, truncated_file_loads_to_the_last_good_chunk_with_the_same_warning) {
  TempFile file("truncated.alt");
  std::vector<char> bytes = written(eventful_trace(), file);
  for (std::size_t cut : {std::size_t{10}, std::size_t{30}, bytes.size() / 2}) {
    file.write(std::vector<char>(bytes.begin(), bytes.end() - static_cast<long>(cut)));
    expect_streamed_equals_whole(file.path());
    const ResolvedLoad load = load_alt_resolved(file.path());
    ASSERT_FALSE(load.summary.warnings.empty());
    EXPECT_EQ(load.summary.warnings.back().rfind(file.path() + "@", 0), 0u)
        << load.summary.warnings.back();
    EXPECT_NE(load.summary.warnings.back().find("truncated chunk"), std::string::npos)
        << load.summary.warnings.back();
  }
}

TEST(StreamLoad, damaged_payload_costs_that_chunk_with_the_same_warning) {
  TempFile file("payload.alt");
  std::vector<char> bytes = written(eventful_trace(), file);
  bytes[chunk_offset(bytes, 3) + 40] ^= 0x55;
  file.write(bytes);
  expect_streamed_equals_whole(file.path());
  const ResolvedLoad load = load_alt_resolved(file.path());
  ASSERT_EQ(load.summary.warnings.size(), 1u);
  EXPECT_EQ(load.summary.warnings[0],
            file.path() + "@" + std::to_string(chunk_offset(bytes, 3)) +
                ", chunk 3: checksum mismatch; chunk skipped, 100 events lost");
}

TEST(StreamLoad, damaged_chunk_header_resynchronises_the_same_way) {
  TempFile file("header.alt");
  std::vector<char> bytes = written(eventful_trace(), file);
  bytes[chunk_offset(bytes, 2) + 5] ^= 0x01;
  bytes[chunk_offset(bytes, 6) + 45] ^= 0x10;
  file.write(bytes);
  expect_streamed_equals_whole(file.path());
  const ResolvedLoad load = load_alt_resolved(file.path());
  ASSERT_EQ(load.summary.warnings.size(), 2u);
  EXPECT_NE(load.summary.warnings[0].find("damaged chunk header"), std::string::npos);
}

std::string streamed_error(const std::string& path) {
  try {
    load_alt_resolved(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string whole_error(const std::string& path) {
  try {
    read_alt(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// Flips every `step`-th byte of `trace` written in chunks of 100 (in groups of
// `events_per_group`) in turn, and loads each damaged file both ways.
void expect_every_flip_loads_the_same(const Trace& trace, std::size_t events_per_group,
                                      std::size_t step, std::uint64_t batch_events) {
  TempFile file("flips.alt");
  const std::vector<char> bytes = written(trace, file, events_per_group);
  for (std::size_t i = chunk_offset(bytes, 0); i < bytes.size(); i += step) {
    std::vector<char> damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5A);
    file.write(damaged);
    // A flip that costs every chunk (one group, its first chunk hit) leaves nothing to read:
    // both loads refuse the file the same way.
    if (const std::string error = whole_error(file.path()); error != "no error") {
      EXPECT_NE(error.find("; no event could be read from the file"), std::string::npos) << error;
      EXPECT_EQ(streamed_error(file.path()), error);
      continue;
    }
    expect_streamed_equals_whole(file.path(), batch_events);
  }
}

TEST(StreamLoad, every_byte_flip_in_a_small_file_loads_the_same_streamed) {
  Trace t;
  for (std::uint64_t k = 0; k < 300; ++k) {
    t.push_back(alloc_event(0x1000 + k * 64, 16 + k, k));
    if (k % 2) t.push_back(free_event(0x1000 + (k - 1) * 64, k));
  }
  expect_every_flip_loads_the_same(t, 0, 7, 100);
}

TEST(StreamLoad, every_byte_flip_in_a_grouped_file_loads_the_same_streamed) {
  // Groups of four chunks: damage costs the rest of a group, the same way in both loads, also
  // when a batch would end inside a group.
  Trace t;
  for (std::uint64_t k = 0; k < 300; ++k) {
    t.push_back(alloc_event(0x1000 + k * 64, 16 + k, k));
    if (k % 3 == 2) t.push_back(free_event(0x1000 + (k - 2) * 64, k));
  }
  expect_every_flip_loads_the_same(t, 400, 11, 150);
}

TEST(StreamLoad, unusable_headers_fail_with_the_same_error) {
  TempFile file("bad-header.alt");
  const std::vector<char> bytes = written(eventful_trace(), file);
  std::vector<std::vector<char>> cases = {{},
                                          {'n', 'o', 't', ' ', 'a', 'l', 't', '\n'},
                                          std::vector<char>(bytes.begin(), bytes.begin() + 12)};
  std::vector<char> version = bytes;
  version[8] = static_cast<char>(alt_format_version + 1);  // a version from the future
  cases.push_back(version);
  std::vector<char> metadata = bytes;
  metadata[20] ^= 0x20;
  cases.push_back(metadata);
  for (const std::vector<char>& damaged : cases) {
    file.write(damaged);
    const std::string expected = whole_error(file.path());
    EXPECT_NE(expected, "no error");
    EXPECT_EQ(streamed_error(file.path()), expected);
  }
  EXPECT_EQ(streamed_error("/nonexistent/trace.alt"), whole_error("/nonexistent/trace.alt"));
}

// The largest batch a streamed load of markerless_trace(), written in chunks of 100 (in groups
// of `events_per_group`), hands over in batches of `batch_events`; checks that the batches
// add up to the trace.
std::uint64_t largest_batch(std::size_t events_per_group, std::uint64_t batch_events) {
  TempFile file("batches.alt");
  written(markerless_trace(), file, events_per_group);
  std::uint64_t expected = 0, largest = 0, total = 0;
  stream_alt(
      file.path(), [&](std::uint64_t events) { expected = events; },
      [&](const Trace& batch) {
        largest = std::max<std::uint64_t>(largest, batch.size());
        total += batch.size();
      },
      nullptr, batch_events);
  EXPECT_EQ(total, expected);
  EXPECT_EQ(total, read_alt(file.path()).size());
  expect_streamed_equals_whole(file.path(), batch_events);
  return largest;
}

TEST(StreamLoad, batches_hold_whole_groups) {
  // Groups of three chunks do not fit in batches of 150 events, and are not split.
  EXPECT_EQ(largest_batch(300, 150), 300u);
}

TEST(StreamLoad, batches_never_hold_more_than_their_chunks) {
  EXPECT_EQ(largest_batch(0, 250), 200u);  // two chunks of 100 fit in 250, three do not
}

}  // namespace
}  // namespace alloclab
