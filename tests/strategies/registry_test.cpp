// The registry: names, presets, and the errors a user sees for a bad spec.
#include <gtest/gtest.h>

#include <set>

#include "alloclab/strategies/best_fit.hpp"
#include "alloclab/strategies/exact.hpp"
#include "alloclab/strategies/fifo_shrink.hpp"
#include "alloclab/strategies/passthrough.hpp"
#include "alloclab/strategies/per_run_pool.hpp"
#include "alloclab/strategies/plugin.hpp"
#include "alloclab/strategies/pytorch.hpp"
#include "alloclab/strategies/registry.hpp"
#include "strategy_test_support.hpp"

namespace alloclab {
namespace {

std::string error_of(std::string_view spec) {
  SimUpstream sim;
  try {
    make_strategy(spec, sim);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(Registry, lists_every_builtin_strategy_and_preset_in_order) {
  std::vector<std::string> names;
  for (const StrategyInfo& info : builtin_strategies()) {
    names.push_back(info.name);
    EXPECT_FALSE(info.summary.empty()) << info.name;
    EXPECT_TRUE(info.make) << info.name;
  }
  const std::vector<std::string> expected = {
      "passthrough",  "exact", "best-fit",   "fifo-shrink", "per-run-pool", "pytorch",
      "pytorch-conf", "dfdx",  "dfdx-limit", "rten",        "plugin"};
  EXPECT_EQ(names, expected);
}

TEST(Registry, builds_the_class_each_name_stands_for) {
  SimUpstream sim;
  EXPECT_TRUE(dynamic_cast<PassthroughStrategy*>(make_strategy("passthrough", sim).get()));
  EXPECT_TRUE(dynamic_cast<ExactStrategy*>(make_strategy("exact", sim).get()));
  EXPECT_TRUE(dynamic_cast<ExactStrategy*>(make_strategy("dfdx", sim).get()));
  EXPECT_TRUE(dynamic_cast<BestFitStrategy*>(make_strategy("best-fit", sim).get()));
  EXPECT_TRUE(dynamic_cast<FifoShrinkStrategy*>(make_strategy("fifo-shrink", sim).get()));
  EXPECT_TRUE(dynamic_cast<FifoShrinkStrategy*>(make_strategy("dfdx-limit:max=1GB", sim).get()));
  EXPECT_TRUE(dynamic_cast<PerRunPoolStrategy*>(make_strategy("per-run-pool", sim).get()));
  EXPECT_TRUE(dynamic_cast<PerRunPoolStrategy*>(make_strategy("rten", sim).get()));
  EXPECT_TRUE(dynamic_cast<PyTorchCachingStrategy*>(make_strategy("pytorch", sim).get()));
  EXPECT_TRUE(dynamic_cast<PluginStrategy*>(
      make_strategy(std::string("plugin:") + ALLOCLAB_EXAMPLE_PLUGIN, sim).get()));
}

TEST(Registry, every_accepted_key_is_understood) {
  // A value valid for each key; every key a strategy lists must build with it.
  const std::map<std::string, std::string> sample = {{"round", "256"},
                                                     {"max", "64MiB"},
                                                     {"max_items", "10"},
                                                     {"match", "exact"},
                                                     {"max_ratio", "2"},
                                                     {"min_size", "128"},
                                                     {"max_split_size", "64MiB"},
                                                     {"roundup_power2_divisions", "4"},
                                                     {"max_non_split_rounding", "32MiB"},
                                                     {"per_process_memory_fraction", "0.5"},
                                                     {"device_memory", "80GiB"},
                                                     {"garbage_collection_threshold", "0.8"},
                                                     {"expandable_segments", "true"},
                                                     {"conf", "max_split_size_mb:128"},
                                                     {"path", ALLOCLAB_EXAMPLE_PLUGIN}};
  SimUpstream sim;
  for (const StrategyInfo& info : builtin_strategies()) {
    for (const std::string& key : info.keys) {
      ASSERT_TRUE(sample.count(key)) << info.name << " accepts an untested key " << key;
      std::string spec = info.name + ":" + key + "=" + sample.at(key);
      // pytorch-conf's conf is PyTorch's own text in quotes; its other keys follow it.
      if (info.name == "pytorch-conf") {
        spec = "pytorch-conf:\"" + sample.at("conf") + "\"";
        if (key != "conf") spec += "," + key + "=" + sample.at(key);
      }
      const bool fifo = info.name == "fifo-shrink" || info.name == "dfdx-limit";
      if (fifo && key == "max_ratio") spec += ",match=best-fit";
      if (info.name == "dfdx-limit" && key != "max") spec += ",max=1GB";
      // pytorch's memory keys only work together (a fraction of a device's memory).
      if (key == "per_process_memory_fraction") spec += ",device_memory=80GiB";
      if (key == "device_memory") spec += ",per_process_memory_fraction=0.5";
      if (key == "garbage_collection_threshold") {
        spec += ",per_process_memory_fraction=0.5,device_memory=80GiB";
      }
      EXPECT_NO_THROW(make_strategy(spec, sim)) << spec;
    }
  }
}

TEST(Registry, unknown_name_lists_the_known_ones) {
  EXPECT_EQ(error_of("foo"),
            "unknown strategy 'foo' (known: passthrough, exact, best-fit, fifo-shrink, "
            "per-run-pool, pytorch, pytorch-conf, dfdx, dfdx-limit, rten, plugin)");
  EXPECT_CONTAINS(error_of("foo:max=1"), "unknown strategy 'foo'");
}

TEST(Registry, unknown_key_lists_the_accepted_ones) {
  EXPECT_EQ(error_of("fifo-shrink:maxx=1"),
            "fifo-shrink: unknown parameter 'maxx' (accepted: round, max, max_items, match, "
            "max_ratio)");
  EXPECT_EQ(error_of("exact:max=1"), "exact: unknown parameter 'max' (accepted: round)");
  EXPECT_EQ(error_of("passthrough:round=2"),
            "passthrough: unknown parameter 'round' (passthrough takes no parameters)");
  EXPECT_EQ(error_of("rten:max=1"), "rten: unknown parameter 'max' (accepted: round, min_size)");
}

TEST(Registry, bad_values_say_which_key_and_what_is_expected) {
  EXPECT_EQ(error_of("fifo-shrink:match=lru"),
            "fifo-shrink: bad value 'lru' for 'match': expected one of: exact, best-fit");
  EXPECT_CONTAINS(error_of("fifo-shrink:max=lots"), "fifo-shrink: bad value 'lots' for 'max'");
  EXPECT_CONTAINS(error_of("fifo-shrink:max=lots"), "KiB MiB GiB TiB");
  EXPECT_CONTAINS(error_of("exact:round=0"), "exact: bad value '0' for 'round'");
  EXPECT_CONTAINS(error_of("best-fit:max_ratio=0.5"), "expected a number >= 1");
  EXPECT_CONTAINS(error_of("fifo-shrink:max_items=-1"), "bad value '-1' for 'max_items'");
  EXPECT_CONTAINS(error_of("per-run-pool:min_size=1.5"), "not a whole number of bytes");
  EXPECT_CONTAINS(error_of("fifo-shrink:max=unlimited"), "leave the parameter out");
}

TEST(Registry, spec_syntax_errors_come_through) {
  EXPECT_CONTAINS(error_of(""), "empty strategy spec");
  EXPECT_CONTAINS(error_of("exact:round"), "has no value");
  EXPECT_CONTAINS(error_of("exact:round=1,round=2"), "given twice");
}

TEST(DfdxLimit, requires_max_and_is_fifo_shrink) {
  EXPECT_EQ(error_of("dfdx-limit"),
            "dfdx-limit: parameter 'max' is required (the cache limit, e.g. "
            "dfdx-limit:max=1GiB)");
  testing::Stack s("dfdx-limit:max=16");
  std::vector<Block> blocks;
  for (std::uint64_t size : {1, 1, 2, 4, 8, 8}) blocks.push_back(s.alloc(size));
  for (const Block& b : blocks) s.free(b);
  EXPECT_EQ(s.stats().cached_bytes, 16u);
  EXPECT_EQ(s.stats().evictions, 4u);
}

TEST(Dfdx, is_exact) {
  testing::Stack s("dfdx:round=8");
  const Block a = s.alloc(5);
  EXPECT_EQ(a.capacity, 8u);
  s.free(a);
  EXPECT_EQ(s.alloc(8), a);
  EXPECT_EQ(s.alloc(4).capacity, 8u);  // a miss: exact only
  EXPECT_EQ(s.stats().hits, 1u);
}

}  // namespace
}  // namespace alloclab
