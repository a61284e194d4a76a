// Property tests on thousands of random operation sequences (seeded std::mt19937_64):
// - every strategy: hits + misses = requests; upstream reserved >= live requested bytes and
//   == live capacities + cached bytes after every op; no block handed out twice while live (no
//   overlapping live address ranges); a block is at least the rounded request;
// - every caching strategy matches a slow reference model written straight from
//   docs/strategy-contract.md (linear scans over a list of cached blocks), block for block and
//   counter for counter;
// - fifo-shrink without limits equals exact (match=best-fit: best-fit); best-fit:max_ratio=1
//   equals exact; passthrough never caches.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab/strategies/fifo_shrink.hpp"
#include "alloclab/strategies/registry.hpp"
#include "strategy_test_support.hpp"
#include "tests/real_size.hpp"

namespace alloclab {
namespace {

__extension__ typedef unsigned __int128 U128;
constexpr std::uint64_t kNone = UINT64_MAX;

// ---- random operation sequences --------------------------------------------------------------

struct Op {
  enum Kind { alloc, free, run_begin, run_end } kind;
  std::uint64_t value;  // alloc: size; free: id (= index of the alloc op among allocs)
};

// `odd_sizes_in_10`: how many allocs in 10 take a random size rather than a popular one.
std::vector<Op> random_ops(std::uint64_t seed, int count, std::uint64_t odd_sizes_in_10 = 2) {
  std::mt19937_64 rng(seed);
  // A few popular sizes (so blocks get reused), varied per seed, plus the odd random size.
  std::vector<std::uint64_t> popular;
  const int n_popular = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < n_popular; ++i) popular.push_back(rng() % 2000);
  const std::uint64_t free_weight = 30 + rng() % 40;  // out of 100
  std::vector<Op> ops;
  std::vector<std::uint64_t> live;
  std::uint64_t next_id = 0;
  for (int i = 0; i < count; ++i) {
    const std::uint64_t roll = rng() % 100;
    if (roll < 4) {
      ops.push_back({rng() % 2 ? Op::run_begin : Op::run_end, 0});
    } else if (roll < 4 + free_weight && !live.empty()) {
      const std::size_t pick = rng() % live.size();
      ops.push_back({Op::free, live[pick]});
      live[pick] = live.back();
      live.pop_back();
    } else {
      const std::uint64_t size =
          rng() % 10 >= odd_sizes_in_10 ? popular[rng() % popular.size()] : rng() % 5000;
      ops.push_back({Op::alloc, size});
      live.push_back(next_id++);
    }
  }
  return ops;
}

// ---- the reference model ---------------------------------------------------------------------

// docs/strategy-contract.md read literally, with linear scans. Slow and obviously right.
struct ReferenceConfig {
  enum Kind { exact, best_fit, fifo_shrink, per_run_pool } kind = exact;
  std::uint64_t round = 1;
  std::uint64_t ratio_num = 0;  // 0: no max_ratio
  std::uint64_t ratio_den = 1;
  std::uint64_t max = kNone;
  std::uint64_t max_items = kNone;
  bool best_fit_match = false;  // fifo-shrink's match=best-fit
  std::uint64_t min_size = 0;
};

class ReferenceModel final : public Strategy {
 public:
  ReferenceModel(Upstream& upstream, ReferenceConfig config) : up_(upstream), c_(config) {}

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t) override {
    ++stats_.requests;
    const std::uint64_t r = (size + c_.round - 1) / c_.round * c_.round;  // sizes are small here
    std::optional<std::size_t> pick;
    if (c_.kind == ReferenceConfig::exact) {
      for (std::size_t i = 0; i < cache_.size(); ++i) {
        if (cache_[i].capacity == r) pick = i;  // the last one: most recently freed
      }
    } else if (c_.kind == ReferenceConfig::best_fit ||
               (c_.kind == ReferenceConfig::fifo_shrink && c_.best_fit_match)) {
      for (std::size_t i = 0; i < cache_.size(); ++i) {
        const std::uint64_t cap = cache_[i].capacity;
        if (cap < r || !within_ratio(cap, r)) continue;
        if (!pick || cap <= cache_[*pick].capacity) pick = i;  // smallest; ties: newest
      }
    } else if (c_.kind == ReferenceConfig::fifo_shrink) {
      for (std::size_t i = 0; i < cache_.size(); ++i) {
        if (cache_[i].capacity == r) pick = i;
      }
    } else if (in_run_ && r >= c_.min_size) {  // per-run-pool
      for (std::size_t i = 0; i < cache_.size(); ++i) {
        const std::uint64_t cap = cache_[i].capacity;
        if (cap >= r && (!pick || cap < cache_[*pick].capacity)) pick = i;  // ties: earliest
      }
    }
    if (pick) {
      const Block b = cache_[*pick];
      cache_.erase(cache_.begin() + static_cast<std::ptrdiff_t>(*pick));
      ++stats_.hits;
      stats_.slack_bytes += b.capacity - r;
      stats_.cached_bytes -= b.capacity;
      if (c_.kind == ReferenceConfig::fifo_shrink) ++ignore_[b.capacity];
      return b;
    }
    if (auto b = up_.allocate(r)) return b;
    const std::uint64_t released = cache_.size();
    while (!cache_.empty()) evict_at(0);
    queue_.clear();
    ignore_.clear();
    if (released > 0) {
      if (auto b = up_.allocate(r)) return b;
    }
    ++stats_.failed;
    return std::nullopt;
  }

