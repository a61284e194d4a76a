// A replay that starts from the state a PyTorch snapshot recorded (ResolvedTrace::start_state):
// the `pytorch` model adopts the recorded segments, every other strategy allocates the blocks
// live at the first entry, and nothing of that is counted.
//
// The main check holds the model against a recording of itself: the model serves a long random
// workload over an upstream that logs its segment calls, as PyTorch logs segment_alloc and
// segment_free; its history loses its oldest entries, as a full ring buffer does; and the replay
// of what is left, started from the state the snapshot implies, must make every recorded call.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "alloclab/format/start_state.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/pytorch.hpp"
#include "alloclab/strategies/upstream/sim.hpp"
#include "tests/watchdog.hpp"

namespace alloclab {
namespace {

using nlohmann::json;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// The simulated upstream, logging what the model asks of it as PyTorch logs cudaMalloc/cudaFree.
class LoggingUpstream final : public Upstream {
 public:
  LoggingUpstream(json& history, std::uint64_t& time) : history_(history), time_(time) {}
  // PyTorch records a segment's calls with the stream of the request that made it.
  std::uint64_t request_stream = 0;
  std::optional<Block> allocate(std::uint64_t bytes) override {
    const std::optional<Block> block = sim_.allocate(bytes);
    if (block) {
      log("segment_alloc", block->address, bytes, request_stream);
      stream_of_[block->address] = request_stream;
    }
    return block;
  }
  void deallocate(const Block& block) override {
    log("segment_free", block.address, block.capacity, stream_of_.at(block.address));
    stream_of_.erase(block.address);
    sim_.deallocate(block);
  }
  void log(const char* action, std::uint64_t address, std::uint64_t size,
           std::uint64_t stream = 0) {
    history_.push_back({{"action", action},
                        {"addr", address},
                        {"size", size},
                        {"stream", stream},
                        {"time_us", ++time_}});
  }

