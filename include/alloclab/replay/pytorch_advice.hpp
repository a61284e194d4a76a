#pragma once
// "Which PYTORCH_CUDA_ALLOC_CONF would have avoided this OOM, or used least memory?": a fixed grid
// of settings of the `pytorch` model, each replayed on the trace (in parallel, under an optional
// memory limit), and the two picks among those that avoid running out of memory. Logic only;
// `alloclab advise --pytorch` prints. docs/cli.md (`advise --pytorch`) says what the grid holds
// and why; docs/report-schema.md documents the JSON.
//
// The grid, in this order (the order breaks ties):
//  0. when the trace says which settings it was recorded with (a snapshot's allocator_settings,
//     recorded_pytorch_conf below): those, "as recorded", then the default unless they are it;
//  1. the default (an empty conf);
//  2. roundup_power2_divisions alone: 2, 4, 8, 16, [256:1,512:2,1024:4,>:8] and [64:8,>:4];
//  3. max_split_size_mb alone: 20, 64, 128, 256, 512, 1024, 2048, 4096;
//  4. with a memory limit: garbage_collection_threshold alone: 0.6, 0.8;
//  5. every max_split_size_mb of 3 with every rounding of 2;
//  6. every max_split_size_mb of 3 with max_non_split_rounding_mb 64 and 256;
//  7. with a memory limit: every garbage_collection_threshold of 4 with every max_split_size_mb
//     of 3;
//  8. expandable_segments:True alone, with every rounding of 2, with every max_split_size_mb of
//     3, and (with a memory limit) with every garbage_collection_threshold of 4.
// Pruned to what can change a replay of this trace:
//  - a rounding that rounds every request of the trace as the default does, or as a rounding
//    before it in the list does, is left out (the rounded size is all the model uses of it);
//  - a max_split_size_mb above the largest segment the trace can make (under that setting's
//    rounding) is left out: no block is then ever that large, so the option does nothing;
//  - max_non_split_rounding_mb is tried only where some rounded request is >= max_split_size
//    (the only requests it applies to);
//  - garbage_collection_threshold only when some request goes to the large pool (> 1 MiB), the
//    only pool it collects;
//  - with expandable segments, a max_split_size_mb above every request of the trace in whole
//    pages (the most one segment can map) is left out, and garbage_collection_threshold is
//    tried only when the trace starts from recorded segments: collection frees whole fixed
//    segments only, and with expandable segments the adopted ones are the only fixed ones.
// garbage_collection_threshold acts only under a memory fraction (PyTorch collects only once
// torch.cuda.set_per_process_memory_fraction was called): its settings are replayed with
// per_process_memory_fraction=1 and device_memory = the memory limit, which fails a segment
// exactly where the limited upstream would.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/replay/report.hpp"

