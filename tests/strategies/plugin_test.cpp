// Strategy plug-ins (`plugin:PATH.so,...`, include/sdk/alloclab/strategy_plugin.h): the example
// size_class plug-in worked by hand and against a reference model on random sequences, the
// library's lifetime, instances in parallel threads, and every error a user can meet.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "alloclab/strategies/plugin.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/registry.hpp"
#include "strategy_test_support.hpp"

namespace alloclab {
namespace {

const std::string kExample = ALLOCLAB_EXAMPLE_PLUGIN;

std::string example(const std::string& params = "") {
  return "plugin:" + kExample + params;
}

std::string error_of(const std::string& spec) {
  SimUpstream sim;
  try {
    make_strategy(spec, sim);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

// ---- size_class by hand --------------------------------------------------------------------

TEST(PluginSizeClass, loads_through_the_registry_as_a_plugin_strategy) {
  testing::Stack s(example());
  auto* plugin = dynamic_cast<PluginStrategy*>(s.strategy.get());
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->library().name(), "size_class");
  EXPECT_FALSE(plugin->library().summary().empty());
  EXPECT_EQ(plugin->library().keys(), std::vector<std::string>{"max_cached"});
  EXPECT_EQ(plugin->library().path(), kExample);
}

TEST(PluginSizeClass, rounds_requests_up_to_a_power_of_two_of_at_least_256) {
  testing::Stack s(example());
  EXPECT_EQ(s.alloc(0).capacity, 256u);
  EXPECT_EQ(s.alloc(1).capacity, 256u);
  EXPECT_EQ(s.alloc(256).capacity, 256u);
  EXPECT_EQ(s.alloc(257).capacity, 512u);
  EXPECT_EQ(s.alloc(1000).capacity, 1024u);
  EXPECT_EQ(s.alloc(1u << 20).capacity, 1u << 20);
  EXPECT_EQ(s.alloc((1u << 20) + 1).capacity, 2u << 20);
  EXPECT_EQ(s.stats().requests, 7u);
  EXPECT_EQ(s.stats().hits, 0u);
  EXPECT_EQ(s.upstream().allocs, 7u);
  EXPECT_EQ(s.upstream().reserved_bytes, 256u * 3 + 512 + 1024 + (3u << 20));
}

TEST(PluginSizeClass, a_request_above_the_largest_class_fails) {
  testing::Stack s(example());
  EXPECT_EQ(s.strategy->allocate((1ULL << 63) + 1, 0), std::nullopt);
  EXPECT_EQ(s.stats().requests, 1u);
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.upstream().allocs, 0u);
}

TEST(PluginSizeClass, hits_come_from_the_same_class_newest_first) {
  testing::Stack s(example());
  const Block a = s.alloc(300);  // class 512
  const Block b = s.alloc(400);  // class 512
  const Block c = s.alloc(100);  // class 256
  s.free(a);
  s.free(b);
  s.free(c);
  EXPECT_EQ(s.stats().cached_bytes, 512u + 512 + 256);
  EXPECT_EQ(s.alloc(500), b);  // newest of class 512
  EXPECT_EQ(s.alloc(257), a);
  EXPECT_EQ(s.alloc(256), c);
  EXPECT_EQ(s.stats().hits, 3u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  // Another class is never borrowed from: a 1024-byte request misses with 512s cached.
  s.free(a);
  EXPECT_EQ(s.alloc(600).capacity, 1024u);
  EXPECT_EQ(s.stats().hits, 3u);
  EXPECT_EQ(s.stats().requests, 7u);
  EXPECT_EQ(s.misses(), 4u);
  EXPECT_EQ(s.upstream().allocs, 4u);
  EXPECT_EQ(s.stats().slack_bytes, 0u);  // the upstream gives exactly the class size
  EXPECT_EQ(s.stats().evictions, 0u);
}

// An upstream that hands out whole kilobytes (as a page-granular allocator would): a block may
// be larger than its class, and a hit then has slack.
class KilobyteUpstream final : public Upstream {
 public:
  std::optional<Block> allocate(std::uint64_t bytes) override {
    return sim.allocate((bytes + 999) / 1000 * 1000);
  }
  void deallocate(const Block& block) override { sim.deallocate(block); }
  SimUpstream sim;
};

TEST(PluginSizeClass, slack_is_the_capacity_beyond_the_class) {
  KilobyteUpstream upstream;
  auto s = make_strategy(example(), upstream);
  const Block a = *s->allocate(300, 0);  // class 512, a 1000-byte block
  EXPECT_EQ(a.capacity, 1000u);
  s->deallocate(a);                   // cached in class 512 (the largest power of two <= 1000)
  EXPECT_EQ(s->allocate(400, 0), a);  // a hit in class 512: slack 1000 - 512
  EXPECT_EQ(s->stats().slack_bytes, 488u);
  const Block b = *s->allocate(3000, 0);  // class 4096, a 5000-byte block
  s->deallocate(b);                       // cached in class 4096
  EXPECT_EQ(s->allocate(4096, 0), b);
  EXPECT_EQ(s->stats().slack_bytes, 488u + 904);
  EXPECT_EQ(s->stats().hits, 2u);
}

TEST(PluginSizeClass, max_cached_sends_blocks_past_the_limit_straight_upstream) {
  testing::Stack s(example(",max_cached=1024"));
  const Block a = s.alloc(512);
  const Block b = s.alloc(512);
  const Block c = s.alloc(256);
  const Block d = s.alloc(1024);
  s.free(a);
  s.free(b);
  EXPECT_EQ(s.stats().cached_bytes, 1024u);
  s.free(c);  // 1024 + 256 > 1024: upstream
  s.free(d);  // upstream
  EXPECT_EQ(s.stats().cached_bytes, 1024u);
  EXPECT_EQ(s.upstream().frees, 2u);
  EXPECT_EQ(s.stats().evictions, 0u);      // never cached, so never evicted
  EXPECT_EQ(s.alloc(512), b);              // the cached ones still hit
  EXPECT_EQ(s.alloc(256).capacity, 256u);  // c went upstream: a miss
  EXPECT_EQ(s.stats().hits, 1u);
  EXPECT_EQ(s.stats().cached_bytes, 512u);
}

TEST(PluginSizeClass, max_cached_zero_caches_nothing) {
  testing::Stack s(example(",max_cached=0"));
  s.drop_in(100);
  s.drop_in(100);
  EXPECT_EQ(s.stats().hits, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.upstream().frees, 2u);
}

TEST(PluginSizeClass, runs_change_nothing_and_release_is_not_eviction) {
  testing::Stack s(example());
  s.strategy->begin_run();
  s.drop_in(1000);
  s.drop_in(100);
  s.strategy->end_run();
  EXPECT_EQ(s.stats().cached_bytes, 1024u + 256);
  EXPECT_EQ(s.upstream().frees, 0u);
  s.strategy->begin_run();
  s.alloc(1000);  // still cached after the run end
  EXPECT_EQ(s.stats().hits, 1u);
  s.strategy->release();
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.stats().evictions, 0u);
  EXPECT_EQ(s.upstream().frees, 1u);
  EXPECT_EQ(s.upstream().reserved_bytes, 1024u);  // the live block stays live
}

TEST(PluginSizeClass, an_upstream_failure_gives_the_cache_back_and_retries_once) {
  testing::Stack s(example(), SimUpstreamOptions{.limit_bytes = 2048});
  const Block a = s.alloc(1024);
  s.drop_in(512);  // cached; reserved 1536
  const std::optional<Block> b = s.strategy->allocate(1024, 0);
  ASSERT_TRUE(b.has_value());  // 1536 + 1024 > 2048, so the 512 went back and the retry worked
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.stats().failed, 0u);
  EXPECT_EQ(s.strategy->allocate(1, 0), std::nullopt);  // 2048 live, nothing to give back
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.upstream().failed, 2u);  // one per attempt: no retry without a cache
  s.free(a);
  s.free(*b);
  EXPECT_EQ(s.stats().cached_bytes, 2048u);
}

