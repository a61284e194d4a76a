#pragma once
// What the replay commands print on a terminal, from their results alone: the comparison table
// (replay, merge), the notes on what the numbers rest on, the sweep, advice and calibration
// tables. Each text is whole lines ending in '\n'; a front end prints it or shows it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/summary.hpp"
#include "alloclab/replay/advise.hpp"
#include "alloclab/replay/calibrate.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/replay/pytorch_advice.hpp"
#include "alloclab/replay/sweep.hpp"

namespace alloclab {

// One row per strategy: counters, hit rate, peak and final bytes; latency columns when a real
// replay timed the calls, a modelled-time column with a cost model; a note under a strategy
// whose requests failed; then fidelity_text.
std::string results_table_text(const std::vector<StrategyResult>& results);

// Under the table of a replay of a trace with recorded segment calls: what the recorded
// allocator asked of its upstream, and one line per strategy with a `fidelity` section: how
// many of those calls it made alike and where it first parted from them. Empty otherwise.
std::string fidelity_text(const std::vector<StrategyResult>& results);
// One strategy's line of fidelity_text, without its name: "3/5 allocs and 1/1 frees matched
// (the model made ...); first apart at op N (event E), T s, WHAT on DEVICE stream S: DETAIL",
// or "every call matched (...)". No newline.
std::string fidelity_line(const Fidelity& fidelity);

// What a replay's numbers rest on, printed before its table (replay, sweep, advise): a trace
// without run markers is one run; a trace with anomalies was repaired to be replayed (a free of
// an unknown address skipped, a missed free supplied), with a pointer to `alloclab info`.
// Empty when there is nothing to say.
std::string replay_notes_text(const TraceSummary& summary);

// A live report's `program` object (`alloclab run`) in one line: "program: exit 0, 1.234 s wall,
// ... peak RSS 12.3 MiB". No newline.
std::string program_line(const nlohmann::json& program);

// `alloclab sweep`: how many points (and which shard), then one row per point replayed.
std::string sweep_table_text(const SweepRun& run);

// `alloclab advise`: the target, one row per family (baseline, recommendation, what it saves),
// then advice_sentence of each family as one paragraph.
std::string advice_text(const std::vector<Advice>& advice, double target);

// `alloclab advise --pytorch`: what was replayed (and under which limit), one row per
// configuration, then the picks, each a comment line saying why and a line to paste into a shell
// (pytorch_conf_line), and the default's line to compare.
std::string pytorch_advice_text(const PyTorchAdvice& advice);

// `alloclab calibrate`: latency by size (median and p99 of allocate and free) and the cost of a
// cached allocate+free.
std::string calibration_text(const Calibration& calibration);

// `alloclab merge`: the merged report's results as the comparison table, and a line saying why
// a partial report is partial. Throws InputError naming `source` for a result it cannot read.
std::string merged_report_text(const nlohmann::json& merged, const std::string& source);

}  // namespace alloclab
