#pragma once
// Turns spec strings into strategies. A new built-in strategy is one header + one source + one
// line in strategies/registry.cpp.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

using StrategyFactory =
    std::function<std::unique_ptr<Strategy>(const StrategyParams& params, Upstream& upstream)>;

struct StrategyInfo {
  std::string name;
  std::string summary;            // one line for `alloclab strategies`
  std::vector<std::string> keys;  // accepted parameter keys
  StrategyFactory make;
};

// Every built-in strategy and preset, in display order.
const std::vector<StrategyInfo>& builtin_strategies();

// Builds the strategy a spec names, over `upstream` (which must outlive it). Throws SpecError
// for an unknown name (listing the known ones), key (listing the accepted ones) or bad value.
std::unique_ptr<Strategy> make_strategy(std::string_view spec, Upstream& upstream);

}  // namespace alloclab
