// Real replay (--upstream host-*): the same replayer and strategies as simulation, over real
// memory, with timing adaptors. Nothing here asserts a duration: only structure and counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "alloclab/format/formats.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/replay/timing.hpp"
#include "alloclab/strategies/upstream/host_library.hpp"
#include "alloclab/strategies/upstream/host_malloc.hpp"
#include "alloclab/strategies/upstream/host_mmap.hpp"
#include "alloclab/strategies/upstream/registry.hpp"
#include "tests/real_size.hpp"
#include "tests/watchdog.hpp"

namespace alloclab {
namespace {

// A plain pointer, not a string: a reference returned from a call with a temporary argument
// looks dangling to GCC 13 (-Wdangling-reference), though the cache outlives it.
const ResolvedTrace& bundled(const char* name) {
  static std::map<std::string, ResolvedTrace> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, resolve(read_trace(std::string(ALLOCLAB_TRACES_DIR) + "/" + name)))
             .first;
  return it->second;
}

// Everything of a result that does not depend on time or on the upstream: counters, runs and
// the memory series.
nlohmann::json counters_json(const StrategyResult& r) {
  nlohmann::json j = result_json(r);
  j.erase("timing");
  j.erase("latency");
  j.erase("wall_seconds");
  for (auto& run : j["runs"]) run.erase("allocation_time_ns");  // measured, like timing
  return j;
}

// Strategies whose decisions never depend on block addresses: their counters must be identical
// on any upstream that hands out exactly the capacity asked for.
const std::vector<std::string>& address_blind_specs() {
  static const std::vector<std::string> specs = {"passthrough",
                                                 "exact",
                                                 "best-fit",
                                                 "best-fit:max_ratio=1.5",
                                                 "fifo-shrink:max=8MiB",
                                                 "fifo-shrink:max=8MiB,match=best-fit",
                                                 "fifo-shrink:max_items=16",
                                                 "per-run-pool",
                                                 "rten",
                                                 "exact:round=512"};
  return specs;
}

ReplayOptions real_options(const std::string& upstream) {
  ReplayOptions options;
  options.upstream = upstream;
  options.check_invariants = true;  // on real memory: no two live blocks overlap
  return options;
}

void expect_counters_equal_sim(const std::string& upstream, const std::string& trace_name,
                               const std::vector<std::string>& specs) {
  const ResolvedTrace& trace = bundled(trace_name.c_str());
  for (const std::string& spec : specs) {
    const StrategyResult sim = replay_sim(trace, spec).result;
    const StrategyResult real = replay_trace(trace, spec, real_options(upstream)).result;
    EXPECT_EQ(counters_json(sim), counters_json(real))
        << spec << " on " << trace_name << " over " << upstream;
  }
}

TEST(RealReplay, host_malloc_counters_equal_simulation_on_every_bundled_trace) {
  for (const char* trace : {"tiny.csv", "cnn-inference.alt", "transformer-varlen.alt"})
    expect_counters_equal_sim("host-malloc", trace, address_blind_specs());
}

TEST(RealReplay, host_mmap_counters_equal_simulation_on_every_bundled_trace) {
  for (const char* trace : {"tiny.csv", "cnn-inference.alt", "transformer-varlen.alt"})
    expect_counters_equal_sim("host-mmap", trace, address_blind_specs());
}

TEST(RealReplay, pytorch_counters_equal_simulation_on_the_bundled_traces) {
  // pytorch orders free blocks of equal size by address; on these traces the choice it makes
  // among them does not change any counter (see docs/report-schema.md, "Real replay").
  for (const char* trace : {"tiny.csv", "cnn-inference.alt", "transformer-varlen.alt"}) {
    expect_counters_equal_sim("host-malloc", trace, {"pytorch"});
    expect_counters_equal_sim("host-mmap", trace, {"pytorch"});
  }
}

// `live_at_end` allocations never freed, between as many allocated and freed again, of sizes
// from 16 bytes to 64 KiB: the shape of a recording stopped while a program held its buffers.
ResolvedTrace trace_with_leaks(std::size_t live_at_end) {
  Trace trace;
  const std::size_t churn = std::max<std::size_t>(live_at_end, 100);
  for (std::size_t i = 0; i < live_at_end + churn; ++i) {
    Event alloc;
    alloc.op = Op::alloc;
    alloc.address = 0x10000000 + i * 0x20000;
    alloc.size = 16u << (i % 13);
    alloc.time_ns = 2 * i;
    trace.push_back(alloc);
    if (i % 2 == 1 || i >= 2 * live_at_end) {
      Event free = alloc;
      free.op = Op::free;
      free.size = 0;
      free.time_ns = 2 * i + 1;
      trace.push_back(free);
    }
  }
  return resolve(trace);
}

TEST(RealReplay, traces_ending_with_live_blocks_finish_and_count_as_in_simulation) {
  for (const std::size_t leaks :
       {std::size_t{0}, std::size_t{17}, std::size_t{1000}, test::real_size(100000)}) {
    const ResolvedTrace trace = trace_with_leaks(leaks);
    for (const char* spec : {"exact", "best-fit", "fifo-shrink:max=1MiB", "per-run-pool"}) {
      const StrategyResult sim = replay_sim(trace, spec).result;
      for (const char* upstream : {"host-malloc", "host-mmap"}) {
        if (leaks > 1000 && std::string(upstream) == "host-mmap") continue;  // 100k mappings
        test::Watchdog watchdog(120, "replay");
        const StrategyResult real = replay_trace(trace, spec, real_options(upstream)).result;
        EXPECT_EQ(counters_json(sim), counters_json(real))
            << spec << " with " << leaks << " leaks over " << upstream;
      }
    }
  }
}

TEST(RealReplay, every_call_is_timed_once) {
  const ResolvedTrace& trace = bundled("cnn-inference.alt");
  std::uint64_t frees = 0;
  for (const ResolvedOp& op : trace.ops) frees += op.op == ReplayOp::free;
  const StrategyResult r =
      replay_trace(trace, "fifo-shrink:max=8MiB", real_options("host-malloc")).result;
  const Metrics& m = r.metrics;
  ASSERT_EQ(r.latency.size(), 4u);  // no touch histogram without --touch
  EXPECT_EQ(r.latency.at("strategy_allocate").count, m.requests);
  EXPECT_EQ(r.latency.at("strategy_deallocate").count, frees);
  EXPECT_EQ(r.latency.at("upstream_allocate").count, m.upstream_allocs);
  EXPECT_EQ(r.latency.at("upstream_deallocate").count, m.upstream_frees);
  for (const auto& [name, l] : r.latency) {
    EXPECT_LE(l.p50_ns, l.p90_ns) << name;
    EXPECT_LE(l.p90_ns, l.p99_ns) << name;
    EXPECT_LE(l.p99_ns, l.p999_ns) << name;
    EXPECT_LE(l.p999_ns, l.max_ns) << name;
    EXPECT_LE(l.max_ns, l.total_ns) << name;
  }
  EXPECT_GT(r.wall_seconds, 0.0);
}

TEST(RealReplay, each_run_has_the_measured_time_of_its_strategy_calls) {
  ReplayOptions options;
  options.upstream = "host-malloc";
  const StrategyResult r = replay_trace(bundled("cnn-inference.alt"), "exact", options).result;
  ASSERT_GT(r.runs.size(), 1u);
  std::uint64_t sum = 0;
  for (const RunMetrics& run : r.runs) {
    ASSERT_TRUE(run.allocation_time_ns) << run.label;
    if (run.requests > 0) {
      EXPECT_GT(*run.allocation_time_ns, 0u) << run.label;
    }
    sum += *run.allocation_time_ns;
  }
  EXPECT_LE(sum, r.latency.at("strategy_allocate").total_ns +
                     r.latency.at("strategy_deallocate").total_ns);
}

TEST(RealReplay, report_has_latency_and_wall_seconds_only_in_real_mode) {
  const ResolvedTrace& trace = bundled("tiny.csv");
  const StrategyResult real = replay_trace(trace, "exact", real_options("host-malloc")).result;
  const nlohmann::json j = result_json(real);
  ASSERT_TRUE(j.contains("latency"));
  for (const char* name :
       {"strategy_allocate", "strategy_deallocate", "upstream_allocate", "upstream_deallocate"})
    for (const char* key : {"count", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "total_ns"})
      EXPECT_TRUE(j["latency"][name][key].is_number_unsigned()) << name << "." << key;
  for (const auto& [name, l] : j["latency"].items()) {
    std::uint64_t sum = 0, bound = 0;
    for (const nlohmann::json& bucket : l["histogram"]) {
      if (sum > 0) {
        EXPECT_GT(bucket[0].get<std::uint64_t>(), bound) << name << ": bounds ascend";
      }
      bound = bucket[0].get<std::uint64_t>();
      sum += bucket[1].get<std::uint64_t>();
    }
    EXPECT_EQ(sum, l["count"].get<std::uint64_t>()) << name;
    if (sum > 0) {
      EXPECT_GE(bound, l["max_ns"].get<std::uint64_t>()) << name;
    }
  }
  EXPECT_TRUE(j["wall_seconds"].is_number());
  EXPECT_EQ(result_from_json(j, "test").latency, real.latency);  // reads back

  const nlohmann::json sim = result_json(replay_sim(trace, "exact").result);
  EXPECT_FALSE(sim.contains("latency"));
  EXPECT_FALSE(sim.contains("wall_seconds"));
  EXPECT_FALSE(sim.contains("modelled_ns"));

  ReportContext context;
  context.mode = "real";
  context.upstream = "host-malloc";
  context.touch = true;
  const nlohmann::json report = make_report(TraceSummary{}, {real}, context);
  EXPECT_EQ(report["mode"], "real");
  EXPECT_EQ(report["upstream"], "host-malloc");
  EXPECT_EQ(report["touch"], true);
  EXPECT_EQ(report["timing_mode"], "asap");
  EXPECT_FALSE(make_report(TraceSummary{}, {real}, ReportContext{}).contains("upstream"));
}

TEST(RealReplay, memory_limit_on_a_real_upstream_gives_failed_requests_as_in_simulation) {
  const ResolvedTrace& trace = bundled("transformer-varlen.alt");
  for (const char* upstream : {"host-malloc", "host-mmap"}) {
    ReplayOptions options = real_options(upstream);
    options.memory_limit = 2 << 20;
    ReplayOptions sim_options;
    sim_options.memory_limit = options.memory_limit;
    for (const char* spec : {"exact", "fifo-shrink:max=1MiB", "pytorch"}) {
      const StrategyResult real = replay_trace(trace, spec, options).result;
      EXPECT_GT(real.metrics.failed_requests, 0u) << spec << " over " << upstream;
      EXPECT_LE(real.metrics.peak_reserved_bytes, *options.memory_limit);
      if (std::string(spec) != "pytorch") {
        EXPECT_EQ(counters_json(real), counters_json(replay_sim(trace, spec, sim_options).result))
            << spec << " over " << upstream;
      }
    }
  }
}

TEST(RealReplay, touch_writes_blocks_and_is_timed_apart) {
  const ResolvedTrace& trace = bundled("cnn-inference.alt");
  for (const char* upstream : {"host-malloc", "host-mmap"}) {
    ReplayOptions options = real_options(upstream);
    options.touch = true;
    const StrategyResult r = replay_trace(trace, "exact", options).result;
    ASSERT_TRUE(r.latency.count("touch")) << upstream;
    EXPECT_EQ(r.latency.at("touch").count, r.metrics.requests - r.metrics.failed_requests);
    EXPECT_EQ(counters_json(r), counters_json(replay_sim(trace, "exact").result));
  }
}

TEST(RealReplay, touch_pages_writes_one_byte_in_every_page_of_the_range) {
  HostMmapUpstream mmap;
  const Block block = *mmap.allocate(5 * 4096);
  auto* bytes = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(block.address));
  // From the middle of page 0 to the middle of page 3: pages 0 to 3, not page 4.
  touch_pages(block.address + 100, 3 * 4096);
  EXPECT_EQ(bytes[100], 1);
  for (int page = 1; page <= 3; ++page) EXPECT_EQ(bytes[page * 4096], 1) << page;
  EXPECT_EQ(bytes[4 * 4096], 0);
  touch_pages(block.address, 0);  // nothing to write: no crash
  mmap.deallocate(block);
}

