// Decode + resolve throughput of the native format on a synthetic trace shaped like a CNN
// inference workload. Run: build-release/bin/trace_decode_bench (docs/performance.md).
// With ALLOCLAB_BENCH_TRACE=FILE.alt, BM_EncodeTraceFile also encodes that trace as the
// recorder's writer thread does when events arrive fast (zstd level 1).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/synthetic.hpp"

namespace {

struct Fixture {
  std::string path;
  std::size_t events = 0;
  alloclab::Trace trace;

  Fixture() {
    alloclab::SyntheticOptions options;
    options.shape = alloclab::SyntheticShape::cnn;
    options.min_events = 4'000'000;
    trace = alloclab::generate_synthetic(options);
    events = trace.size();
    path = (std::filesystem::temp_directory_path() /
            ("alloclab-bench-" + std::to_string(::getpid()) + ".alt"))
               .string();
    alloclab::write_alt(trace, path);
  }
  ~Fixture() { std::filesystem::remove(path); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_DecodeAlt(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    alloclab::Trace t = alloclab::read_alt(f.path);
    benchmark::DoNotOptimize(t.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * f.events));
  state.counters["bytes_per_event"] =
      static_cast<double>(std::filesystem::file_size(f.path)) / static_cast<double>(f.events);
}
BENCHMARK(BM_DecodeAlt)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Resolve(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    alloclab::ResolvedTrace r = alloclab::resolve(f.trace);
    benchmark::DoNotOptimize(r.ops.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * f.events));
}
BENCHMARK(BM_Resolve)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DecodeAndResolve(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    alloclab::ResolvedTrace r = alloclab::resolve(alloclab::read_alt(f.path));
    benchmark::DoNotOptimize(r.ops.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * f.events));
}
BENCHMARK(BM_DecodeAndResolve)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EncodeAlt(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) alloclab::write_alt(f.trace, f.path + ".out");
  std::filesystem::remove(f.path + ".out");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * f.events));
}
BENCHMARK(BM_EncodeAlt)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EncodeTraceFile(benchmark::State& state) {
  const char* input = std::getenv("ALLOCLAB_BENCH_TRACE");
  if (!input || !*input) {
    state.SkipWithError("set ALLOCLAB_BENCH_TRACE to an .alt file");
    return;
  }
  static const alloclab::Trace trace = alloclab::read_alt(input);
  const std::string output = (std::filesystem::temp_directory_path() /
                              ("alloclab-bench-" + std::to_string(::getpid()) + "-file.alt"))
                                 .string();
  alloclab::AltWriteOptions options;
  options.zstd_level = 1;
  for (auto _ : state) alloclab::write_alt(trace, output, options);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace.size()));
  state.counters["bytes_per_event"] =
      static_cast<double>(std::filesystem::file_size(output)) / static_cast<double>(trace.size());
  std::filesystem::remove(output);
}
BENCHMARK(BM_EncodeTraceFile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