  void deallocate(const Block& b) override {
    if (c_.kind == ReferenceConfig::per_run_pool && (!in_run_ || b.capacity < c_.min_size)) {
      up_.deallocate(b);
      return;
    }
    cache_.push_back(b);
    stats_.cached_bytes += b.capacity;
    if (c_.kind != ReferenceConfig::fifo_shrink) return;
    queue_.push_back(b.capacity);
    // shrink, as written in docs/strategy-contract.md
    if (stats_.cached_bytes < c_.max && cache_.size() < c_.max_items) return;
    while (stats_.cached_bytes > c_.max || cache_.size() > c_.max_items) {
      const std::uint64_t k = queue_.front();
      queue_.pop_front();
      if (ignore_[k] > 0) {
        --ignore_[k];
        continue;
      }
      std::optional<std::size_t> newest;
      for (std::size_t i = 0; i < cache_.size(); ++i) {
        if (cache_[i].capacity == k) newest = i;
      }
      evict_at(newest.value());
    }
  }

  void begin_run() override {
    if (in_run_) end_run();
    in_run_ = true;
  }
  void end_run() override {
    if (c_.kind != ReferenceConfig::per_run_pool || !in_run_) return;
    while (!cache_.empty()) evict_at(0);
    in_run_ = false;
  }
  void release() override {
    for (const Block& b : cache_) up_.deallocate(b);
    cache_.clear();
    stats_.cached_bytes = 0;
  }
  const StrategyStats& stats() const override { return stats_; }

 private:
  bool within_ratio(std::uint64_t cap, std::uint64_t r) const {
    return c_.ratio_num == 0 || U128{cap} * c_.ratio_den <= U128{r} * c_.ratio_num;
  }
  void evict_at(std::size_t i) {
    const Block b = cache_[i];
    cache_.erase(cache_.begin() + static_cast<std::ptrdiff_t>(i));
    stats_.cached_bytes -= b.capacity;
    ++stats_.evictions;
    up_.deallocate(b);
  }

  Upstream& up_;
  ReferenceConfig c_;
  StrategyStats stats_;
  std::vector<Block> cache_;  // in the order blocks were freed into the cache
  std::deque<std::uint64_t> queue_;
  std::map<std::uint64_t, std::uint64_t> ignore_;
  bool in_run_ = false;
};