namespace alloclab {

// One setting of the grid.
struct PyTorchConfig {
  std::string conf;              // the PYTORCH_CUDA_ALLOC_CONF value; "" for the default
  std::size_t keys = 0;          // how many options it sets
  bool memory_fraction = false;  // replayed with per_process_memory_fraction=1 (see above)
  bool recorded = false;         // the settings the trace was recorded with (grid row 0)
  std::string spec;              // the `pytorch-conf` spec replayed
};

// The settings a PyTorch snapshot was taken with, as a conf of the model.
struct RecordedPyTorchConf {
  std::string conf;  // "" when they are PyTorch's defaults
  // What the conf cannot say, each as "key=value (why)": a setting the model lacks, or one it
  // cannot take as written. Left out of `conf`; the CLI names them in one warning.
  std::vector<std::string> not_expressed;
};
// Translates a snapshot's `allocator_settings` (torch.cuda.memory._snapshot(): the structured
// values max_split_size (bytes, -1 for none), garbage_collection_threshold (0 for off),
// expandable_segments, roundup_power2_divisions ({"1": n, "2": n, ... "32768": n}, one entry
// per interval of request sizes, keyed by its lower bound in MiB), release_lock_on_cudamalloc,
// the pinned_* host allocator's, and the PYTORCH_CUDA_ALLOC_CONF string, which alone carries
// max_non_split_rounding_mb and backend). A structured value wins over the string's.
// garbage_collection_threshold acts only under a memory fraction, so without `memory_limit` it
// is not expressed. nullopt when `settings` is not an object or is empty (nothing recorded).
std::optional<RecordedPyTorchConf> recorded_pytorch_conf(const nlohmann::json& settings,
                                                         std::optional<std::uint64_t> memory_limit);
// The snapshot settings in `metadata` (a Trace's: torch_snapshot.allocator_settings), or null.
const nlohmann::json& recorded_allocator_settings(const nlohmann::json& metadata);

// The grid above for this trace. `memory_limit`: the device size (replay --memory-limit).
// `recorded`: recorded_pytorch_conf's conf, the first row; a later row that configures the
// model the same way is left out.
std::vector<PyTorchConfig> pytorch_advice_grid(const ResolvedTrace& trace,
                                               std::optional<std::uint64_t> memory_limit,
                                               const std::optional<std::string>& recorded = {});

// `PYTORCH_CUDA_ALLOC_CONF=CONF`, CONF in single quotes when a shell would read it otherwise
// (`[`, `]`, `>`), so that the line can be pasted into a shell as it is.
std::string pytorch_conf_line(const std::string& conf);

struct PyTorchAdviceOptions {
  std::optional<std::uint64_t> memory_limit;        // as ReplayOptions::memory_limit
  std::size_t threads = 0;                          // 0: all cores
  std::atomic<std::uint64_t>* progress = nullptr;   // as ReplayOptions::progress
  const std::atomic<bool>* cancel = nullptr;        // as ReplayOptions::cancel
  std::vector<std::string> recorded_not_expressed;  // copied into PyTorchAdvice
};

// One configuration and what its replay gave (counters only: no runs or series).
struct PyTorchTrial {
  PyTorchConfig config;
  Metrics metrics;
  std::map<std::string, std::uint64_t> counters;  // num_alloc_retries, num_ooms
  std::optional<FirstFailure> first_failure;      // set: it ran out of memory (and stopped there)
  bool oom() const { return first_failure.has_value(); }
  std::uint64_t counter(const std::string& name) const;
  // peak reserved / peak live (0 when nothing was live), the replay table's `res/live`.
  double reserved_per_live() const;
};

struct PyTorchAdvice {
  std::optional<std::uint64_t> memory_limit;
  std::vector<PyTorchTrial> trials;  // the grid, in order; trials[0] is the baseline
  // The settings the recorded settings could not express (RecordedPyTorchConf::not_expressed).
  std::vector<std::string> recorded_not_expressed;
  // Indices into `trials`, among those that do not run out of memory: the least peak reserved
  // (ties: fewer upstream allocations, then the earlier in the grid), and the fewest upstream
  // allocations (cudaMalloc calls; ties: less peak reserved, then the earlier). Both unset when
  // every trial runs out of memory.
  std::optional<std::size_t> least_reserved;
  std::optional<std::size_t> fewest_upstream_allocs;
  // When every trial runs out of memory: the one whose first failure came latest (ties: less
  // peak reserved, then the earlier in the grid).
  std::optional<std::size_t> furthest;
  // Full replays (runs and series, as in a replay report) of the baseline and of each pick, in
  // that order, each once; their counters equal their trial's.
  std::vector<StrategyResult> results;
  bool all_oom() const { return !trials.empty() && !least_reserved; }
  // The index of the default (an empty conf) in `trials`, if it is there.
  std::optional<std::size_t> default_index() const;
};

// Replays every configuration of `grid` (pytorch_advice_grid's; the first must be the default
// or the recorded settings)
// in parallel, picks, then replays the default and the picks again in full: at most
// grid.size() + 3 replays. Throws SpecError for a configuration the model refuses, and
// std::logic_error if a full replay disagrees with its trial (replay is not deterministic).
// When options.cancel is set meanwhile, returns with `interrupted` set and no picks.
struct PyTorchAdviceOutcome {
  PyTorchAdvice advice;
  bool interrupted = false;
};
PyTorchAdviceOutcome advise_pytorch(const ResolvedTrace& trace,
                                    const std::vector<PyTorchConfig>& grid,
                                    const PyTorchAdviceOptions& options);

// The "pytorch_advice" object of the report.
nlohmann::json pytorch_advice_json(const PyTorchAdvice& advice);
// schema_version, tool, machine, mode, command_line, trace, "results" (advice.results, as in a
// replay report) and "pytorch_advice".
nlohmann::json make_pytorch_advice_report(const TraceSummary& trace, const PyTorchAdvice& advice,
                                          const ReportContext& context);

}  // namespace alloclab
