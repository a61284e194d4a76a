// Site aggregation (`alloclab sites`) on a 10M-event synthetic transformer trace whose
// allocations carry 4000 distinct 16-frame stacks and some leaks: the tally of six strategies on
// two threads, next to the same six replays without it. Run: build-release/bin/sites_bench
// (docs/performance.md).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "alloclab/replay/sites.hpp"
#include "tests/replay/sites_workload.hpp"

namespace {

struct Input {
  alloclab::Trace trace;
  alloclab::ResolvedTrace resolved;
};

const Input& input() {
  static const Input in = [] {
    alloclab::test::StackedOptions options;
    options.stacks = 4000;
    options.depth = 16;
    Input made{alloclab::test::stacked_workload(10'000'000, options), {}};
    made.resolved = alloclab::resolve(made.trace);
    return made;
  }();
  return in;
}

const std::vector<std::string> specs = {"passthrough", "exact",        "fifo-shrink:max=64MiB",
                                        "best-fit",    "per-run-pool", "pytorch"};

// Wall time: both threads work, so CPU time would count them twice.
void BM_TallySites(benchmark::State& state) {
  const Input& in = input();
  for (auto _ : state) {
    const alloclab::SitesResult r =
        alloclab::tally_sites(in.trace, in.resolved, specs, alloclab::SitesAt{}, {}, 2);
    benchmark::DoNotOptimize(r.stacks.data());
  }
  state.counters["events"] = static_cast<double>(in.trace.size());
  state.counters["stacks"] = static_cast<double>(in.trace.stacks().size());
}
BENCHMARK(BM_TallySites)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_ReplaySpecs(benchmark::State& state) {
  const Input& in = input();
  for (auto _ : state) {
    const alloclab::ReplaySetOutcome r = alloclab::replay_specs(in.resolved, specs, {}, 2);
    benchmark::DoNotOptimize(r.results.data());
  }
}
BENCHMARK(BM_ReplaySpecs)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