// ---- size_class against a reference model --------------------------------------------------

// size_class.c's rules read literally, with a linear list of cached blocks (sim capacities are
// exact, so a block's class is its capacity).
class ReferenceSizeClass final : public Strategy {
 public:
  ReferenceSizeClass(Upstream& upstream, std::optional<std::uint64_t> max_cached)
      : up_(upstream), max_(max_cached) {}

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t) override {
    ++stats_.requests;
    std::uint64_t cls = 256;
    while (cls < size) cls *= 2;
    for (std::size_t i = cache_.size(); i-- > 0;) {
      if (cache_[i].capacity != cls) continue;
      const Block b = cache_[i];
      cache_.erase(cache_.begin() + static_cast<std::ptrdiff_t>(i));
      ++stats_.hits;
      stats_.cached_bytes -= b.capacity;
      return b;
    }
    if (auto b = up_.allocate(cls)) return b;
    const bool had_cache = !cache_.empty();
    give_back_all(true);
    if (had_cache) {
      if (auto b = up_.allocate(cls)) return b;
    }
    ++stats_.failed;
    return std::nullopt;
  }
  void deallocate(const Block& block) override {
    if (max_ && stats_.cached_bytes + block.capacity > *max_) {
      up_.deallocate(block);
      return;
    }
    cache_.push_back(block);
    stats_.cached_bytes += block.capacity;
  }
  void release() override { give_back_all(false); }
  const StrategyStats& stats() const override { return stats_; }

 private:
  void give_back_all(bool evictions) {
    for (const Block& b : cache_) {
      up_.deallocate(b);
      if (evictions) ++stats_.evictions;
    }
    cache_.clear();
    stats_.cached_bytes = 0;
  }

  Upstream& up_;
  std::optional<std::uint64_t> max_;
  std::vector<Block> cache_;
  StrategyStats stats_;
};

