// Call stacks and the version-2 additions of the .alt format: frame and stack tables written
// once, per-event stack ids, the per-chunk time shift, and version-1 files still loading.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_writer.hpp"
#include "alloclab/format/stacks.hpp"
#include "alloclab/format/trim.hpp"
#include "format/alt/codec.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

using test::chunk_offset;
using test::TempFile;
using test::written;

// 300 allocations at two sites (stacks 1 and 2) and a free each; stack 2 is first used in the
// second chunk of 100 events, so its definition must travel with that chunk.
Trace trace_with_stacks() {
  Trace t;
  const std::uint32_t main_frame = t.add_frame({0x401000, "main", "/usr/bin/prog"});
  const std::uint32_t site_a =
      t.add_frame({0x401100, "site_a", "/usr/bin/prog", "/src/prog/site.cpp", 42});
  const std::uint32_t site_b = t.add_frame({0x7f0000001234, "", "/lib/libfoo.so"});
  const std::uint32_t stack_a = t.add_stack({site_a, main_frame});
  for (std::uint64_t i = 0; i < 150; ++i) {
    t.push_back(test::alloc_event(0x10000 + i * 64, 32 + i, 1000 * i));
    t.set_stack_id(t.size() - 1, stack_a);
    t.push_back(test::free_event(0x10000 + i * 64, 1000 * i + 500));
  }
  const std::uint32_t stack_b = t.add_stack({site_b, site_a, main_frame});
  for (std::uint64_t i = 0; i < 50; ++i) {
    t.push_back(test::alloc_event(0x90000 + i * 64, 4096, 200'000 + 1000 * i));
    t.set_stack_id(t.size() - 1, stack_b);
  }
  return t;
}

TEST(AltStacks, frames_stacks_and_ids_round_trip) {
  const Trace original = trace_with_stacks();
  TempFile file("stacks.alt");
  written(original, file);
  const Trace loaded = read_alt(file.path());
  EXPECT_TRUE(loaded.warnings.empty());
  EXPECT_EQ(loaded, original);
  ASSERT_EQ(loaded.stacks().size(), 2u);
  EXPECT_EQ(loaded.frames()[1].function, "site_a");
  EXPECT_EQ(loaded.frames()[1].file, "/src/prog/site.cpp");
  EXPECT_EQ(loaded.frames()[1].line, 42u);
  EXPECT_EQ(loaded.frames()[0].file, "");  // no source location: stays unknown
  EXPECT_EQ(loaded.frames()[0].line, 0u);
  EXPECT_EQ(loaded.stack_id(0), 1u);
  EXPECT_EQ(loaded.stack_id(1), 0u);  // frees carry no stack
  EXPECT_EQ(loaded.stack_id(300), 2u);
}

TEST(AltStacks, top_sites_count_allocations_and_bytes_per_stack) {
  const StackSites sites = top_stack_sites(trace_with_stacks(), 10);
  EXPECT_EQ(sites.allocations_with_stack, 200u);
  EXPECT_EQ(sites.distinct_stacks, 2u);
  ASSERT_EQ(sites.by_count.size(), 2u);
  EXPECT_EQ(sites.by_count[0].stack, 1u);
  EXPECT_EQ(sites.by_count[0].count, 150u);
  EXPECT_EQ(sites.by_bytes[0].stack, 2u);
  EXPECT_EQ(sites.by_bytes[0].bytes, 50u * 4096);
  EXPECT_EQ(describe_frame({0x401100, "site_a", "/usr/bin/prog"}), "site_a (prog)");
  EXPECT_EQ(describe_frame({0x7f0000001234, "", "/lib/libfoo.so"}), "0x7f0000001234 (libfoo.so)");
}

TEST(AltStacks, a_frame_with_a_source_location_is_described_by_it) {
  // The source file's name and line replace the module; without a line, the file alone.
  EXPECT_EQ(describe_frame({0x401100, "site_a", "/usr/bin/prog", "/src/prog/site.cpp", 42}),
            "site_a (site.cpp:42)");
  EXPECT_EQ(describe_frame({0x401100, "", "/usr/bin/prog", "/src/prog/site.cpp", 42}),
            "0x401100 (site.cpp:42)");
  EXPECT_EQ(describe_frame({0, "malloc", "", "??", 0}), "malloc (?\?)");
  EXPECT_EQ(describe_frame({0x401100, "site_a", "", "", 0}), "site_a");
}

TEST(AltStacks, a_function_is_named_without_its_line_so_its_call_sites_merge) {
  EXPECT_EQ(describe_function({0x401100, "site_a", "/usr/bin/prog", "/src/prog/site.cpp", 42}),
            "site_a (prog)");
  EXPECT_EQ(describe_function({0x401180, "site_a", "/usr/bin/prog", "/src/prog/site.cpp", 57}),
            "site_a (prog)");
  // A snapshot's Python frame has a file and no module.
  EXPECT_EQ(describe_function({0, "forward", "", "/work/model.py", 41}), "forward (model.py)");
  EXPECT_EQ(describe_function({0x401100, "", "/usr/bin/prog", "", 0}), "0x401100 (prog)");
}

TEST(AltStacks, info_json_frames_carry_file_and_line) {
  const Trace t = trace_with_stacks();
  const nlohmann::json j = stack_sites_json(t, top_stack_sites(t, 1));
  const nlohmann::json& frames = j["top_stacks_by_count"][0]["frames"];
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0]["function"], "site_a");
  EXPECT_EQ(frames[0]["module"], "/usr/bin/prog");
  EXPECT_EQ(frames[0]["file"], "/src/prog/site.cpp");
  EXPECT_EQ(frames[0]["line"], 42);
  EXPECT_EQ(frames[1]["file"], "");
  EXPECT_EQ(frames[1]["line"], 0);
  EXPECT_NE(stack_sites_text(t, top_stack_sites(t, 1)).find("      site_a (site.cpp:42)\n"),
            std::string::npos);
}

