#pragma once
// Where the memory goes, by call stack (`alloclab sites`): for each recorded stack, the program's
// allocations and what is live at one moment, and for each strategy the misses, upstream bytes,
// slack and evictions its replay charged to that stack's requests. The per-strategy figures come
// from the replayer itself (ReplayObserver), so over all stacks they sum to the replay's own
// metrics.
//
// Charging rules:
// - a request's miss, slack and upstream bytes go to the stack of the allocation it made;
// - an eviction goes to the stack of the allocation that last released memory inside the
//   evicted upstream block: for strategies whose cached blocks are upstream blocks (exact,
//   best-fit, fifo-shrink, per-run-pool) that is the allocation that last held the block; for a
//   strategy that cuts upstream segments into many blocks (pytorch) it is the allocation whose
//   free was the last in that segment, i.e. the one that left it empty. An eviction of memory no
//   program allocation released (pytorch's expandable segments hand out addresses of their own,
//   outside the upstream pages they unmap) is charged to stack 0.
// Stack 0 holds the allocations without a stack (and the start state's blocks).
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/trace.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {

struct SiteCounts {                  // one strategy, one stack
  std::uint64_t misses = 0;          // requests of this stack the strategy did not serve from
                                     // its cache (requests - hits, as Metrics::misses)
  std::uint64_t upstream_bytes = 0;  // bytes of the upstream blocks taken while serving them
  std::uint64_t slack_bytes = 0;     // the slack the strategy counted for them (Metrics)
  std::uint64_t evictions = 0;       // evictions charged to this stack (rules above); not the
                                     // final release
};

struct StackTally {
  std::uint32_t stack = 0;  // trace stack id; 0 = allocations without a stack
  std::uint64_t allocations = 0, requested_bytes = 0;  // program requests (replayed allocs)
  std::uint64_t live_allocations = 0, live_bytes = 0;  // at SitesResult::at_op
  std::vector<SiteCounts> strategies;                  // by SitesResult::specs index
};

// The moment live allocations are counted at: the op where the program's live bytes peak (the
// first such), or the last operation at most `time_ns` after the trace's first operation.
struct SitesAt {
  bool peak = true;
  std::uint64_t time_ns = 0;
};

struct SitesResult {
  std::vector<std::string> specs;
  std::vector<StrategyResult> results;  // each spec's replay, by specs index
  // Live is counted after operations [0, at_op); at_time_ns is the time of operation at_op - 1
  // since the first operation (0 when at_op is 0).
  std::uint64_t at_op = 0, at_time_ns = 0, live_bytes_at = 0;
  std::vector<StackTally> stacks;  // stacks[id] for id 0..trace.stacks().size()
  bool interrupted = false;        // ReplayOptions::cancel stopped a replay: figures cut short
};

// The stack id of each allocation id's alloc event (0: none), found in one walk of the
// operations beside the trace's events: 4 bytes per allocation.
std::vector<std::uint32_t> allocation_stacks(const Trace& trace, const ResolvedTrace& resolved);

// Replays each spec (as replay_specs, up to `threads` at once) with an observer and charges what
// each request cost to its stack. `trace` must be the trace `resolved` was resolved from.
SitesResult tally_sites(const Trace& trace, const ResolvedTrace& resolved,
                        const std::vector<std::string>& specs, SitesAt at,
                        const ReplayOptions& options, std::size_t threads);

// What sites are ranked and folded stacks valued by.
enum class SiteMetric {
  allocations,
  bytes,  // requested bytes
  live,   // live bytes at SitesResult::at_op
  misses,
  slack,
  upstream_bytes,
  evictions
};
// "allocations", "bytes", "live", "misses", "slack", "upstream-bytes", "evictions".
std::string_view to_string(SiteMetric metric);
std::optional<SiteMetric> parse_site_metric(std::string_view name);
const std::vector<SiteMetric>& all_site_metrics();
// Whether the metric is a strategy's (then read for one spec).
bool per_strategy(SiteMetric metric);
std::uint64_t metric_value(const StackTally& tally, SiteMetric metric, std::size_t spec);

// A site is the innermost frame of its stacks (heaptrack's bottom-up view): frames with the same
// function and module, or the same address and module when the function is unknown, are one
// site. Stack 0 and stacks without frames make the site "[no stack]".
struct Site {
  std::optional<std::uint32_t> frame;  // an index into trace.frames(); none for "[no stack]"
  StackTally total;                    // summed over its stacks (total.stack is 0)
  std::vector<std::uint32_t> stacks;   // its caller chains, by the metric, most first
};
// The sites with any allocation, live byte or charge, by `metric` (of spec `spec` for a
// strategy's), most first; ties by the order their first stack was recorded.
std::vector<Site> group_sites(const Trace& trace, const SitesResult& result, SiteMetric metric,
                              std::size_t spec);
std::string site_name(const Trace& trace, const Site& site);  // describe_function, or "[no stack]"

// Folded stacks (flamegraph.pl, speedscope, Perfetto read them): one line per stack whose value
// is not 0, its frames root first joined by ';' (describe_function, with ';' and line breaks in a
// name made spaces), a space, the value. Stack 0 is the frame "[no stack]".
void write_folded(std::ostream& out, const Trace& trace, const SitesResult& result,
                  SiteMetric metric, std::size_t spec);

// `alloclab sites`'s listing: the moment, then the first `top` sites, each with its counts, its
// strategies' counts and its first caller chains. Each line ends in '\n'.
std::string sites_text(const Trace& trace, const SitesResult& result,
                       const std::vector<Site>& sites, SiteMetric sorted_by, std::size_t top);
// `alloclab sites --json`'s document (docs/cli.md): the moment, the specs with their metrics,
// and the first `top` sites with their counts and stacks.
nlohmann::json sites_json(const Trace& trace, const SitesResult& result,
                          const std::vector<Site>& sites, SiteMetric sorted_by, std::size_t top);
// The frames of stack `id` (innermost first) as JSON objects of address, function, module.
nlohmann::json stack_frames_json(const Trace& trace, std::uint32_t id);

// `replay --sites N`: per spec, the `n` stacks with the most misses under it, each with its
// frames and that spec's counts (docs/report-schema.md, "sites").
nlohmann::json top_miss_stacks_json(const Trace& trace, const SitesResult& result, std::size_t spec,
                                    std::size_t n);

}  // namespace alloclab