struct Op {
  enum Kind { alloc, free, run_begin, run_end } kind;
  std::uint64_t value;  // alloc: size; free: id (index among allocs)
};

std::vector<Op> random_ops(std::uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> popular;
  for (int i = 0, n = 1 + static_cast<int>(rng() % 6); i < n; ++i) popular.push_back(rng() % 3000);
  const std::uint64_t free_weight = 30 + rng() % 40;
  std::vector<Op> ops;
  std::vector<std::uint64_t> live;
  std::uint64_t next_id = 0;
  for (int i = 0; i < count; ++i) {
    const std::uint64_t roll = rng() % 100;
    if (roll < 3) {
      ops.push_back({rng() % 2 ? Op::run_begin : Op::run_end, 0});
    } else if (roll < 3 + free_weight && !live.empty()) {
      const std::size_t pick = rng() % live.size();
      ops.push_back({Op::free, live[pick]});
      live[pick] = live.back();
      live.pop_back();
    } else {
      const std::uint64_t size = rng() % 10 < 7 ? popular[rng() % popular.size()] : rng() % 9000;
      ops.push_back({Op::alloc, size});
      live.push_back(next_id++);
    }
  }
  return ops;
}

struct RunResult {
  std::vector<std::optional<Block>> handed_out;
  StrategyStats stats;
  UpstreamCounters upstream;
};

// Replays `ops`, checking after every op that no two live blocks overlap, that every block is at
// least its request, and that the upstream holds exactly the live blocks plus the cache.
void run_ops(const std::vector<Op>& ops, testing::Stack& s, const std::string& label,
             RunResult& out) {
  std::vector<std::optional<Block>> blocks;
  std::map<std::uint64_t, std::uint64_t> live;  // address -> end
  std::uint64_t live_capacity = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == Op::alloc) {
      const std::optional<Block> b = s.strategy->allocate(op.value, 0);
      blocks.push_back(b);
      out.handed_out.push_back(b);
      if (b) {
        ASSERT_GE(b->capacity, op.value) << label << " op " << i;
        const std::uint64_t end = b->address + b->capacity;
        const auto next = live.lower_bound(b->address);
        ASSERT_TRUE(next == live.end() || next->first >= end) << label << " op " << i;
        ASSERT_TRUE(next == live.begin() || std::prev(next)->second <= b->address)
            << label << " op " << i;
        live.emplace(b->address, end);
        live_capacity += b->capacity;
      }
    } else if (op.kind == Op::free) {
      if (const std::optional<Block> b = blocks[op.value]) {
        live.erase(b->address);
        live_capacity -= b->capacity;
        s.free(*b);
      }
    } else if (op.kind == Op::run_begin) {
      s.strategy->begin_run();
    } else {
      s.strategy->end_run();
    }
    ASSERT_EQ(s.upstream().reserved_bytes, live_capacity + s.stats().cached_bytes)
        << label << " op " << i;
    // Every miss that did not fail took exactly one block from the upstream.
    ASSERT_EQ(s.upstream().allocs, s.stats().requests - s.stats().hits - s.stats().failed)
        << label << " op " << i;
  }
  out.stats = s.stats();
  out.upstream = s.upstream();
  s.strategy->release();
  EXPECT_EQ(s.stats().cached_bytes, 0u) << label;
  EXPECT_EQ(s.upstream().reserved_bytes, live_capacity) << label;
}

