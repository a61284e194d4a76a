// The `fidelity` section of a replay: a strategy's upstream calls held against those of the
// allocator a PyTorch snapshot recorded (docs/strategies.md, "Fidelity"), and the program's
// empty_cache calls found there and replayed as releases. Snapshots are written here as JSON,
// entry by entry, as torch.cuda.memory._snapshot() lists them.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "alloclab/format/error.hpp"
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/pytorch.hpp"
#include "alloclab/strategies/upstream/sim.hpp"
#include "tests/watchdog.hpp"

namespace alloclab {
namespace {

constexpr std::uint64_t MiB = 1 << 20;
constexpr std::uint64_t A = 0x7f0000000000, B = 0x7f0001400000, C = 0x7f0002000000,
                        D = 0x7f0004000000;

struct Entry {
  std::string action;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t time_us = 0;
  std::uint64_t stream = 0;
};

std::string device_json(const std::vector<Entry>& entries) {
  std::string out = "[";
  for (const Entry& e : entries) {
    if (out.size() > 1) out += ",\n";
    out += "{\"action\": \"" + e.action + "\", \"addr\": " + std::to_string(e.addr) +
           ", \"size\": " + std::to_string(e.size) + ", \"stream\": " + std::to_string(e.stream) +
           ", \"time_us\": " + std::to_string(e.time_us) + "}";
  }
  return out + "]";
}

ResolvedTrace snapshot(const std::vector<std::vector<Entry>>& devices) {
  std::string json = "{\"device_traces\": [";
  for (std::size_t d = 0; d < devices.size(); ++d)
    json += (d ? ",\n" : "") + device_json(devices[d]);
  return resolve(parse_torch_snapshot_json(json + "]}", "snapshot.json"));
}

ReplayOutcome replay(const ResolvedTrace& trace, const std::string& spec) {
  ReplayOptions options;
  options.check_invariants = true;
  return replay_sim(trace, spec, options);
}

// A recording PyTorch's allocator makes of: 5 MB (a 20 MiB segment), 1000 B (a 2 MiB small
// segment), 12 MiB (the rest of the 20 MiB segment), 24 MiB (its own segment), a free of the
// 24 MiB block and 24 MiB again (that block).
std::vector<Entry> faithful() {
  return {
      {"segment_alloc", A, 20 * MiB, 100},    // event 0
      {"alloc", A, 5000000, 101},             // 1: op 1
      {"segment_alloc", B, 2 * MiB, 102},     // 2
      {"alloc", B, 1000, 103},                // 3: op 2
      {"alloc", A + 5000192, 12 * MiB, 104},  // 4: op 3
      {"segment_alloc", C, 24 * MiB, 105},    // 5
      {"alloc", C, 24 * MiB, 106},            // 6: op 4
      {"free_completed", C, 24 * MiB, 107},   // 7: op 5
      {"alloc", C, 24 * MiB, 108},            // 8: op 6
  };
}

TEST(Fidelity, the_pytorch_model_makes_every_recorded_segment_alloc) {
  const ResolvedTrace trace = snapshot({faithful()});
  const StrategyResult r = replay(trace, "pytorch").result;
  ASSERT_TRUE(r.fidelity);
  const Fidelity& f = *r.fidelity;
  EXPECT_TRUE(f.all_matched());
  EXPECT_EQ(f.recorded_allocs, 3u);
  EXPECT_EQ(f.recorded_alloc_bytes, 46 * MiB);
  EXPECT_EQ(f.model_allocs, 3u);
  EXPECT_EQ(f.model_alloc_bytes, 46 * MiB);
  EXPECT_EQ(f.matched_allocs, 3u);
  EXPECT_EQ(f.recorded_frees, 0u);
  EXPECT_EQ(f.diverging_points, 0u);
  EXPECT_EQ(r.empty_cache_calls, 0u);
  EXPECT_EQ(r.metrics.upstream_allocs, 3u);
  EXPECT_EQ(r.metrics.hits, 2u);
}

TEST(Fidelity, a_recorded_segment_the_model_does_not_ask_for_is_the_first_divergence) {
  // The recorded allocator took a segment of its own for the 12 MiB request; the model serves it
  // from the rest of the 20 MiB segment.
  std::vector<Entry> entries = faithful();
  entries[4].addr = D;
  entries.insert(entries.begin() + 4, Entry{"segment_alloc", D, 12 * MiB, 104});
  const ResolvedTrace trace = snapshot({entries});
  const StrategyResult r = replay(trace, "pytorch").result;
  ASSERT_TRUE(r.fidelity && r.fidelity->first_divergence);
  const FidelityDivergence& d = *r.fidelity->first_divergence;
  EXPECT_EQ(d.at, "alloc");
  EXPECT_EQ(d.op, 3u);
  EXPECT_EQ(d.event, 4u);  // the recorded segment_alloc
  EXPECT_EQ(d.time_ns, 104'000u);
  EXPECT_EQ(d.request_size, 12 * MiB);
  EXPECT_EQ(d.stream, 0u);
  EXPECT_EQ(d.device, 0);
  EXPECT_FALSE(d.frees);
  EXPECT_EQ(d.recorded_action, "segment_alloc");
  EXPECT_EQ(d.recorded_size, 12 * MiB);
  EXPECT_EQ(d.model_size, std::nullopt);
  EXPECT_EQ(d.what, "recorded segment_alloc of 12.00 MiB, model allocated nothing");
  // The 24 MiB segment after it is matched again.
  EXPECT_EQ(r.fidelity->recorded_allocs, 4u);
  EXPECT_EQ(r.fidelity->matched_allocs, 3u);
  EXPECT_EQ(r.fidelity->diverging_points, 1u);
}

TEST(Fidelity, a_segment_the_recording_lacks_is_located_by_the_operations_event) {
  std::vector<Entry> entries = faithful();
  entries.erase(entries.begin() + 5);  // no segment_alloc before the first 24 MiB request
  const ResolvedTrace trace = snapshot({entries});
  const StrategyResult r = replay(trace, "pytorch").result;
  ASSERT_TRUE(r.fidelity && r.fidelity->first_divergence);
  const FidelityDivergence& d = *r.fidelity->first_divergence;
  EXPECT_EQ(d.at, "alloc");
  EXPECT_EQ(d.op, 4u);
  EXPECT_EQ(d.event, 5u);  // the 24 MiB alloc entry, now event 5
  EXPECT_EQ(d.time_ns, 106'000u);
  EXPECT_EQ(d.request_size, 24 * MiB);
  EXPECT_EQ(d.recorded_size, std::nullopt);
  EXPECT_EQ(d.model_size, 24 * MiB);
  EXPECT_EQ(d.what, "model allocated 24.00 MiB, recorded nothing");
  EXPECT_EQ(r.fidelity->matched_allocs, 2u);
  EXPECT_EQ(r.fidelity->model_allocs, 3u);
  EXPECT_EQ(r.fidelity->recorded_allocs, 2u);
  EXPECT_EQ(r.fidelity->diverging_points, 1u);
}

TEST(Fidelity, segments_of_other_sizes_are_a_divergence_naming_both) {
  std::vector<Entry> entries = faithful();
  entries[5].size = 26 * MiB;  // as if the recorded allocator rounded 24 MiB up further
  const StrategyResult r = replay(snapshot({entries}), "pytorch").result;
  ASSERT_TRUE(r.fidelity && r.fidelity->first_divergence);
  const FidelityDivergence& d = *r.fidelity->first_divergence;
  EXPECT_EQ(d.op, 4u);
  EXPECT_EQ(d.event, 5u);
  EXPECT_EQ(d.recorded_size, 26 * MiB);
  EXPECT_EQ(d.model_size, 24 * MiB);
  EXPECT_EQ(d.what, "recorded segment_alloc of 26.00 MiB, model allocated 24.00 MiB");
  // Sizes that print alike are told apart by their bytes.
  entries[5].size = 24 * MiB + 512;
  const StrategyResult close = replay(snapshot({entries}), "pytorch").result;
  EXPECT_EQ(close.fidelity->first_divergence->what,
            "recorded segment_alloc of 24.00 MiB (25166336 B), model allocated 24.00 MiB "
            "(25165824 B)");
}

TEST(Fidelity, of_two_differences_at_one_place_the_earlier_recorded_call_is_named) {
  // After the last request, a page of an expandable segment is mapped and unmapped: the model
  // makes neither. The map comes first, though frees are compared first.
  std::vector<Entry> entries = faithful();
  entries.push_back({"segment_map", D, 2 * MiB, 200});    // event 9
  entries.push_back({"segment_unmap", D, 2 * MiB, 201});  // event 10
  const StrategyResult r = replay(snapshot({entries}), "pytorch").result;
  ASSERT_TRUE(r.fidelity && r.fidelity->first_divergence);
  const FidelityDivergence& d = *r.fidelity->first_divergence;
  EXPECT_EQ(d.at, "end");
  EXPECT_EQ(d.op, 7u);  // the number of operations
  EXPECT_EQ(d.event, 9u);
  EXPECT_EQ(d.time_ns, 200'000u);
  EXPECT_EQ(d.what, "recorded segment_map of 2.00 MiB, model allocated nothing");
  EXPECT_EQ(r.fidelity->recorded_allocs, 4u);  // maps count with the allocations
  EXPECT_EQ(r.fidelity->recorded_frees, 1u);
  EXPECT_EQ(r.empty_cache_calls, 0u);  // an unmap after a map is not an empty_cache
}

// PyTorch with expandable_segments:True: 5 MiB maps a 20 MiB page of a large segment; 30 MiB
// maps the page after it (the cached 15 MiB plus 15 more); 1000 B maps a 2 MiB page of a small
// segment; the 30 MiB block is freed and an empty_cache unmaps the one page left whole; 50 MiB
// maps two pages after the cached 15 MiB (35 MiB more).
std::vector<Entry> expandable_recording() {
  constexpr std::uint64_t L = 0x7f0000000000, S = 0x7e0000000000;
  return {
      {"segment_map", L, 20 * MiB, 100},               // event 0
      {"alloc", L, 5 * MiB, 101},                      // 1: op 1
      {"segment_map", L + 20 * MiB, 20 * MiB, 102},    // 2
      {"alloc", L + 5 * MiB, 30 * MiB, 103},           // 3: op 2
      {"segment_map", S, 2 * MiB, 104},                // 4
      {"alloc", S, 1000, 105},                         // 5: op 3
      {"free_completed", L + 5 * MiB, 30 * MiB, 106},  // 6: op 4
      {"segment_unmap", L + 20 * MiB, 20 * MiB, 107},  // 7: empty_cache
      {"segment_map", L + 20 * MiB, 40 * MiB, 108},    // 8
      {"alloc", L + 5 * MiB, 50 * MiB, 109},           // 9: op 5
      {"free_completed", L, 5 * MiB, 110},             // 10: op 6
  };
}

TEST(Fidelity, the_pytorch_model_with_expandable_segments_makes_every_map_and_unmap) {
  const ResolvedTrace trace = snapshot({expandable_recording()});
  const StrategyResult r = replay(trace, "pytorch-conf:\"expandable_segments:True\"").result;
  ASSERT_TRUE(r.fidelity);
  const Fidelity& f = *r.fidelity;
  EXPECT_TRUE(f.all_matched()) << f.first_divergence->what;
  EXPECT_EQ(f.recorded_allocs, 4u);
  EXPECT_EQ(f.recorded_alloc_bytes, 82 * MiB);
  EXPECT_EQ(f.model_allocs, 4u);  // one per mapping, however many pages
  EXPECT_EQ(f.model_alloc_bytes, 82 * MiB);
  EXPECT_EQ(f.matched_allocs, 4u);
  EXPECT_EQ(f.recorded_frees, 1u);
  EXPECT_EQ(f.model_frees, 1u);
  EXPECT_EQ(f.matched_frees, 1u);
  EXPECT_EQ(f.diverging_points, 0u);
  EXPECT_EQ(r.empty_cache_calls, 1u);
  EXPECT_EQ(r.metrics.upstream_allocs, 5u);  // pages: 1 + 1 + 1 + 2
  EXPECT_EQ(r.metrics.hits, 0u);
  // Fixed segments: the 30 MiB request takes a segment of its own, where PyTorch mapped a page.
  const StrategyResult fixed = replay(trace, "pytorch").result;
  ASSERT_TRUE(fixed.fidelity && fixed.fidelity->first_divergence);
  EXPECT_EQ(fixed.fidelity->first_divergence->op, 2u);
  EXPECT_EQ(fixed.fidelity->first_divergence->what,
            "recorded segment_map of 20.00 MiB, model allocated 30.00 MiB");
}

TEST(Fidelity, other_strategies_show_how_far_they_are_from_the_recorded_allocator) {
  const ResolvedTrace trace = snapshot({faithful()});
  const StrategyResult exact = replay(trace, "exact").result;
  ASSERT_TRUE(exact.fidelity && exact.fidelity->first_divergence);
  // exact asks the upstream for the request itself: 5 MB where PyTorch took 20 MiB.
  const FidelityDivergence& d = *exact.fidelity->first_divergence;
  EXPECT_EQ(d.op, 1u);
  EXPECT_EQ(d.event, 0u);
  EXPECT_EQ(d.what, "recorded segment_alloc of 20.00 MiB, model allocated 4.77 MiB");
  EXPECT_EQ(exact.fidelity->model_allocs, 4u);
  EXPECT_EQ(exact.fidelity->matched_allocs, 1u);  // the 24 MiB segment
  EXPECT_EQ(exact.fidelity->diverging_points, 3u);

  // passthrough frees at every free: the recorded allocator freed nothing there.
  const StrategyResult passthrough = replay(trace, "passthrough").result;
  EXPECT_EQ(passthrough.fidelity->model_frees, 1u);
  // Every operation but the first 24 MiB request, whose segment is the size asked.
  EXPECT_EQ(passthrough.fidelity->diverging_points, 5u);
}

// 24 MiB, freed, then an empty_cache; 24 MiB again, freed, then an empty_cache right before a
// request that needs a new segment; that request freed, then an empty_cache at the very end.
std::vector<Entry> with_empty_caches() {
  return {
      {"segment_alloc", C, 24 * MiB, 100},   // 0
      {"alloc", C, 24 * MiB, 101},           // 1: op 1
      {"free_completed", C, 24 * MiB, 102},  // 2: op 2
      {"segment_free", C, 24 * MiB, 103},    // 3: empty_cache
      {"segment_alloc", C, 24 * MiB, 104},   // 4
      {"alloc", C, 24 * MiB, 105},           // 5: op 3
      {"free_completed", C, 24 * MiB, 106},  // 6: op 4
      {"segment_free", C, 24 * MiB, 107},    // 7: empty_cache
      {"segment_alloc", D, 20 * MiB, 108},   // 8
      {"alloc", D, 5000000, 109},            // 9: op 5
      {"free_completed", D, 5000192, 110},   // 10: op 6
      {"segment_free", D, 20 * MiB, 111},    // 11: empty_cache after the last operation
  };
}

TEST(Fidelity, a_recorded_empty_cache_is_replayed_as_a_release_and_counted) {
  const ResolvedTrace trace = snapshot({with_empty_caches()});
  const StrategyResult r = replay(trace, "pytorch").result;
  ASSERT_TRUE(r.fidelity);
  EXPECT_TRUE(r.fidelity->all_matched()) << r.fidelity->first_divergence->what;
  EXPECT_EQ(r.empty_cache_calls, 3u);
  EXPECT_EQ(r.fidelity->matched_frees, 3u);
  EXPECT_EQ(r.fidelity->model_free_bytes, 68 * MiB);
  // Without the releases the second 24 MiB request would be a hit.
  EXPECT_EQ(r.metrics.hits, 0u);
  EXPECT_EQ(r.metrics.upstream_allocs, 3u);
  // Releases the program asked for happen during the replay: counted, but not as evictions.
  EXPECT_EQ(r.metrics.upstream_frees, 3u);
  EXPECT_EQ(r.metrics.evictions, 0u);
  EXPECT_EQ(r.metrics.final_cached_bytes, 0u);
  EXPECT_EQ(r.metrics.peak_reserved_bytes, 24 * MiB);
  // Every strategy is asked to empty its cache: exact too.
  const StrategyResult exact = replay(trace, "exact").result;
  EXPECT_EQ(exact.empty_cache_calls, 3u);
  EXPECT_EQ(exact.metrics.hits, 0u);
  EXPECT_EQ(exact.metrics.upstream_frees, 3u);
  EXPECT_EQ(exact.fidelity->first_divergence->op, 5u);  // 5 MB where PyTorch took 20 MiB
}

TEST(Fidelity, an_empty_cache_that_frees_what_the_model_holds_no_more_is_a_divergence) {
  // The recorded empty_cache returns a segment twice (a segment never allocated in the history
  // would be one held since before it: the start state): the model frees it once.
  std::vector<Entry> entries = with_empty_caches();
  entries.insert(entries.begin() + 4, Entry{"segment_free", C, 24 * MiB, 103});
  const StrategyResult r = replay(snapshot({entries}), "pytorch").result;
  ASSERT_TRUE(r.fidelity && r.fidelity->first_divergence);
  const FidelityDivergence& d = *r.fidelity->first_divergence;
  EXPECT_EQ(d.at, "empty_cache");
  EXPECT_EQ(d.op, 3u);  // replayed just before op 3
  EXPECT_EQ(d.event, 4u);
  EXPECT_TRUE(d.frees);
  EXPECT_EQ(d.what, "recorded segment_free of 24.00 MiB, model freed no segment of that size");
  EXPECT_EQ(r.empty_cache_calls, 3u);  // one empty_cache of two segments
  EXPECT_EQ(r.fidelity->matched_frees, 3u);
}

TEST(Fidelity, a_real_replay_replays_the_empty_caches_without_a_fidelity_section) {
  const ResolvedTrace trace = snapshot({with_empty_caches()});
  ReplayOptions options;
  options.upstream = "host-malloc";
  const StrategyResult r = replay_trace(trace, "pytorch", options).result;
  EXPECT_FALSE(r.fidelity);
  EXPECT_EQ(r.empty_cache_calls, 3u);
  EXPECT_EQ(r.metrics.upstream_frees, 3u);
  EXPECT_EQ(r.metrics.hits, 0u);
}

TEST(Fidelity, a_block_is_reused_only_once_its_free_completes_on_every_stream) {
  // A 12 MiB block of stream 1 was used on stream 2 (record_stream): freed at 102 µs, it waits
  // for stream 2 until 107 µs. PyTorch cannot hand it out in between: the 12 MiB request at
  // 104 µs takes a new segment. Stream 2's own request takes a segment of its own (a stream's
  // cached blocks serve only that stream). Once the free completes, stream 1 reuses the block.
  const std::vector<Entry> two_streams = {
      {"segment_alloc", A, 12 * MiB, 100, 1},   // 0
      {"alloc", A, 12 * MiB, 101, 1},           // 1: op 1
      {"free_requested", A, 12 * MiB, 102, 1},  // not an event
      {"segment_alloc", B, 12 * MiB, 103, 1},   // 2
      {"alloc", B, 12 * MiB, 104, 1},           // 3: op 2
      {"segment_alloc", C, 12 * MiB, 105, 2},   // 4
      {"alloc", C, 12 * MiB, 106, 2},           // 5: op 3
      {"free_completed", A, 12 * MiB, 107, 1},  // 6: op 4
      {"alloc", A, 12 * MiB, 108, 1},           // 7: op 5, a hit
      {"free_completed", C, 12 * MiB, 109, 2},  // 8: op 6
      {"alloc", C, 12 * MiB, 110, 2},           // 9: op 7, a hit
  };
  const StrategyResult r = replay(snapshot({two_streams}), "pytorch").result;
  ASSERT_TRUE(r.fidelity);
  EXPECT_TRUE(r.fidelity->all_matched()) << r.fidelity->first_divergence->what;
  EXPECT_EQ(r.fidelity->matched_allocs, 3u);
  EXPECT_EQ(r.metrics.hits, 2u);
  EXPECT_EQ(r.metrics.upstream_allocs, 3u);

  // Were the block free at free_requested, the model would reuse it at 104 µs, where the
  // recording took a segment: the section says so.
  std::vector<Entry> freed_early = two_streams;
  freed_early[2].action = "free_completed";
  freed_early.erase(freed_early.begin() + 7);
  const StrategyResult early = replay(snapshot({freed_early}), "pytorch").result;
  ASSERT_TRUE(early.fidelity->first_divergence);
  EXPECT_EQ(early.fidelity->first_divergence->op, 3u);
  EXPECT_EQ(early.fidelity->first_divergence->time_ns, 103'000u);
  EXPECT_EQ(early.fidelity->first_divergence->what,
            "recorded segment_alloc of 12.00 MiB, model allocated nothing");
}

TEST(Fidelity, each_device_is_held_against_its_own_recorded_calls) {
  // Merged by time, cuda:1's segment lies between cuda:0's segment and cuda:0's request.
  const std::vector<Entry> device0 = {
      {"segment_alloc", A, 20 * MiB, 100},
      {"alloc", A, 5000000, 103},
  };
  const std::vector<Entry> device1 = {
      {"segment_alloc", A, 2 * MiB, 101},
      {"alloc", A, 1000, 102},
      {"alloc", A + 1024, 1000, 104},
  };
  const ResolvedTrace trace = snapshot({device0, device1});
  const StrategyResult r = replay(trace, "pytorch").result;
  EXPECT_TRUE(r.fidelity->all_matched()) << r.fidelity->first_divergence->what;
  EXPECT_EQ(r.fidelity->matched_allocs, 2u);

  // Without cuda:1's segment the model's 2 MiB segment is recorded nowhere, on cuda:1.
  std::vector<Entry> cut = device1;
  cut.erase(cut.begin());
  const StrategyResult missing = replay(snapshot({device0, cut}), "pytorch").result;
  ASSERT_TRUE(missing.fidelity->first_divergence);
  EXPECT_EQ(missing.fidelity->first_divergence->device, 1);
  EXPECT_EQ(missing.fidelity->first_divergence->op, 1u);
  EXPECT_EQ(missing.fidelity->first_divergence->what, "model allocated 2.00 MiB, recorded nothing");
  EXPECT_EQ(missing.fidelity->diverging_points, 1u);
}

TEST(Fidelity, a_trace_of_many_devices_follows_each_device_through_its_own_calls) {
  // Every device's segment comes long before its request, with every other device's segment in
  // between: a lane walks its own calls, never the others'.
  constexpr DeviceId devices = 60000;
  Trace trace;
  for (int pass = 0; pass < 2; ++pass)
    for (DeviceId d = 0; d < devices; ++d) {
      Event e;
      e.op = Op::alloc;
      e.device = d;
      e.kind = MemoryKind::device;
      e.address = 0x1000;
      e.size = 512;
      e.segment = pass == 0;
      trace.push_back(e);
    }
  test::Watchdog watchdog(120, "a replay of 60000 devices");
  const StrategyResult r = replay_sim(resolve(trace), "passthrough").result;
  ASSERT_TRUE(r.fidelity);
  EXPECT_TRUE(r.fidelity->all_matched());
  EXPECT_EQ(r.fidelity->matched_allocs, static_cast<std::uint64_t>(devices));
}

TEST(Fidelity, a_trace_without_segment_calls_has_no_fidelity_section) {
  std::vector<Entry> entries = faithful();
  std::erase_if(entries, [](const Entry& e) { return e.action == "segment_alloc"; });
  const StrategyResult r = replay(snapshot({entries}), "pytorch").result;
  EXPECT_FALSE(r.fidelity);
  EXPECT_FALSE(r.empty_cache_calls);
}

TEST(Fidelity, the_section_is_written_read_back_and_printed_under_the_table) {
  std::vector<Entry> entries = faithful();
  entries[5].size = 26 * MiB;
  const ResolvedTrace trace = snapshot({entries});
  const StrategyResult pytorch = replay(snapshot({faithful()}), "pytorch").result;
  const StrategyResult off = replay(trace, "pytorch").result;
  for (const StrategyResult* r : {&pytorch, &off}) {
    const nlohmann::json j = result_json(*r);
    ASSERT_TRUE(j.contains("fidelity"));
    const StrategyResult back = result_from_json(j, "report.json");
    EXPECT_EQ(back.fidelity, r->fidelity);
    EXPECT_EQ(back.empty_cache_calls, r->empty_cache_calls);
  }
  const nlohmann::json j = result_json(off);
  EXPECT_EQ(j["fidelity"]["first_divergence"]["device"], "cuda:0");
  EXPECT_EQ(j["fidelity"]["first_divergence"]["calls"], "allocs");
  EXPECT_EQ(j["fidelity"]["first_divergence"]["recorded"]["action"], "segment_alloc");
  EXPECT_EQ(j["fidelity"]["all_matched"], false);

  // A report from before the section reads as one without it.
  nlohmann::json older = result_json(pytorch);
  older.erase("fidelity");
  older.erase("empty_cache_calls");
  const StrategyResult old = result_from_json(older, "old.json");
  EXPECT_FALSE(old.fidelity);
  EXPECT_FALSE(old.empty_cache_calls);

  // A damaged section is refused, naming the file and the key.
  nlohmann::json bad = result_json(off);
  bad["fidelity"]["first_divergence"]["calls"] = "pages";
  try {
    (void)result_from_json(bad, "bad.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'calls'"), std::string::npos) << e.what();
  }
  bad = result_json(pytorch);
  bad["fidelity"]["matched_allocs"] = 99;
  EXPECT_THROW((void)result_from_json(bad, "bad.json"), InputError);

  const std::string text = fidelity_text({pytorch, off});
  EXPECT_EQ(text,
            "fidelity: the recorded allocator made 3 segment allocs (46.00 MiB) and 0 segment "
            "frees (0 B)\n"
            "  pytorch  every call matched (3/3 allocs and 0/0 frees matched)\n"
            "  pytorch  2/3 allocs and 0/0 frees matched (the model made 3 allocs, 0 frees); "
            "first apart at op 4 (event 5), 0.000105 s, alloc of 24.00 MiB on cuda:0 stream 0: "
            "recorded segment_alloc of 26.00 MiB, model allocated 24.00 MiB\n");
  EXPECT_NE(results_table_text({pytorch}).find(fidelity_text({pytorch})), std::string::npos);
  EXPECT_EQ(fidelity_text({replay(snapshot({{{"alloc", A, 8, 1}}}), "pytorch").result}), "");
}

// A snapshot as PyTorch's allocator would record it, made by the model itself: the segment
// entries are whatever it asks of its upstream, written where it asks, and an empty_cache now and
// then. Random requests on two streams, about `entries` entries in all.
Trace recorded_by_the_model(std::size_t entries) {
  class Recorder final : public Upstream {
   public:
    Recorder(Trace& trace, const std::uint64_t& time, const std::uint64_t& stream)
        : trace_(trace), time_(time), stream_(stream) {}
    std::optional<Block> allocate(std::uint64_t bytes) override {
      const std::optional<Block> block = sim_.allocate(bytes);
      if (block) add(Op::alloc, *block);
      return block;
    }
    void deallocate(const Block& block) override {
      add(Op::free, block);
      sim_.deallocate(block);
    }
    std::uint64_t frees = 0;

   private:
    void add(Op op, const Block& block) {
      Event e;
      e.op = op;
      e.time_ns = time_;
      e.device = 0;
      e.kind = MemoryKind::device;
      e.stream = stream_;
      e.address = block.address;
      e.size = block.capacity;
      e.segment = true;
      trace_.push_back(e);
      if (op == Op::free) ++frees;
    }
    SimUpstream sim_;
    Trace& trace_;
    const std::uint64_t& time_;
    const std::uint64_t& stream_;
  };

  Trace trace;
  trace.reserve(entries + entries / 8);
  std::uint64_t time = 0, stream = 0;
  Recorder recorder(trace, time, stream);
  PyTorchCachingStrategy allocator(recorder, PyTorchOptions{});
  std::mt19937_64 random(28);
  struct Live {
    Block block;
    std::uint64_t size, stream;
  };
  std::vector<Live> live;
  const auto request = [&](Op op, std::uint64_t address, std::uint64_t size) {
    Event e;
    e.op = op;
    e.time_ns = time;
    e.device = 0;
    e.kind = MemoryKind::device;
    e.stream = stream;
    e.address = address;
    e.size = size;
    trace.push_back(e);
  };
  std::uint64_t empty_caches = 0;
  while (trace.size() < entries) {
    time += 1000;
    const std::uint64_t dice = random() % 1000;
    if (dice == 0) {
      const std::uint64_t before = recorder.frees;
      allocator.release();
      empty_caches += recorder.frees > before;
    } else if (live.size() < 64 && (live.size() < 8 || dice % 2 == 0)) {
      stream = 1 + random() % 2;
      // Mostly small requests, some in (1, 10) MiB, some large ones.
      const std::uint64_t kind = random() % 10;
      const std::uint64_t size = kind < 7   ? 1 + random() % (1 << 20)
                                 : kind < 9 ? (1 << 20) + random() % (9 << 20)
                                            : (10 << 20) + random() % (54 << 20);
      const std::optional<Block> block = allocator.allocate(size, stream);
      request(Op::alloc, block->address, size);
      live.push_back({*block, size, stream});
    } else {
      const std::size_t k = random() % live.size();
      stream = live[k].stream;
      allocator.deallocate(live[k].block);
      request(Op::free, live[k].block.address, live[k].size);
      live[k] = live.back();
      live.pop_back();
    }
  }
  trace.metadata["empty_caches"] = empty_caches;
  return trace;
}

TEST(Fidelity, the_model_matches_a_million_entry_recording_of_itself) {
  const Trace recorded = recorded_by_the_model(1'000'000);
  const ResolvedTrace trace = resolve(recorded);
  ASSERT_GT(trace.segment_calls.size(), 1000u);
  ReplayOptions options;  // no invariant checks: they are slow, and the size is the point
  const StrategyResult r = replay_sim(trace, "pytorch", options).result;
  ASSERT_TRUE(r.fidelity);
  EXPECT_TRUE(r.fidelity->all_matched())
      << r.fidelity->first_divergence->what << " at op " << r.fidelity->first_divergence->op;
  EXPECT_EQ(r.fidelity->matched_allocs, trace.segment_allocs);
  EXPECT_EQ(r.fidelity->matched_frees, trace.segment_frees);
  EXPECT_EQ(r.empty_cache_calls, recorded.metadata["empty_caches"].get<std::uint64_t>());
  EXPECT_GT(*r.empty_cache_calls, 0u);
  EXPECT_EQ(r.metrics.upstream_allocs, trace.segment_allocs);
  EXPECT_EQ(r.metrics.upstream_frees, trace.segment_frees);
}

}  // namespace
}  // namespace alloclab
