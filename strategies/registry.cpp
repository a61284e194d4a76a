// The table of built-in strategies. Adding one: a header + a source + one entry below.
#include "alloclab/strategies/registry.hpp"

#include "alloclab/strategies/best_fit.hpp"
#include "alloclab/strategies/exact.hpp"
#include "alloclab/strategies/fifo_shrink.hpp"
#include "alloclab/strategies/passthrough.hpp"
#include "alloclab/strategies/per_run_pool.hpp"
#include "alloclab/strategies/plugin.hpp"
#include "alloclab/strategies/pytorch.hpp"

namespace alloclab {
namespace {

std::vector<std::string> fifo_shrink_keys() {
  return {"round", "max", "max_items", "match", "max_ratio"};
}

// Presets are ordinary entries whose factory fills in defaults before building the strategy
// they name; errors then mention the preset's own name.
std::unique_ptr<Strategy> make_dfdx_limit(const StrategyParams& params, Upstream& upstream) {
  if (!params.has("max")) {
    throw SpecError(params.strategy() +
                    ": parameter 'max' is required (the cache limit, e.g. dfdx-limit:max=1GiB)");
  }
  return FifoShrinkStrategy::from_params(params, upstream);
}

std::unique_ptr<Strategy> make_rten(const StrategyParams& params, Upstream& upstream) {
  PerRunPoolOptions defaults;
  defaults.min_size = 128;
  return std::make_unique<PerRunPoolStrategy>(upstream,
                                              PerRunPoolOptions::from_params(params, defaults));
}

std::vector<StrategyInfo> make_table() {
  return {
      {"passthrough",
       "no cache: every alloc asks the upstream, every free gives the block back",
       {},
       &PassthroughStrategy::from_params},
      {"exact",
       "unbounded cache, a freed block is reused only for the same size, newest first",
       {"round"},
       &ExactStrategy::from_params},
      {"best-fit",
       "unbounded cache, reuses the smallest cached block that fits (within max_ratio)",
       {"round", "max_ratio"},
       &BestFitStrategy::from_params},
      {"fifo-shrink",
       "cache bounded by max bytes / max_items, evicts in the order blocks were freed",
       fifo_shrink_keys(), &FifoShrinkStrategy::from_params},
      {"per-run-pool",
       "pool emptied at each run end; smallest fitting block, earliest added on ties",
       {"round", "min_size"},
       &PerRunPoolStrategy::from_params},
      {"pytorch", "model of PyTorch's CUDA caching allocator (docs/strategies.md)",
       pytorch_spec_keys(), &make_pytorch_strategy},
      {"pytorch-conf",
       "pytorch from a PYTORCH_CUDA_ALLOC_CONF string: pytorch-conf:\"max_split_size_mb:128,...\"",
       {"conf", "per_process_memory_fraction", "device_memory"},
       &make_pytorch_conf_strategy},
      {"dfdx", "preset: exact (dfdx's TensorCache)", {"round"}, &ExactStrategy::from_params},
      {"dfdx-limit", "preset: fifo-shrink with max required (dfdx PR #709)", fifo_shrink_keys(),
       &make_dfdx_limit},
      {"rten",
       "preset: per-run-pool:min_size=128 (rten's TensorPool)",
       {"round", "min_size"},
       &make_rten},
      {"plugin",
       "a strategy from a shared library: plugin:PATH.so[,key=value...] (docs/plugins.md)",
       {"path"},
       &make_plugin_strategy},
  };
}

}  // namespace

const std::vector<StrategyInfo>& builtin_strategies() {
  static const std::vector<StrategyInfo> table = make_table();
  return table;
}

std::unique_ptr<Strategy> make_strategy(std::string_view spec, Upstream& upstream) {
  // A plug-in spec starts with a path rather than key=value, and only the loaded plug-in knows
  // which keys it takes: strategies/plugin.cpp splits the spec and checks the keys.
  // A pytorch-conf spec carries PyTorch's own `key:value,...` text, whose commas are not spec
  // separators: strategies/pytorch_conf.cpp splits it.
  const bool plugin = is_plugin_spec(spec);
  ParsedSpec parsed = plugin                       ? split_plugin_spec(spec)
                      : is_pytorch_conf_spec(spec) ? split_pytorch_conf_spec(spec)
                                                   : split_spec(spec);
  const std::vector<StrategyInfo>& table = builtin_strategies();
  for (const StrategyInfo& info : table) {
    if (info.name != parsed.name) continue;
    StrategyParams params(parsed.name, std::move(parsed.params));
    if (!plugin) params.check_keys(info.keys);
    return info.make(params, upstream);
  }
  std::string known;
  for (const StrategyInfo& info : table) {
    if (!known.empty()) known += ", ";
    known += info.name;
  }
  throw SpecError("unknown strategy '" + parsed.name + "' (known: " + known + ")");
}

}  // namespace alloclab
