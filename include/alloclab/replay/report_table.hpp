#pragma once
// The comparison table `replay` prints, shared with `merge` and `advise`.
#include <vector>

#include "alloclab/replay/metrics.hpp"

namespace alloclab {

void print_results_table(const std::vector<StrategyResult>& results);

}  // namespace alloclab