 private:
  SimUpstream sim_{SimUpstreamOptions{}};
  std::map<std::uint64_t, std::uint64_t> stream_of_;
  json& history_;
  std::uint64_t& time_;
};

struct Recording {
  json snapshot;
  std::uint64_t entries = 0;
};

// `ops` random requests and frees on two streams, sizes from both pools and from all three
// segment sizes, with an empty_cache now and then; the snapshot keeps the last `kept` entries.
Recording record_model(std::size_t ops, std::size_t kept, std::uint32_t seed) {
  json history = json::array();
  std::uint64_t time = 0;
  LoggingUpstream upstream(history, time);
  PyTorchCachingStrategy model(upstream, PyTorchOptions{});
  std::mt19937_64 rng(seed);
  struct Live {
    Block block;
    std::uint64_t requested, stream;
  };
  std::vector<Live> live;
  std::map<std::uint64_t, std::uint64_t> requested_at;
  const auto size = [&]() -> std::uint64_t {
    switch (rng() % 4) {
      case 0:
        return 1 + rng() % (256 * 1024);  // small pool
      case 1:
        return kMiB + 1 + rng() % (9 * kMiB);  // 20 MiB segments
      case 2:
        return 10 * kMiB + rng() % (60 * kMiB);  // segments of their own size
      default:
        return 512 * (1 + rng() % 64);
    }
  };
  for (std::size_t k = 0; k < ops; ++k) {
    const std::uint64_t roll = rng() % 100;
    if (roll == 0) {
      model.release();  // the program's torch.cuda.empty_cache()
    } else if (!live.empty() && (roll < 45 || live.size() > 200)) {
      const std::size_t i = rng() % live.size();
      upstream.log("free_completed", live[i].block.address, live[i].requested, live[i].stream);
      model.deallocate(live[i].block);
      requested_at.erase(live[i].block.address);
      live[i] = live.back();
      live.pop_back();
    } else {
      const std::uint64_t bytes = size();
      const std::uint64_t stream = rng() % 2 == 0 ? 0 : 0x5555;
      upstream.request_stream = stream;
      const std::optional<Block> block = model.allocate(bytes, stream);
      if (!block) throw std::logic_error("the simulated upstream has no limit");
      upstream.log("alloc", block->address, bytes, stream);
      live.push_back({*block, bytes, stream});
      requested_at[block->address] = bytes;
    }
  }
  json segments = json::array();
  for (const PyTorchSegmentInfo& seg : model.segments()) {
    json blocks = json::array();
    for (const PyTorchBlockInfo& b : seg.blocks)
      blocks.push_back({{"address", b.address},
                        {"size", b.size},
                        {"requested_size", b.allocated ? requested_at.at(b.address) : 0},
                        {"state", b.allocated ? "active_allocated" : "inactive"}});
    segments.push_back({{"device", 0},
                        {"address", seg.address},
                        {"total_size", seg.size},
                        {"stream", seg.stream},
                        {"segment_type", seg.small ? "small" : "large"},
                        {"segment_pool_id", {0, 0}},
                        {"is_expandable", false},
                        {"blocks", blocks}});
  }
  Recording out;
  out.entries = history.size();
  json tail = json::array();
  for (std::size_t i = history.size() > kept ? history.size() - kept : 0; i < history.size(); ++i)
    tail.push_back(history[i]);
  out.snapshot = {{"segments", segments}, {"device_traces", {tail}}};
  return out;
}

ReplayOutcome replay(const ResolvedTrace& trace, const std::string& spec,
                     std::optional<std::uint64_t> limit = std::nullopt) {
  ReplayOptions options;
  options.check_invariants = true;
  options.memory_limit = limit;
  return replay_sim(trace, spec, options);
}

TEST(StartState, the_model_started_from_a_cut_history_makes_every_recorded_segment_call) {
  const test::Watchdog watchdog(120, "a replay from a reconstructed state");
  for (const std::uint32_t seed : {7u, 8u, 9u}) {
    SCOPED_TRACE(seed);
    const Recording rec = record_model(60000, 40000, seed);
    ASSERT_GT(rec.entries, 60000u);
    const Trace trace = parse_torch_snapshot_json(rec.snapshot.dump(), "cut.json");
    const ResolvedTrace resolved = resolve(trace, "cut.json");
    ASSERT_TRUE(resolved.start_state);
    EXPECT_GT(resolved.start_state->segments.size(), 5u);
    EXPECT_GT(resolved.start_state->blocks.size(), 50u);
    EXPECT_TRUE(resolved.start_state->gaps.empty()) << resolved.start_state->gaps.front();
    EXPECT_EQ(resolved.anomalies.free_unknown, 0u);  // every free is of a known block

    const StrategyResult r = replay(resolved, "pytorch").result;
    ASSERT_TRUE(r.fidelity);
    EXPECT_TRUE(r.fidelity->all_matched()) << r.fidelity->first_divergence->what;
    EXPECT_GT(r.fidelity->recorded_allocs, 20u);
    EXPECT_EQ(r.fidelity->matched_allocs, r.fidelity->recorded_allocs);
    EXPECT_EQ(r.fidelity->matched_frees, r.fidelity->recorded_frees);
    EXPECT_GT(r.empty_cache_calls, 0u);
    // Nothing of the start state is counted: one request per recorded alloc.
    std::uint64_t allocs = 0;
    for (const json& e : rec.snapshot["device_traces"][0]) allocs += e["action"] == "alloc";
    EXPECT_EQ(r.metrics.requests, allocs);
    EXPECT_EQ(r.metrics.upstream_allocs, r.fidelity->recorded_allocs);

    // Started empty, the same replay parts from the recording: the state is what makes it match.
    Trace empty_start = trace;
    empty_start.metadata.erase(kStartStateKey);
    const StrategyResult cold = replay(resolve(empty_start), "pytorch").result;
    ASSERT_TRUE(cold.fidelity);
    EXPECT_FALSE(cold.fidelity->all_matched());
  }
}

TEST(StartState, other_strategies_start_holding_the_live_blocks_and_count_none_of_them) {
  const Recording rec = record_model(3000, 1500, 11);
  const ResolvedTrace resolved = resolve(parse_torch_snapshot_json(rec.snapshot.dump(), "s.json"));
  ASSERT_TRUE(resolved.start_state);
  std::uint64_t start_bytes = 0;
  for (const StartBlock& b : resolved.start_state->blocks) start_bytes += b.requested;
  std::uint64_t allocs = 0;
  for (const json& e : rec.snapshot["device_traces"][0]) allocs += e["action"] == "alloc";
  for (const char* spec : {"exact", "best-fit", "passthrough", "pytorch"}) {
    SCOPED_TRACE(spec);
    const StrategyResult r = replay(resolved, spec).result;
    EXPECT_EQ(r.metrics.requests, allocs);
    EXPECT_GE(r.metrics.peak_live_bytes, start_bytes);
    EXPECT_GE(r.metrics.peak_reserved_bytes, r.metrics.peak_live_bytes);
  }
  // Peak live bytes are the program's, the same for every strategy.
  EXPECT_EQ(replay(resolved, "exact").result.metrics.peak_live_bytes,
            replay(resolved, "pytorch").result.metrics.peak_live_bytes);
  // passthrough frees each block it is given back: every start block freed is one upstream free.
  const StrategyResult pass = replay(resolved, "passthrough").result;
  EXPECT_EQ(pass.metrics.upstream_allocs, allocs);
}

TEST(StartState, a_limit_below_the_recorded_state_is_refused_with_a_clear_message) {
  const Recording rec = record_model(3000, 1500, 3);
  const ResolvedTrace resolved = resolve(parse_torch_snapshot_json(rec.snapshot.dump(), "s.json"));
  ASSERT_TRUE(resolved.start_state);
  ASSERT_GT(resolved.start_state->segment_bytes(), 4 * kMiB);
  try {
    replay(resolved, "pytorch", 2 * kMiB);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("recorded allocator state"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--memory-limit 2097152"), std::string::npos) << e.what();
  }
  try {
    replay(resolved, "pytorch:per_process_memory_fraction=0.5,device_memory=4MiB");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("its own limit (per_process_memory_fraction)"),
              std::string::npos)
        << e.what();
  }
}

TEST(StartState, the_model_lays_out_adopted_segments_as_recorded) {
  SimUpstream upstream{SimUpstreamOptions{}};
  PyTorchCachingStrategy model(upstream, PyTorchOptions{});
  // A 20 MiB segment: a 3 MiB block at 0 (size known) and a 4 MB request at 8 MiB (size not
  // known: rounded to 512 B and split off, as 12 MiB are left); a 2 MiB small segment with a
  // 1000 B request (1024 B, split off); a 30 MiB request in no known segment.
  const std::vector<HeldSegment> held = {
      {20 * kMiB, 0, false, {{0, 3 * kMiB - 100, 3 * kMiB}, {8 * kMiB, 4000000, std::nullopt}}},
      {2 * kMiB, 0, true, {{0, 1000, std::nullopt}}},
      {0, 7, std::nullopt, {{0, 30 * kMiB, std::nullopt}}}};
  const std::optional<std::vector<Block>> blocks = model.adopt(held);
  ASSERT_TRUE(blocks);
  ASSERT_EQ(blocks->size(), 4u);
  EXPECT_EQ((*blocks)[0].capacity, 3 * kMiB);
  EXPECT_EQ((*blocks)[1].capacity, 4000256u);
  EXPECT_EQ((*blocks)[1].address, (*blocks)[0].address + 8 * kMiB);
  EXPECT_EQ((*blocks)[2].capacity, 1024u);
  EXPECT_EQ((*blocks)[3].capacity, 30 * kMiB);  // a segment of its own, sized as PyTorch would
  EXPECT_EQ(model.reserved_bytes(), 52 * kMiB);
  EXPECT_EQ(model.allocated_bytes(), 3 * kMiB + 4000256 + 1024 + 30 * kMiB);
  EXPECT_EQ(model.stats().requests, 0u);
  const std::vector<PyTorchSegmentInfo> segments = model.segments();
  ASSERT_EQ(segments.size(), 3u);
  ASSERT_EQ(segments[0].blocks.size(), 4u);  // 3 MiB | free 5 MiB | 4000256 | free rest
  EXPECT_FALSE(segments[0].blocks[1].allocated);
  EXPECT_EQ(segments[0].blocks[1].size, 5 * kMiB);
  // The cached 5 MiB gap serves a request, as a recorded free piece would.
  const std::optional<Block> hit = model.allocate(5 * kMiB, 0);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->address, (*blocks)[0].address + 3 * kMiB);
  EXPECT_EQ(model.stats().hits, 1u);
  // Freeing every adopted block leaves whole free segments, which release() returns.
  model.deallocate(*hit);
  for (const Block& b : *blocks) model.deallocate(b);
  model.release();
  EXPECT_EQ(model.reserved_bytes(), 0u);
}

TEST(StartState, adoption_within_a_memory_fraction_fails_past_it) {
  SimUpstream upstream{SimUpstreamOptions{}};
  PyTorchOptions options;
  options.per_process_memory_fraction = Ratio{1, 2};
  options.device_memory = 40 * kMiB;
  PyTorchCachingStrategy model(upstream, options);
  EXPECT_FALSE(model.adopt({{20 * kMiB, 0, false, {}}, {22 * kMiB, 0, false, {}}}));
}

}  // namespace
}  // namespace alloclab
