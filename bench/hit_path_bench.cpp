// The hit path on real memory: a cached allocate + free of each strategy over host-malloc, next
// to the allocators themselves (glibc malloc, mmap, jemalloc and mimalloc when installed) for the
// same sizes, with and without writing every 4 KiB page. Goal (issue 5): a cached pair <= 50 ns
// and >= 100x faster than malloc + first touch for blocks >= 1 MiB.
// Run: build-release/bin/hit_path_bench (docs/performance.md, "Hit path").
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "alloclab/replay/timing.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/registry.hpp"

namespace {

const char* const specs[] = {"exact", "best-fit", "fifo-shrink:max=1GiB", "per-run-pool",
                             "pytorch"};
const char* const upstreams[] = {"host-malloc", "host-mmap", "host-jemalloc", "host-mimalloc"};

// Args: strategy index, size, touch (0/1).
void BM_CachedHit(benchmark::State& state) {
  const char* spec = specs[state.range(0)];
  const auto size = static_cast<std::uint64_t>(state.range(1));
  const bool touch = state.range(2) != 0;
  state.SetLabel(std::string(spec) + " over host-malloc" + (touch ? ", touched" : ""));
  const std::unique_ptr<alloclab::Upstream> upstream = alloclab::make_upstream("host-malloc");
  const std::unique_ptr<alloclab::Strategy> strategy = alloclab::make_strategy(spec, *upstream);
  strategy->begin_run();  // per-run-pool caches inside a run only
  const std::optional<alloclab::Block> first = strategy->allocate(size, 0);  // the one miss
  if (!first) {
    state.SkipWithError("allocation failed");
    return;
  }
  alloclab::touch_pages(first->address, size);
  strategy->deallocate(*first);
  for (auto _ : state) {
    const std::optional<alloclab::Block> block = strategy->allocate(size, 0);
    benchmark::DoNotOptimize(block);
    if (touch) alloclab::touch_pages(block->address, size);
    strategy->deallocate(*block);
  }
  strategy->end_run();
  strategy->release();
}

// Args: upstream index, size, touch (0/1).
void BM_Upstream(benchmark::State& state) {
  const char* name = upstreams[state.range(0)];
  const auto size = static_cast<std::uint64_t>(state.range(1));
  const bool touch = state.range(2) != 0;
  state.SetLabel(std::string(name) + (touch ? " + touch every page" : ""));
  std::unique_ptr<alloclab::Upstream> upstream;
  try {
    upstream = alloclab::make_upstream(name);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    const std::optional<alloclab::Block> block = upstream->allocate(size);
    benchmark::DoNotOptimize(block);
    if (touch) alloclab::touch_pages(block->address, size);
    upstream->deallocate(*block);
  }
}

void sizes(benchmark::internal::Benchmark* b, int first_arg_count) {
  for (int touch : {0, 1})
    for (int i = 0; i < first_arg_count; ++i)
      for (std::int64_t size : {4 << 10, 64 << 10, 1 << 20, 16 << 20}) b->Args({i, size, touch});
}

BENCHMARK(BM_CachedHit)
    ->Apply([](benchmark::internal::Benchmark* b) { sizes(b, 5); })
    ->MinTime(0.1);
BENCHMARK(BM_Upstream)->Apply([](benchmark::internal::Benchmark* b) { sizes(b, 4); })->MinTime(0.1);

}  // namespace

BENCHMARK_MAIN();