// A PyTorch snapshot gives its segment_alloc the frames of the request behind it: counting both
// would count those bytes twice.
TEST(AltStacks, top_sites_count_program_requests_not_segment_events) {
  Trace t = trace_with_stacks();
  Event segment = test::alloc_event(0x200000, 1 << 20, 400'000);
  segment.segment = true;
  t.push_back(segment);
  t.set_stack_id(t.size() - 1, 2);
  const StackSites sites = top_stack_sites(t, 10);
  EXPECT_EQ(sites.allocations_with_stack, 200u);
  EXPECT_EQ(sites.by_bytes[0].bytes, 50u * 4096);
}

TEST(AltStacks, whole_file_writer_defines_everything_in_the_first_chunk) {
  TempFile file("stacks-first.alt");
  std::vector<char> bytes = written(trace_with_stacks(), file);
  bytes[chunk_offset(bytes, 0) + 30] ^= 0x01;
  file.write(bytes);
  const Trace t = read_alt(file.path());
  ASSERT_EQ(t.size(), 250u);
  EXPECT_EQ(t.stack_id(0), 1u);  // ids survive as placeholders of the lost definitions
  ASSERT_EQ(t.stacks().size(), 2u);
  EXPECT_TRUE(t.stacks()[1].empty());
  EXPECT_EQ(t.stack_id(200), 2u);
}

TEST(AltStacks, streamed_batches_define_new_stacks_where_first_written) {
  // As the preload tracer writes: one table that grows, events appended batch by batch.
  TempFile file("stacks-stream.alt");
  Trace batch;
  const std::uint32_t main_frame = batch.add_frame({0x401000, "main", "/usr/bin/prog"});
  const std::uint32_t site_a = batch.add_frame({0x401100, "site_a", "/usr/bin/prog"});
  const std::uint32_t stack_a = batch.add_stack({site_a, main_frame});
  {
    AltWriteOptions options;
    options.events_per_chunk = 100;
    options.events_per_group = 0;  // damage below must cost chunk 0 alone
    AltStreamWriter writer(file.path(), nlohmann::json::object(), options);
    for (std::uint64_t i = 0; i < 150; ++i) {
      batch.push_back(test::alloc_event(0x10000 + i * 64, 32, 1000 * i));
      batch.set_stack_id(batch.size() - 1, stack_a);
    }
    writer.append(batch);  // chunks 0 and 1
    batch.clear_events();
    const std::uint32_t site_b = batch.add_frame({0x7f0000001234, "", "/lib/libfoo.so"});
    const std::uint32_t stack_b = batch.add_stack({site_b, site_a, main_frame});
    for (std::uint64_t i = 0; i < 50; ++i) {
      batch.push_back(test::alloc_event(0x90000 + i * 64, 4096, 200'000 + 1000 * i));
      batch.set_stack_id(batch.size() - 1, i % 2 ? stack_a : stack_b);
    }
    writer.append(batch);  // chunk 2: defines only site_b and stack 2
    writer.close();
  }
  const Trace whole = read_alt(file.path());
  ASSERT_EQ(whole.size(), 200u);
  ASSERT_EQ(whole.stacks().size(), 2u);
  EXPECT_EQ(whole.frames()[whole.stacks()[1][1]].function, "site_a");
  EXPECT_EQ(whole.stack_id(150), 2u);
  EXPECT_EQ(whole.stack_id(151), 1u);

  std::vector<char> bytes = file.bytes();
  bytes[chunk_offset(bytes, 0) + 30] ^= 0x01;  // chunk 0 defined main, site_a and stack 1
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt(file.path(), &stats);
  EXPECT_EQ(stats.damaged_chunks, 1u);
  ASSERT_EQ(t.size(), 100u);
  EXPECT_TRUE(t.stacks()[0].empty());   // its definition was lost with chunk 0
  ASSERT_EQ(t.stacks()[1].size(), 3u);  // defined in chunk 2, intact...
  EXPECT_EQ(t.frames()[t.stacks()[1][0]].address, 0x7f0000001234u);
  EXPECT_EQ(t.frames()[t.stacks()[1][1]].function, "");  // ...but its callers' frames were lost
}

TEST(AltStacks, references_to_undefined_stacks_or_frames_fail_the_chunk) {
  Trace out;
  out.push_back(test::alloc_event(0x1000, 16));
  detail::ChunkExtras extras;
  extras.stack_ids = {{0, 5}};
  std::string error;
  EXPECT_FALSE(detail::commit_chunk(out, 0, 1, extras, error));
  EXPECT_NE(error.find("undefined stack 5"), std::string::npos) << error;

  detail::ChunkExtras bad_frame;
  bad_frame.stacks = {{0, 7}};
  EXPECT_FALSE(detail::commit_chunk(out, 0, 1, bad_frame, error));
  EXPECT_NE(error.find("undefined frame 0"), std::string::npos) << error;
  EXPECT_TRUE(out.stacks().empty());  // nothing merged from a rejected chunk

  detail::ChunkExtras far;
  far.stacks_first = 1u << 24;
  EXPECT_FALSE(detail::commit_chunk(out, 0, 1, far, error));
}

TEST(AltStacks, trimming_to_runs_keeps_the_stacks) {
  Trace t;
  const std::uint32_t frame = t.add_frame({0x401100, "site_a", "/usr/bin/prog"});
  const std::uint32_t stack = t.add_stack({frame});
  t.push_back(test::alloc_event(0x1000, 16, 1));  // before the run: trimmed away
  t.set_stack_id(0, stack);
  t.push_back(test::marker(Op::run_begin, "r", 2));
  t.push_back(test::alloc_event(0x2000, 32, 3));
  t.set_stack_id(2, stack);
  t.push_back(test::free_event(0x2000, 4));
  t.push_back(test::marker(Op::run_end, "", 5));
  const Trace trimmed = trim_to_runs(t);
  ASSERT_EQ(trimmed.size(), 4u);
  EXPECT_EQ(trimmed.stack_id(1), stack);
  EXPECT_EQ(trimmed.stack_id(2), 0u);
  EXPECT_EQ(trimmed.frames()[trimmed.stacks()[stack - 1][0]].function, "site_a");
}

TEST(AltFormat, times_with_common_zero_bits_round_trip_and_shrink) {
  Trace coarse, fine;
  for (std::uint64_t i = 0; i < 20'000; ++i) {
    const std::uint64_t t = 1'000'000'000 + i * 64 * (1 + i % 7);
    coarse.push_back(test::alloc_event(0x1000 + i * 16, 16, t));
    fine.push_back(test::alloc_event(0x1000 + i * 16, 16, t + (i * 2654435761u) % 64));
  }
  TempFile a("coarse.alt"), b("fine.alt");
  write_alt(coarse, a.path());
  write_alt(fine, b.path());
  EXPECT_EQ(read_alt(a.path()), coarse);
  EXPECT_EQ(read_alt(b.path()), fine);
  EXPECT_LT(a.bytes().size(), b.bytes().size());  // the shift drops the six zero bits
}

TEST(AltFormat, version_1_files_still_load) {
  // Written by alloclab 0.1.0 before version 2: `generate --shape cnn --runs 2 --seed 7`.
  const std::string path = std::string(ALLOCLAB_TEST_DATA) + "/alt-v1/cnn-2runs.alt";
  ASSERT_EQ(test::alt_file_version(path), 1u);
  AltLoadStats stats;
  const Trace t = read_alt(path, &stats);
  EXPECT_EQ(t.size(), 376u);
  EXPECT_EQ(stats.damaged_chunks, 0u);
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_FALSE(t.has_stacks());
  // The same events written today (version 2) read back identically.
  TempFile again("v1-rewritten.alt");
  write_alt(t, again.path());
  EXPECT_EQ(read_alt(again.path()), t);
}

TEST(AltFormat, version_2_files_still_load_with_no_pools) {
  // Written by alloclab 0.1.0 before version 3 (pools): `convert` of
  // tests/data/interchange/all_columns.csv, three threads on cpu, cuda:0 and cuda:1.
  const std::string path = std::string(ALLOCLAB_TEST_DATA) + "/alt-v2/all-columns.alt";
  ASSERT_EQ(test::alt_file_version(path), 2u);
  AltLoadStats stats;
  const Trace t = read_alt(path, &stats);
  ASSERT_EQ(t.size(), 7u);
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_EQ(t.thread(1), 42u);
  EXPECT_EQ(t.device(1), 1);
  EXPECT_EQ(t.stream(1), 16u);
  EXPECT_EQ(t.stream(3), 7u);
  EXPECT_EQ(t.label(0), "step 1, warm-up");
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t.pool(i), 0u) << i;
  TempFile again("v2-rewritten.alt");
  write_alt(t, again.path());
  EXPECT_EQ(read_alt(again.path()), t);
}

TEST(AltFormat, pools_round_trip_as_part_of_the_origin) {
  Trace trace;
  Event a;
  a.op = Op::alloc;
  a.device = 0;
  a.kind = MemoryKind::async_pool;
  a.stream = 5;
  a.address = 0x1000;
  a.size = 256;
  for (const std::uint64_t pool : {std::uint64_t{0}, std::uint64_t{0x7f00aa000000},
                                   std::uint64_t{0x7f00aa000000}, ~std::uint64_t{0}}) {
    a.pool = pool;
    trace.push_back(a);
    a.address += 0x1000;
  }
  EXPECT_EQ(trace.origins().size(), 3u);  // same thread, device and stream: the pool tells
  TempFile file("pools.alt");
  write_alt(trace, file.path());
  const Trace back = read_alt(file.path());
  EXPECT_EQ(back, trace);
  EXPECT_EQ(back.pool(1), 0x7f00aa000000u);
  EXPECT_EQ(back.pool(3), ~std::uint64_t{0});
}

}  // namespace
}  // namespace alloclab