// ---- the replay driver -----------------------------------------------------------------------

// Replays `ops` against one strategy stack, checking the per-op properties, and records every
// block handed out (for block-by-block comparisons).
struct Replay {
  std::vector<std::optional<Block>> handed_out;
  StrategyStats stats;
  UpstreamCounters upstream;
  std::uint64_t frees = 0;
};

std::uint64_t rounded(std::uint64_t size, std::uint64_t round) {
  return (size + round - 1) / round * round;
}

// (ASSERT_* needs a void function, hence the out-parameter.)
void replay_into(const std::vector<Op>& ops, testing::Stack& s, std::uint64_t round,
                 const std::string& label, Replay& out) {
  std::vector<Block> blocks;                           // by id
  std::vector<std::uint64_t> requested;                // by id
  std::vector<bool> ok;                                // by id: the alloc succeeded
  std::map<std::uint64_t, std::uint64_t> live_ranges;  // address -> end
  std::uint64_t live_requested = 0;
  std::uint64_t live_capacity = 0;
  auto* fifo = dynamic_cast<FifoShrinkStrategy*>(s.strategy.get());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    // Streamed into a failure message only when an assertion fails.
    auto where = [&] { return label + ", op " + std::to_string(i); };
    switch (op.kind) {
      case Op::alloc: {
        const std::optional<Block> b = s.strategy->allocate(op.value, 0);
        out.handed_out.push_back(b);
        blocks.push_back(b.value_or(Block{}));
        requested.push_back(op.value);
        ok.push_back(b.has_value());
        if (!b) break;
        ASSERT_GE(b->capacity, rounded(op.value, round)) << where();
        const std::uint64_t end = b->address + std::max<std::uint64_t>(b->capacity, 1);
        auto next = live_ranges.lower_bound(b->address);
        ASSERT_TRUE(next == live_ranges.end() || next->first >= end)
            << "overlaps a live block, " << where();
        if (next != live_ranges.begin()) {
          ASSERT_LE(std::prev(next)->second, b->address) << "overlaps a live block, " << where();
        }
        live_ranges.emplace(b->address, end);
        live_requested += op.value;
        live_capacity += b->capacity;
        break;
      }
      case Op::free: {
        if (!ok[op.value]) break;  // its alloc failed: nothing to free
        const Block b = blocks[op.value];
        live_ranges.erase(b.address);
        live_requested -= requested[op.value];
        live_capacity -= b.capacity;
        s.free(b);
        ++out.frees;
        break;
      }
      case Op::run_begin:
        s.strategy->begin_run();
        break;
      case Op::run_end:
        s.strategy->end_run();
        break;
    }
    const StrategyStats& st = s.stats();
    const UpstreamCounters& up = s.upstream();
    ASSERT_GE(up.reserved_bytes, live_requested) << where();
    ASSERT_EQ(up.reserved_bytes, live_capacity + st.cached_bytes) << where();
    ASSERT_EQ(up.reserved_bytes, s.sim.reserved_bytes()) << where();
    ASSERT_LE(st.hits + st.failed, st.requests) << where();
    // Every miss that did not fail got exactly one block from the upstream, hits got none.
    ASSERT_EQ(up.allocs, st.requests - st.hits - st.failed) << where();
    // compact_queue() keeps the drop queue within 9 entries per cached block plus its slack.
    if (fifo) {
      ASSERT_LE(fifo->queue_length(), 9 * fifo->cached_blocks() + 1025) << where();
    }
    if (fifo && (i % 16 == 0 || i + 1 == ops.size())) {
      try {
        fifo->check_invariants();
      } catch (const std::logic_error& e) {
        FAIL() << e.what() << ", " << where();
      }
    }
  }
  out.stats = s.stats();
  out.upstream = s.upstream();
  s.strategy->release();
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.upstream().reserved_bytes, live_capacity);
}

