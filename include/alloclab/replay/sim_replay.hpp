#pragma once
// Replay of a resolved trace against one strategy spec, over the simulated upstream
// (deterministic: same trace and spec, same counters, on every run and machine) or over a real
// one (`host-malloc`, ...: the same replayer and strategy code, plus timing adaptors).
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/metrics.hpp"

namespace alloclab {

struct CostModel;
struct Block;

// What a replay costs each request, as the strategy counted it (StrategyStats deltas over the
// one call that served it).
struct RequestCost {
  bool hit = false;                  // served from a block the strategy already held
  std::uint64_t slack_bytes = 0;     // the slack the strategy counted for it (hits only)
  std::uint64_t upstream_bytes = 0;  // capacity of the upstream blocks taken while serving it
};

// Told, as a replay goes, what each request cost and which blocks the strategies took from and
// returned to their upstream, with addresses, so that they can be charged to the program's
// allocations (replay/sites.hpp). Lanes (one per device) have upstreams of their own, so an
// address means something within its lane only. Only what the replay counts is reported: not
// the start state, not the final clean-up.
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  // Allocation `id` was requested; `block` is what it got (null: the request failed).
  virtual void requested(std::size_t lane, std::uint32_t id, const Block* block,
                         const RequestCost& cost) = 0;
  // The program freed allocation `id`, which held `block`.
  virtual void freed(std::size_t lane, std::uint32_t id, const Block& block) = 0;
  // The strategy took `block` from its upstream.
  virtual void upstream_allocated(std::size_t lane, const Block& block) = 0;
  // The strategy returned `block` upstream; `eviction` when it counted it as one. An operation
  // whose strategy counts more evictions than it returned blocks reports the rest with an empty
  // block (address 0, no bytes); one that counts fewer marks the first ones it returned.
  virtual void upstream_freed(std::size_t lane, const Block& block, bool eviction) = 0;
};

// How a real replay spaces its operations: `asap` one after the other; `recorded` waits (busy,
// on steady_clock) so that each operation starts as long after the one before as in the trace.
// Gaps longer than kMaxRecordedGapNs are not waited at all (a program idle for seconds says
// nothing about its allocator); being behind the trace's clock is not made up by waiting less.
enum class TimingMode { asap, recorded };
inline constexpr std::uint64_t kMaxRecordedGapNs = 1'000'000'000;

struct ReplayOptions {
  std::size_t max_series_points = 2000;
  // Emulates a smaller device: the upstream of each device fails beyond this many reserved bytes.
  std::optional<std::uint64_t> memory_limit;
  // A program dies at its first out-of-memory error: the replay of a strategy ends at its first
  // failed request (StrategyResult::stopped_at_first_failure). False replays every request and
  // counts each failure (`--keep-going`). Either way StrategyResult::first_failure describes the
  // first one.
  bool stop_at_first_failure = true;
  // "sim" (default) or a real upstream of make_upstream (strategies/upstream/registry.hpp). A
  // real upstream times every strategy and upstream call into StrategyResult::latency and
  // frees every block it got at the end.
  std::string upstream = "sim";
  bool touch = false;  // real only: write each page of every block handed out (timed: `touch`)
  TimingMode timing = TimingMode::asap;  // real only
  // Simulation only: charge each upstream call and hit to this model (StrategyResult::modelled).
  const CostModel* cost_model = nullptr;
  // Checks after every operation that reserved >= live and that no two live blocks overlap;
  // throws std::logic_error naming the operation otherwise. Slow: for tests.
  bool check_invariants = false;
  // Advanced by the number of operations replayed, in steps, for a progress display.
  std::atomic<std::uint64_t>* progress = nullptr;
  // When set to true, the replay stops early and sets StrategyResult-level `interrupted`.
  const std::atomic<bool>* cancel = nullptr;
  // Simulation and real alike: told what each request cost (ReplayObserver). A replay without
  // one pays a single test per operation; one observer serves one replay at a time.
  ReplayObserver* observer = nullptr;
};

struct ReplayOutcome {
  StrategyResult result;
  bool interrupted = false;
};

// Throws SpecError for a bad spec, UpstreamError for an upstream that cannot be made, and
// std::invalid_argument for options that do not go together (--touch on `sim`, a cost model on
// a real upstream).
ReplayOutcome replay_trace(const ResolvedTrace& trace, std::string_view spec,
                           const ReplayOptions& options = {});

// replay_trace on the simulated upstream, whatever options.upstream says.
ReplayOutcome replay_sim(const ResolvedTrace& trace, std::string_view spec,
                         const ReplayOptions& options = {});

// Each spec replayed with replay_trace on the same trace and options, on up to `threads` threads
// (0: all cores): results[i] is specs[i]'s. `interrupted` when options.cancel was set by the time
// every replay had returned: some results are then cut short or empty, and no report should be
// made of them. Exceptions as replay_trace's, the first one rethrown once every thread stopped.
// The order in which replay_specs and tally_sites start `specs` (a permutation of their
// indices): the models of PyTorch's allocator (pytorch, pytorch-conf) first, as their replays
// take the longest (ordered pools, block splits and merges on most requests) and one started
// last would run alone after the others finished; otherwise as given.
std::vector<std::size_t> replay_order(const std::vector<std::string>& specs);

struct ReplaySetOutcome {
  std::vector<StrategyResult> results;
  bool interrupted = false;
};
ReplaySetOutcome replay_specs(const ResolvedTrace& trace, const std::vector<std::string>& specs,
                              const ReplayOptions& options, std::size_t threads);

}  // namespace alloclab
