#pragma once
// Parameter sweeps: one spec template such as `fifo-shrink:max={1MiB..4GiB:x2}` stands for many
// spec strings (its points); `alloclab sweep` replays them all, optionally one shard of them per
// machine, and `alloclab merge` joins the shard reports. docs/report-schema.md ("Sweep and
// advise reports") documents the forms and the report.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {

// Most points one template (and one sweep, all templates together) may expand to.
inline constexpr std::size_t max_sweep_points = 100'000;

// Expands every brace group of `spec_template`, cartesian product in order: the leftmost group
// varies slowest. Text outside groups is copied as is; a template without groups is one point.
//   {a..b:xK}  a, a*K, a*K^2, ... while <= b (K > 1, may be a decimal such as 1.5; each value is
//              rounded to whole bytes and a value equal to the one before it is skipped)
//   {a..b:+K}  a, a+K, a+2K, ... while <= b (K > 0)
//   {a..b}     a, a+1, ... for plain whole numbers only
//   {x,y,z}    the items verbatim (an item may be empty: `exact{,:round=256}`)
// a, b and K are sizes as parse_size reads them (`{64MiB..1GiB:+64MiB}`); when a unit appears
// in a, b or a `+` step the values are printed by size_spec (units.hpp), otherwise as plain whole
// numbers
// (`max_items={1024..4096:x2}` stays 1024, 2048, 4096). When a and b are plain decimals and one of
// a, b (or K of a `+` range) has a fraction (`max_ratio={1.0..2.0:+0.25}`), the range is of decimal
// numbers, printed in their shortest form (1, 1.25, 1.5). Throws SpecError naming the group and
// listing the forms on unbalanced or nested braces, an empty group, a > b, K <= 1 for x, K == 0 for
// +, and more than max_sweep_points points.
std::vector<std::string> expand_sweep(std::string_view spec_template);

// Expands every template in order and concatenates the points (the point index of a sweep is
// the position in this list). Throws SpecError, naming the template, as expand_sweep does, and
// when all templates together give more than max_sweep_points points.
std::vector<std::string> expand_sweeps(const std::vector<std::string>& templates);

// Shard i of n takes the points k with k % n == i.
struct Shard {
  std::size_t index = 0;
  std::size_t count = 1;
  bool operator==(const Shard&) const = default;
};
// "i/n" with whole numbers 0 <= i < n. Throws SpecError otherwise.
Shard parse_shard(std::string_view text);
// The point indices of `shard` among `total` points, ascending.
std::vector<std::size_t> shard_points(std::size_t total, const Shard& shard);

// One sweep replay (the whole of it, or one shard).
struct SweepRun {
  std::vector<std::string> templates;
  std::vector<std::string> points;  // every point of every template, in order
  Shard shard;
  std::vector<std::size_t> point_indices;  // the points this run replayed, ascending
  std::vector<StrategyResult> results;     // results[k] is points[point_indices[k]]
  bool interrupted = false;                // options.cancel was set: results are cut short
};

// Expands `templates` and checks that every point is a valid spec (SpecError naming the point
// otherwise), before anything is replayed; selects the points of `shard`. No results yet.
SweepRun plan_sweep(const std::vector<std::string>& templates, const Shard& shard);
// Replays the planned points on `threads` threads (0: all cores) with `options` (progress and
// cancel included), filling run.results and run.interrupted.
void replay_sweep(const ResolvedTrace& trace, SweepRun& run, const ReplayOptions& options,
                  std::size_t threads);
// plan_sweep, then replay_sweep.
SweepRun run_sweep(const ResolvedTrace& trace, const std::vector<std::string>& templates,
                   const Shard& shard, const ReplayOptions& options, std::size_t threads);

// Throws SpecError naming the first point that make_strategy refuses.
void check_specs(const std::vector<std::string>& specs);

// The "sweep" object of a sweep report.
nlohmann::json sweep_json(const SweepRun& run);
// make_report's report plus the "sweep" object.
nlohmann::json make_sweep_report(const TraceSummary& trace, const SweepRun& run,
                                 const ReportContext& context);

// write_results_csv with a leading `point` column (the point index).
void write_sweep_csv(std::ostream& out, const SweepRun& run);

}  // namespace alloclab