TEST(PluginSizeClass, matches_the_reference_model_on_random_sequences) {
  const std::vector<std::optional<std::uint64_t>> limits = {std::nullopt, 0, 4096, 100000};
  for (std::uint64_t seed = 0; seed < 120; ++seed) {
    const std::vector<Op> ops = random_ops(seed, 1500);
    SimUpstreamOptions sim;
    if (seed % 3 == 0) sim.limit_bytes = 64 * 1024;  // upstream failures and retries too
    for (const std::optional<std::uint64_t>& max_cached : limits) {
      const std::string params =
          max_cached ? ",max_cached=" + std::to_string(*max_cached) : std::string();
      const std::string label = "seed " + std::to_string(seed) + params;
      testing::Stack real(example(params), sim);
      testing::Stack model(sim);
      model.emplace<ReferenceSizeClass>(max_cached);
      RunResult a;
      RunResult b;
      run_ops(ops, real, label, a);
      run_ops(ops, model, label + " (model)", b);
      if (::testing::Test::HasFatalFailure()) return;
      ASSERT_EQ(a.handed_out, b.handed_out) << label;
      EXPECT_EQ(a.stats.requests, b.stats.requests) << label;
      EXPECT_EQ(a.stats.hits, b.stats.hits) << label;
      EXPECT_EQ(a.stats.failed, b.stats.failed) << label;
      EXPECT_EQ(a.stats.evictions, b.stats.evictions) << label;
      EXPECT_EQ(a.stats.slack_bytes, b.stats.slack_bytes) << label;
      EXPECT_EQ(a.stats.cached_bytes, b.stats.cached_bytes) << label;
      EXPECT_EQ(a.upstream.frees, b.upstream.frees) << label;
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// ---- lifetime and threads -------------------------------------------------------------------

TEST(Plugin, the_library_stays_loaded_while_a_strategy_from_it_exists) {
  SimUpstream sim;
  std::shared_ptr<const PluginLibrary> library = PluginLibrary::open(kExample);
  auto first = std::make_unique<PluginStrategy>(
      library, std::vector<std::pair<std::string, std::string>>{}, sim);
  auto second = make_strategy(example(), sim);
  library.reset();  // our own reference goes; the strategies keep theirs
  const Block a = *first->allocate(100, 0);
  first->deallocate(a);
  EXPECT_EQ(first->allocate(200, 0), a);
  first.reset();  // destroys an instance; the library is still open for `second`
  const Block b = *second->allocate(100, 0);
  second->deallocate(b);
  EXPECT_EQ(second->allocate(100, 0), b);
  EXPECT_EQ(second->stats().hits, 1u);
}

TEST(Plugin, instances_are_independent_and_may_run_in_parallel_threads) {
  const std::vector<Op> ops = random_ops(7, 20000);
  constexpr int kThreads = 4;
  std::vector<RunResult> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      testing::Stack s(example(",max_cached=65536"));
      run_ops(ops, s, "thread " + std::to_string(t), results[t]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 1; t < kThreads; ++t) {
    EXPECT_EQ(results[t].handed_out, results[0].handed_out);
    EXPECT_EQ(results[t].stats.hits, results[0].stats.hits);
    EXPECT_EQ(results[t].stats.evictions, results[0].stats.evictions);
  }
  EXPECT_GT(results[0].stats.hits, 0u);
}

// ---- specs --------------------------------------------------------------------------------

TEST(Plugin, the_path_may_be_given_as_path_equals) {
  testing::Stack s("plugin:path=" + kExample + ",max_cached=0");
  s.drop_in(1);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
}

TEST(Plugin, a_path_without_a_slash_is_relative_to_the_current_directory) {
  const std::filesystem::path file(kExample);
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(file.parent_path());
  std::string error = error_of("plugin:" + file.filename().string() + ",max_cached=1");
  std::filesystem::current_path(previous);
  EXPECT_EQ(error, "");
}

TEST(Plugin, split_plugin_spec_takes_the_path_first_and_verbatim) {
  const ParsedSpec p = split_plugin_spec(" plugin : ./a=b.so , k = v,x=1 ");
  EXPECT_EQ(p.name, "plugin");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"path", "./a=b.so"}, {"k", "v"}, {"x", "1"}};
  EXPECT_EQ(p.params, expected);
  EXPECT_TRUE(is_plugin_spec("plugin"));
  EXPECT_TRUE(is_plugin_spec(" plugin :x"));
  EXPECT_FALSE(is_plugin_spec("plugins:x"));
  EXPECT_FALSE(is_plugin_spec("exact"));
}

TEST(Plugin, spec_syntax_errors_show_the_spec_as_written) {
  EXPECT_CONTAINS(error_of("plugin"), "names no plug-in library");
  EXPECT_CONTAINS(error_of("plugin:"), "names no plug-in library");
  EXPECT_CONTAINS(error_of("plugin: ,max_cached=1"), "names no plug-in library");
  EXPECT_EQ(error_of("plugin:x.so,"),
            "strategy spec 'plugin:x.so,' has an empty parameter (a stray ',')");
  EXPECT_EQ(error_of("plugin:x.so,max_cached"),
            "strategy spec 'plugin:x.so,max_cached': parameter 'max_cached' has no value "
            "(expected key=value)");
  EXPECT_CONTAINS(error_of("plugin:x.so,a=1,a=2"), "'a' is given twice");
  EXPECT_CONTAINS(error_of("plugin:x.so,path=y.so"), "the plug-in library is given twice");
}

// ---- load errors ----------------------------------------------------------------------------

TEST(Plugin, a_missing_file_says_so) {
  EXPECT_EQ(error_of("plugin:/no/such/dir/strategy.so"),
            "plugin: cannot load '/no/such/dir/strategy.so': no such file");
  EXPECT_EQ(error_of("plugin:" + std::filesystem::path(kExample).parent_path().string()),
            "plugin: cannot load '" + std::filesystem::path(kExample).parent_path().string() +
                "': it is a directory");
}

TEST(Plugin, a_file_that_is_not_a_library_gives_the_loaders_reason) {
  const std::string error = error_of("plugin:" + std::string(__FILE__));
  EXPECT_CONTAINS(error, "plugin: cannot load '" + std::string(__FILE__) + "': ");
  EXPECT_GT(error.size(), std::string("plugin: cannot load '': ").size() +
                              std::string(__FILE__).size());  // dlerror() text follows
}

TEST(Plugin, a_library_without_the_entry_point_is_refused) {
  const std::string path = ALLOCLAB_BROKEN_PLUGIN_NO_ENTRY;
  const std::string error = error_of("plugin:" + path);
  EXPECT_CONTAINS(error, "plugin: '" + path +
                             "' is not an alloclab strategy plug-in: it does not export "
                             "alloclab_strategy_plugin_v1 (");
  EXPECT_CONTAINS(error, "see docs/plugins.md)");
}

TEST(Plugin, another_abi_version_is_refused) {
  const std::string path = ALLOCLAB_BROKEN_PLUGIN_ABI_2;
  EXPECT_EQ(error_of("plugin:" + path),
            "plugin '" + path + "' was built for alloclab plugin ABI 2; this alloclab speaks 1");
}

TEST(Plugin, a_table_with_a_missing_function_is_refused) {
  const std::string path = ALLOCLAB_BROKEN_PLUGIN_NULL_FUNCTION;
  EXPECT_EQ(error_of("plugin:" + path),
            "plugin 'broken' (" + path + "): its table has no 'destroy' function (NULL)");
}

// ---- parameter errors -----------------------------------------------------------------------

TEST(Plugin, an_unknown_key_lists_the_plugins_keys) {
  EXPECT_EQ(error_of(example(",max=1")),
            "plugin size_class: unknown parameter 'max' (accepted: max_cached)");
  EXPECT_EQ(error_of("plugin:" + std::string(ALLOCLAB_BROKEN_PLUGIN_SHORT_BLOCK) + ",x=1"),
            "plugin broken: unknown parameter 'x' (plugin broken takes no parameters)");
}

TEST(Plugin, a_bad_value_gives_the_plugins_own_message) {
  EXPECT_EQ(error_of(example(",max_cached=1MiB")),
            "plugin size_class: bad value '1MiB' for 'max_cached': expected a plain byte count "
            "such as 1048576");
  EXPECT_CONTAINS(error_of(example(",max_cached=-1")), "bad value '-1' for 'max_cached'");
  EXPECT_CONTAINS(error_of(example(",max_cached=18446744073709551616")), "bad value");
  EXPECT_EQ(error_of(example(",max_cached=18446744073709551615")), "");
}

// ---- a plug-in that breaks the rules at run time --------------------------------------------

TEST(Plugin, a_block_smaller_than_the_request_is_a_logic_error) {
  testing::Stack s("plugin:" + std::string(ALLOCLAB_BROKEN_PLUGIN_SHORT_BLOCK));
  try {
    s.strategy->allocate(1000, 0);
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(e.what(), "plugin 'broken' (" + std::string(ALLOCLAB_BROKEN_PLUGIN_SHORT_BLOCK) +
                            ") handed out a block of 500 bytes for a request of 1000 bytes");
  }
}

// What a plug-in that frees a block twice is told, whatever the upstream: the message names the
// plug-in, its file, the call it was in and what it did; the upstream never sees the second free
// (glibc's free() would abort the process).
std::string double_free_error(Upstream& upstream) {
  const std::string path = ALLOCLAB_BROKEN_PLUGIN_DOUBLE_FREE;
  const std::unique_ptr<Strategy> strategy = make_strategy("plugin:" + path, upstream);
  const std::optional<Block> block = strategy->allocate(4096, 0);
  if (!block) return "allocate failed";
  try {
    strategy->deallocate(*block);
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Plugin, a_block_freed_twice_is_refused_naming_the_plugin_and_what_it_did) {
  SimUpstream sim;
  const std::string error = double_free_error(sim);
  const std::string start = "plugin 'broken' (" + std::string(ALLOCLAB_BROKEN_PLUGIN_DOUBLE_FREE) +
                            ") gave back to the upstream, in its deallocate(), a block it does not "
                            "hold at 0x";
  EXPECT_EQ(error.substr(0, start.size()), start) << error;
  EXPECT_NE(error.find(" of 4096 bytes (it gave it back before, or never had it from the "
                       "upstream)"),
            std::string::npos)
      << error;
  EXPECT_EQ(sim.live_blocks(), 0u) << "the first free reached the upstream";
}

TEST(Plugin, a_block_freed_twice_over_a_real_upstream_is_refused_before_it_reaches_it) {
  const std::unique_ptr<Upstream> upstream = make_upstream("host-malloc");
  const std::string error = double_free_error(*upstream);
  EXPECT_NE(error.find("plugin 'broken' ("), std::string::npos) << error;
  EXPECT_NE(error.find("a block it does not hold"), std::string::npos) << error;
}

// An Upstream whose allocate() throws while `fail` is set.
class ThrowingUpstream final : public Upstream {
 public:
  std::optional<Block> allocate(std::uint64_t bytes) override {
    if (fail) throw UpstreamError("the upstream broke");
    return sim.allocate(bytes);
  }
  void deallocate(const Block& block) override { sim.deallocate(block); }
  SimUpstream sim;
  bool fail = false;
};

TEST(Plugin, an_upstream_exception_comes_back_after_the_plugin_returns) {
  // The bridge must carry the exception across the plug-in's C frames and rethrow it here.
  ThrowingUpstream upstream;
  const std::unique_ptr<Strategy> strategy = make_strategy(example(",max_cached=0"), upstream);
  upstream.fail = true;
  EXPECT_THROW(strategy->allocate(100, 0), UpstreamError);
  // The strategy is still usable: the exception did not leave it half-way through a call.
  upstream.fail = false;
  const std::optional<Block> block = strategy->allocate(100, 0);
  ASSERT_TRUE(block);
  strategy->deallocate(*block);
  EXPECT_EQ(strategy->stats().requests, 2u);
  EXPECT_EQ(upstream.sim.live_blocks(), 0u);
}

}  // namespace
}  // namespace alloclab