Replay replay(const std::vector<Op>& ops, testing::Stack& s, std::uint64_t round,
              const std::string& label) {
  Replay out;
  replay_into(ops, s, round, label, out);
  return out;
}

void expect_same(const Replay& a, const Replay& b, const std::string& label) {
  SCOPED_TRACE(label);
  ASSERT_EQ(a.handed_out.size(), b.handed_out.size());
  for (std::size_t i = 0; i < a.handed_out.size(); ++i) {
    ASSERT_EQ(a.handed_out[i], b.handed_out[i]) << "alloc #" << i;
  }
  EXPECT_EQ(a.stats.requests, b.stats.requests);
  EXPECT_EQ(a.stats.hits, b.stats.hits);
  EXPECT_EQ(a.stats.failed, b.stats.failed);
  EXPECT_EQ(a.stats.evictions, b.stats.evictions);
  EXPECT_EQ(a.stats.slack_bytes, b.stats.slack_bytes);
  EXPECT_EQ(a.stats.cached_bytes, b.stats.cached_bytes);
  EXPECT_EQ(a.upstream.allocs, b.upstream.allocs);
  EXPECT_EQ(a.upstream.frees, b.upstream.frees);
  EXPECT_EQ(a.upstream.failed, b.upstream.failed);
  EXPECT_EQ(a.upstream.reserved_bytes, b.upstream.reserved_bytes);
}

constexpr int kSequences = static_cast<int>(test::real_size(1000));
constexpr int kOpsPerSequence = 200;

SimUpstreamOptions sim_options(std::uint64_t seed) {
  SimUpstreamOptions options;
  // One sequence in four runs out of upstream memory now and then.
  if (seed % 4 == 3) options.limit_bytes = 20000 + seed % 7 * 5000;
  return options;
}

// ---- the properties --------------------------------------------------------------------------

struct ModelCase {
  std::string spec;
  ReferenceConfig config;
};

std::vector<ModelCase> model_cases() {
  using K = ReferenceConfig;
  std::vector<ModelCase> cases;
  auto add = [&](std::string spec, ReferenceConfig c) { cases.push_back({std::move(spec), c}); };
  ReferenceConfig c;
  c.kind = K::exact;
  add("exact", c);
  c.round = 64;
  add("exact:round=64", c);
  c = {};
  c.kind = K::best_fit;
  add("best-fit", c);
  c.ratio_num = 15;
  c.ratio_den = 10;
  add("best-fit:max_ratio=1.5", c);
  c.round = 100;
  add("best-fit:max_ratio=1.5,round=100", c);
  c = {};
  c.kind = K::fifo_shrink;
  c.max = 6000;
  add("fifo-shrink:max=6000", c);
  c.max = 3000;
  c.max_items = 4;
  add("fifo-shrink:max=3000,max_items=4", c);
  c.max = kNone;
  c.max_items = 1;
  c.round = 256;
  add("fifo-shrink:max_items=1,round=256", c);
  c = {};
  c.kind = K::fifo_shrink;
  c.max = 0;
  add("fifo-shrink:max=0", c);
  c.max = 1500;
  add("dfdx-limit:max=1500", c);
  c.best_fit_match = true;
  add("fifo-shrink:max=1500,match=best-fit", c);
  c.ratio_num = 2;
  c.max_items = 5;
  add("fifo-shrink:max=1500,max_items=5,match=best-fit,max_ratio=2", c);
  c = {};
  c.kind = K::per_run_pool;
  add("per-run-pool", c);
  c.min_size = 128;
  add("rten", c);
  c.round = 32;
  c.min_size = 700;
  add("per-run-pool:round=32,min_size=700", c);
  return cases;
}

