#pragma once
// "What default max size?": for a bounded cache family (fifo-shrink, exact or best-fit match),
// the smallest `max` that keeps a target share of the unbounded cache's hit rate, found by a
// fixed, deterministic search of simulation replays. Logic only; `alloclab advise` prints.
//
// The search, for one family with unbounded baseline B (exact, or best-fit):
//  1. replay B: hit rate H, peak reserved R. H == 0: no limit can help (nothing to keep).
//  2. replay max = 64KiB, 128KiB, ... up to the first power of two >= R (in parallel). At that
//     last power the cache never reaches its limit, so it keeps H: some power always passes.
//     A value passes when its hits >= target * (B's hits).
//  3. P = the smallest passing power. If P > 64KiB, bisect between P/2 (fails) and P (passes)
//     until they are one granule apart: granule = P/64 rounded down to a multiple of 4KiB (at
//     least 4KiB). Each step replays the midpoint (a multiple of the granule) and keeps the half
//     whose low end fails and high end passes.
//  4. The answer is the high end, printed as a spec with size_spec and replayed once more from
//     that text (the re-check; its numbers are the ones reported).
// Hit rate is not monotonic in `max` (a FIFO cache can do better with less room), so a smaller
// passing value may exist where the bisection did not look: the answer is the smallest limit
// this search found that meets the target, not a global minimum.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/replay/report.hpp"

namespace alloclab {

// A bounded strategy family and its unbounded baseline: `spec_prefix` + "max=SIZE" is a point.
struct AdviceFamily {
  std::string name;         // "fifo-shrink", "fifo-shrink:match=best-fit"
  std::string baseline;     // "exact", "best-fit"
  std::string spec_prefix;  // "fifo-shrink:", "fifo-shrink:match=best-fit,"
  std::string spec(std::uint64_t max_bytes) const;
};

// fifo-shrink (match=exact, baseline exact) and fifo-shrink:match=best-fit (baseline best-fit).
std::vector<AdviceFamily> default_advice_families();

struct AdviseOptions {
  double target = 0.99;     // share of the baseline's hit rate to keep, in (0, 1]
  std::size_t threads = 0;  // 0: all cores
  std::atomic<std::uint64_t>* progress = nullptr;  // as ReplayOptions::progress
  const std::atomic<bool>* cancel = nullptr;       // as ReplayOptions::cancel
};

inline constexpr std::uint64_t advise_first_power = 64 * 1024;
inline constexpr std::uint64_t advise_granule_floor = 4 * 1024;

// One replay of the search.
struct AdviceCandidate {
  std::uint64_t max_bytes = 0;
  std::string phase;  // "power", "bisect" or "check"
  Metrics metrics;
  bool meets_target = false;
};

struct Advice {
  AdviceFamily family;
  double target = 0.99;
  StrategyResult baseline;   // H = baseline.metrics.hit_rate(), R = peak_reserved_bytes
  bool limit_helps = false;  // false when H == 0
  std::optional<std::uint64_t> max_bytes;   // the answer
  std::string recommended;                  // family.spec(*max_bytes), "" when none
  StrategyResult recommended_result;        // the re-check replay of `recommended`
  std::int64_t saved_bytes = 0;             // R - recommended peak reserved (may be < 0)
  double saved_fraction = 0;                // saved_bytes / R
  double hit_rate_kept = 0;                 // recommended hit rate / H
  std::size_t replays = 0;                  // baseline included
  std::vector<AdviceCandidate> candidates;  // every limit replayed, in search order
};

// Runs the search for every family (families advance together, their replays in parallel).
// Throws SpecError for a bad family or target. When options.cancel is set during the search,
// returns what it has with `interrupted` set.
struct AdviseOutcome {
  std::vector<Advice> advice;
  bool interrupted = false;
};
AdviseOutcome advise(const ResolvedTrace& trace, const std::vector<AdviceFamily>& families,
                     const AdviseOptions& options);

// Upper bound on the replays advise() does for one family on this trace (for a progress bar).
std::size_t advise_replay_budget(const ResolvedTrace& trace);

// One paragraph of plain language, e.g. "fifo-shrink:max=48MiB keeps 99.2% of exact's hit rate
// (87.1% vs 87.9%) and reserves 48.0 MiB instead of 112 MiB (saves 57%)."
std::string advice_sentence(const Advice& advice);

nlohmann::json advice_json(const Advice& advice);
// schema_version, tool, machine, mode, command_line, trace, "target", "advice": [...] and
// "results" (each family's baseline and recommended replay, as in a replay report).
nlohmann::json make_advice_report(const TraceSummary& trace, const std::vector<Advice>& advice,
                                  double target, const ReportContext& context);

}  // namespace alloclab
