// Simulated replay throughput per strategy on a 10M-event synthetic trace shaped like a
// transformer encoder with variable sequence lengths (sizes change from run to run, so caches
// both hit and miss). Run: build-release/bin/replay_bench (docs/performance.md).
#include <benchmark/benchmark.h>

#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace {

const alloclab::ResolvedTrace& trace() {
  static const alloclab::ResolvedTrace resolved = [] {
    alloclab::SyntheticOptions options;
    options.shape = alloclab::SyntheticShape::transformer;
    options.min_events = 10'000'000;
    return alloclab::resolve(alloclab::generate_synthetic(options));
  }();
  return resolved;
}

const char* const specs[] = {"passthrough", "exact",        "fifo-shrink:max=64MiB",
                             "best-fit",    "per-run-pool", "pytorch"};

void BM_Replay(benchmark::State& state) {
  const char* spec = specs[state.range(0)];
  state.SetLabel(spec);
  const alloclab::ResolvedTrace& t = trace();
  double hit_rate = 0;
  for (auto _ : state) {
    const alloclab::ReplayOutcome out = alloclab::replay_sim(t, spec);
    hit_rate = out.result.metrics.hit_rate();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * t.ops.size()));
  state.counters["hit_rate"] = hit_rate;
}
// A replay runs on one thread: its CPU time is the time it ran, where wall time on a shared
// machine also counts the time other processes had the core. items_per_second follows CPU time.
BENCHMARK(BM_Replay)->DenseRange(0, 5)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