TEST(Properties, every_strategy_matches_the_reference_model) {
  const std::vector<ModelCase> cases = model_cases();
  for (std::uint64_t seed = 0; seed < kSequences; ++seed) {
    const std::vector<Op> ops = random_ops(seed, kOpsPerSequence);
    for (const ModelCase& mc : cases) {
      const std::string label = mc.spec + " seed " + std::to_string(seed);
      testing::Stack real(mc.spec, sim_options(seed));
      testing::Stack model(sim_options(seed));
      model.emplace<ReferenceModel>(mc.config);
      const Replay a = replay(ops, real, mc.config.round, label);
      const Replay b = replay(ops, model, mc.config.round, label + " (model)");
      expect_same(a, b, label);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// Long sequences, where more than a thousand hits pass between two shrinks: the drop queue
// is compacted many times, which must change no block and no counter.
TEST(Properties, fifo_shrink_queue_compaction_changes_nothing) {
  using K = ReferenceConfig;
  std::vector<ModelCase> cases;
  ReferenceConfig c;
  c.kind = K::fifo_shrink;
  c.max = 1000000000000;
  cases.push_back({"fifo-shrink:max=1TB", c});
  c.max = 40000;
  cases.push_back({"fifo-shrink:max=40000", c});
  c.max = kNone;
  c.max_items = 40;
  c.best_fit_match = true;
  cases.push_back({"fifo-shrink:max_items=40,match=best-fit", c});
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    // Popular sizes only, so that the reference model's cache (scanned linearly) stays small.
    const std::vector<Op> ops = random_ops(seed + 300000, 12000, 0);
    for (const ModelCase& mc : cases) {
      const std::string label = mc.spec + " long seed " + std::to_string(seed);
      testing::Stack real(mc.spec);
      testing::Stack model;
      model.emplace<ReferenceModel>(mc.config);
      const Replay a = replay(ops, real, 1, label);
      const Replay b = replay(ops, model, 1, label + " (model)");
      expect_same(a, b, label);
      EXPECT_GT(a.stats.hits, 2000u) << label;
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(Properties, fifo_shrink_without_limits_equals_exact_and_best_fit) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"fifo-shrink", "exact"},
      {"fifo-shrink:round=128", "exact:round=128"},
      {"fifo-shrink:match=best-fit", "best-fit"},
      {"fifo-shrink:match=best-fit,max_ratio=1.25", "best-fit:max_ratio=1.25"},
      // A limit never reached: the queue and tombstones are kept but must change nothing.
      {"fifo-shrink:max=1TB", "exact"},
      {"fifo-shrink:max_items=1000000,match=best-fit", "best-fit"},
      {"best-fit:max_ratio=1", "exact"},
      {"best-fit:max_ratio=1,round=64", "exact:round=64"},
      {"dfdx", "exact"},
      {"rten", "per-run-pool:min_size=128"},
  };
  for (std::uint64_t seed = 0; seed < kSequences; ++seed) {
    const std::vector<Op> ops = random_ops(seed + 100000, kOpsPerSequence);
    for (const auto& [left, right] : pairs) {
      const std::string label = left + " vs " + right + " seed " + std::to_string(seed);
      testing::Stack a(left, sim_options(seed));
      testing::Stack b(right, sim_options(seed));
      expect_same(replay(ops, a, 1, label), replay(ops, b, 1, label), label);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(Properties, passthrough_never_caches) {
  for (std::uint64_t seed = 0; seed < kSequences; ++seed) {
    const std::vector<Op> ops = random_ops(seed + 200000, kOpsPerSequence);
    testing::Stack s("passthrough", sim_options(seed));
    const Replay r = replay(ops, s, 1, "passthrough seed " + std::to_string(seed));
    EXPECT_EQ(r.stats.hits, 0u);
    EXPECT_EQ(r.stats.evictions, 0u);
    EXPECT_EQ(r.stats.cached_bytes, 0u);
    EXPECT_EQ(r.upstream.frees, r.frees);  // every free went straight upstream
    EXPECT_EQ(r.upstream.allocs, r.stats.requests - r.stats.failed);
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace alloclab
