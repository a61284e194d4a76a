// Throughput on a large PyTorch memory snapshot: reading the pickle torch.cuda.memory
// ._dump_snapshot() writes (events/s and MB/s), and replaying it under the `pytorch` model with
// its default settings and with each setting users change (events/s). The snapshot is the
// transformer-shaped synthetic trace (sizes change from run to run, so the model both splits
// cached segments and asks for new ones) written as a protocol-2 pickle in PyTorch's shape:
// alloc / free_completed entries with shared frames lists.
//   build-release/bin/snapshot_bench [google-benchmark flags]
//   ALLOCLAB_SNAPSHOT_EVENTS=N   entries in the snapshot (default 4,000,000)
// docs/performance.md holds the measurements.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <unordered_map>

#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "tests/format/interchange/pickle_writer.hpp"

namespace {

std::uint64_t wanted_events() {
  const char* text = std::getenv("ALLOCLAB_SNAPSHOT_EVENTS");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 4'000'000;
}

// The synthetic trace's allocations and frees as snapshot entries on cuda:0 (run markers are
// not in a snapshot's history). Each entry is a dict the pickler memoizes once, as Python does.
std::string snapshot_pickle() {
  alloclab::SyntheticOptions options;
  options.shape = alloclab::SyntheticShape::transformer;
  options.min_events = wanted_events();
  const alloclab::Trace trace = alloclab::generate_synthetic(options);

  alloclab::test::Protocol2Writer w;
  const char* const files[] = {"/work/model.py", "/work/train.py", "torch/nn/modules/module.py"};
  const char* const names[] = {"forward", "backward", "_call_impl", "step"};
  const auto frame = [&](int j) {
    w.frame("frame " + std::to_string(j), files[j % 3], 10 + j, names[j % 4]);
  };
  // An allocation and its free share one frames list, as in PyTorch.
  const auto traceback = [&](int t) {
    w.frames("traceback " + std::to_string(t), 4, [&](int k) { frame((t + k) % 12); });
  };
  std::unordered_map<std::uint64_t, std::uint64_t> live_size;
  const auto entry = [&](const char* action, std::uint64_t address, std::uint64_t size,
                         std::uint64_t time_ns) {
    w.op('}');
    w.put_once();
    w.op('(');
    w.text("action");
    w.text(action);
    w.text("addr");
    w.integer(static_cast<std::int64_t>(address));
    w.text("size");
    w.integer(static_cast<std::int64_t>(size));
    w.text("stream");
    w.integer(0);
    w.text("time_us");
    w.integer(static_cast<std::int64_t>(time_ns / 1000));
    w.text("frames");
    traceback(static_cast<int>((address >> 8) % 16));
    w.op('u');
  };

  w.begin_history();
  std::size_t in_batch = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const alloclab::Op op = trace.op(i);
    if (op != alloclab::Op::alloc && op != alloclab::Op::free) continue;
    if (in_batch == 0) w.op('(');  // Python's pickler appends in batches of 1000
    const alloclab::Event e = trace.event(i);
    if (op == alloclab::Op::alloc) {
      live_size[e.address] = e.size;
      entry("alloc", e.address, e.size, e.time_ns);
    } else {
      const auto it = live_size.find(e.address);
      entry("free_completed", e.address, it == live_size.end() ? 0 : it->second, e.time_ns);
      if (it != live_size.end()) live_size.erase(it);
    }
    if (++in_batch == 1000) {
      w.op('e');
      in_batch = 0;
    }
  }
  if (in_batch != 0) w.op('e');
  w.end_history();
  w.text("PYTORCH_CUDA_ALLOC_CONF");
  w.text("");
  w.end_snapshot();
  return std::move(w.bytes());
}

const std::string& pickle() {
  static const std::string bytes = snapshot_pickle();
  return bytes;
}

const alloclab::ResolvedTrace& resolved() {
  static const alloclab::ResolvedTrace trace =
      alloclab::resolve(alloclab::parse_torch_snapshot_pickle(pickle(), "snapshot.pickle"));
  return trace;
}

void BM_ReadSnapshotPickle(benchmark::State& state) {
  const std::string& bytes = pickle();
  std::size_t events = 0;
  for (auto _ : state) {
    const alloclab::Trace trace = alloclab::parse_torch_snapshot_pickle(bytes, "snapshot.pickle");
    events = trace.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_ReadSnapshotPickle)->Unit(benchmark::kMillisecond)->UseRealTime();

const char* const specs[] = {
    "pytorch",
    "pytorch:max_split_size=64MiB",
    "pytorch:roundup_power2_divisions=4",
    "pytorch-conf:\"garbage_collection_threshold:0.6\",per_process_memory_fraction=0.9,"
    "device_memory=80GiB",
    "pytorch-conf:\"expandable_segments:True\"",
};

void BM_ReplaySnapshot(benchmark::State& state) {
  const char* spec = specs[state.range(0)];
  state.SetLabel(spec);
  const alloclab::ResolvedTrace& trace = resolved();
  double hit_rate = 0;
  for (auto _ : state) {
    const alloclab::ReplayOutcome out = alloclab::replay_sim(trace, spec);
    hit_rate = out.result.metrics.hit_rate();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace.ops.size()));
  state.counters["hit_rate"] = hit_rate;
}
// A replay runs on one thread: its CPU time is the time it ran, where wall time on a shared
// machine also counts the time other processes had the core. items_per_second follows CPU time.
BENCHMARK(BM_ReplaySnapshot)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
