#pragma once
// A live run's report (`alloclab run`, tracer/live) as a StrategyResult, so that every front
// end shows it beside replays: the same counters, and the strategy's and the real allocator's
// call latencies as a real replay times them.
#include "alloclab/live/live_report.hpp"
#include "alloclab/replay/metrics.hpp"

namespace alloclab {

StrategyResult live_result(const live::LiveReport& report);

}  // namespace alloclab