TEST(RealReplay, recorded_timing_gives_the_same_counters) {
  const ResolvedTrace& trace = bundled("tiny.csv");
  ReplayOptions options = real_options("host-malloc");
  options.timing = TimingMode::recorded;
  EXPECT_EQ(counters_json(replay_trace(trace, "fifo-shrink:max=2MiB", options).result),
            counters_json(replay_sim(trace, "fifo-shrink:max=2MiB").result));
}

TEST(RealReplay, options_that_need_a_real_upstream_or_simulation_are_refused) {
  const ResolvedTrace& trace = bundled("tiny.csv");
  ReplayOptions touch_on_sim;
  touch_on_sim.touch = true;
  EXPECT_THROW(replay_trace(trace, "exact", touch_on_sim), std::invalid_argument);
}

TEST(Upstreams, unknown_name_lists_the_known_ones) {
  try {
    make_upstream("host-tcmalloc");
    FAIL() << "no error";
  } catch (const UpstreamError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("host-tcmalloc"), std::string::npos) << what;
    for (const std::string& name : upstream_names())
      EXPECT_NE(what.find(name), std::string::npos) << what;
  }
  ReplayOptions options;
  options.upstream = "cuda";
  EXPECT_THROW(replay_trace(bundled("tiny.csv"), "exact", options), UpstreamError);
}

void expect_usable(Upstream& upstream) {
  for (std::uint64_t size :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4096}, std::uint64_t{3} << 20}) {
    const std::optional<Block> block = upstream.allocate(size);
    ASSERT_TRUE(block) << size;
    EXPECT_NE(block->address, 0u);
    EXPECT_EQ(block->capacity, size);
    if (size)
      std::memset(reinterpret_cast<void*>(static_cast<std::uintptr_t>(block->address)), 0xab, size);
    upstream.deallocate(*block);
  }
  // Far beyond any machine: a failed allocation is a value, not a crash.
  EXPECT_FALSE(upstream.allocate(std::uint64_t{1} << 62));
  EXPECT_FALSE(upstream.allocate(~std::uint64_t{0}));
}

TEST(Upstreams, host_malloc_and_mmap_hand_out_exact_capacity_and_fail_cleanly) {
  HostMallocUpstream malloc_upstream;
  expect_usable(malloc_upstream);
  HostMmapUpstream mmap_upstream;
  expect_usable(mmap_upstream);
}

TEST(Upstreams, memory_limit_wraps_a_real_upstream) {
  UpstreamOptions options;
  options.limit_bytes = 8192;
  const std::unique_ptr<Upstream> up = make_upstream("host-malloc", options);
  const std::optional<Block> a = up->allocate(8000);
  ASSERT_TRUE(a);
  EXPECT_FALSE(up->allocate(193));
  const std::optional<Block> zero = up->allocate(0);  // zero bytes always fit
  ASSERT_TRUE(zero);
  up->deallocate(*zero);
  up->deallocate(*a);
  const std::optional<Block> b = up->allocate(8192);
  ASSERT_TRUE(b);
  up->deallocate(*b);
}

void library_test(HostLibraryUpstream::Library library, const char* name, const char* package) {
  if (const std::optional<std::string> why = HostLibraryUpstream::unavailable(library))
    GTEST_SKIP() << *why << " (package " << package << ")";
  const std::unique_ptr<Upstream> up = make_upstream(name);
  expect_usable(*up);
  expect_counters_equal_sim(name, "cnn-inference.alt", {"passthrough", "exact", "per-run-pool"});
}

TEST(Upstreams, host_jemalloc_works_when_installed) {
  library_test(HostLibraryUpstream::Library::jemalloc, "host-jemalloc", "libjemalloc2");
}

TEST(Upstreams, host_mimalloc_works_when_installed) {
  library_test(HostLibraryUpstream::Library::mimalloc, "host-mimalloc", "libmimalloc2.0");
}

}  // namespace
}  // namespace alloclab
