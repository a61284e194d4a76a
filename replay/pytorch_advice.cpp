// The grid of pytorch_advice.hpp, its replays and its picks.
#include "alloclab/replay/pytorch_advice.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "alloclab/replay/first_failure.hpp"
#include "alloclab/replay/parallel.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/pytorch.hpp"

namespace alloclab {
namespace {

// The grid's values (docs/cli.md, `advise --pytorch`, says why these).
const char* const kRoundings[] = {"2", "4", "8", "16", "[256:1,512:2,1024:4,>:8]", "[64:8,>:4]"};
constexpr std::uint64_t kMaxSplitSizesMb[] = {20, 64, 128, 256, 512, 1024, 2048, 4096};
constexpr std::uint64_t kMaxNonSplitRoundingsMb[] = {64, 256};
const char* const kGarbageCollectionThresholds[] = {"0.6", "0.8"};
const char* const kExpandable = "expandable_segments:True";

// What a rounding does to this trace: every distinct request size, rounded.
struct Rounding {
  std::string conf;  // "" or "roundup_power2_divisions:N"
  std::vector<std::uint64_t> rounded;
  std::uint64_t largest_rounded = 0;
  std::uint64_t largest_segment = 0;  // get_allocation_size of the largest rounded request
};

Rounding rounding_of(std::string conf, const std::vector<std::uint64_t>& sizes) {
  const PyTorchOptions options = parse_pytorch_alloc_conf(conf);
  Rounding r;
  r.conf = std::move(conf);
  r.rounded.reserve(sizes.size());
  for (std::uint64_t s : sizes) {
    const std::uint64_t rounded = pytorch::round_size(s, options.divisions_for(s));
    r.rounded.push_back(rounded);
    r.largest_rounded = std::max(r.largest_rounded, rounded);
  }
  // get_allocation_size grows with the request, so the largest request makes the largest segment.
  if (!sizes.empty()) r.largest_segment = pytorch::allocation_size(r.largest_rounded);
  return r;
}

// Every request size of the trace, once, ascending; sizes the model refuses outright (above
// kMaxRequest) fail under every setting alike and are left out.
std::vector<std::uint64_t> distinct_sizes(const ResolvedTrace& trace) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s : trace.alloc_size)
    if (s <= pytorch::kMaxRequest) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::string join(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + "," + b;
}

std::string max_split(std::uint64_t mb) {
  return "max_split_size_mb:" + std::to_string(mb);
}

class GridBuilder {
 public:
  explicit GridBuilder(std::optional<std::uint64_t> memory_limit) : limit_(memory_limit) {}
  void add(const std::string& conf, std::size_t keys, bool memory_fraction = false) {
    PyTorchConfig c;
    c.conf = conf;
    c.keys = keys;
    c.memory_fraction = memory_fraction;
    c.spec = "pytorch-conf:\"" + conf + "\"";
    if (memory_fraction)
      c.spec += ",per_process_memory_fraction=1,device_memory=" + std::to_string(*limit_);
    grid_.push_back(std::move(c));
  }
  std::vector<PyTorchConfig> take() { return std::move(grid_); }

 private:
  std::optional<std::uint64_t> limit_;
  std::vector<PyTorchConfig> grid_;
};

bool fits(std::uint64_t mb, const Rounding& r) {
  return mb * pytorch::kMiB <= r.largest_segment;
}

// "a < b" for the picks: by `first`, then `second`, then grid order.
bool better(const PyTorchAdvice& a, std::size_t i, std::size_t j, std::uint64_t Metrics::*first,
            std::uint64_t Metrics::*second) {
  const Metrics& x = a.trials[i].metrics;
  const Metrics& y = a.trials[j].metrics;
  return std::tie(x.*first, x.*second, i) < std::tie(y.*first, y.*second, j);
}

std::optional<std::size_t> pick(const PyTorchAdvice& a, std::uint64_t Metrics::*first,
                                std::uint64_t Metrics::*second) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    if (a.trials[i].oom()) continue;
    if (!best || better(a, i, *best, first, second)) best = i;
  }
  return best;
}

std::optional<std::size_t> furthest(const PyTorchAdvice& a) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    const PyTorchTrial& t = a.trials[i];
    if (!t.oom()) return std::nullopt;
    if (!best) {
      best = i;
      continue;
    }
    const PyTorchTrial& b = a.trials[*best];
    // Later first failure wins; then less reserved; then the earlier in the grid (kept).
    if (t.first_failure->op_index > b.first_failure->op_index ||
        (t.first_failure->op_index == b.first_failure->op_index &&
         t.metrics.peak_reserved_bytes < b.metrics.peak_reserved_bytes))
      best = i;
  }
  return best;
}

nlohmann::json optional_index(const std::optional<std::uint64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json trial_json(const PyTorchTrial& t) {
  nlohmann::json j = {{"conf", t.config.conf},     {"line", pytorch_conf_line(t.config.conf)},
                      {"keys", t.config.keys},     {"memory_fraction", t.config.memory_fraction},
                      {"strategy", t.config.spec}, {"oom", t.oom()}};
  j["first_failure_event_index"] =
      t.first_failure ? optional_index(t.first_failure->event_index) : nlohmann::json(nullptr);
  j.update(metrics_json(t.metrics));
  j["num_alloc_retries"] = t.counter("num_alloc_retries");
  j["num_ooms"] = t.counter("num_ooms");
  j["reserved_per_live"] = t.reserved_per_live();
  j["first_failure"] =
      t.first_failure ? first_failure_json(*t.first_failure) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json pick_json(const PyTorchAdvice& a, const std::optional<std::size_t>& index) {
  if (!index) return nullptr;
  const PyTorchConfig& c = a.trials[*index].config;
  return {{"index", *index}, {"conf", c.conf}, {"line", pytorch_conf_line(c.conf)}};
}

}  // namespace

std::vector<PyTorchConfig> pytorch_advice_grid(const ResolvedTrace& trace,
                                               std::optional<std::uint64_t> memory_limit) {
  const std::vector<std::uint64_t> sizes = distinct_sizes(trace);
  const Rounding none = rounding_of("", sizes);
  std::vector<Rounding> roundings;
  for (const char* value : kRoundings) {
    Rounding r = rounding_of(std::string("roundup_power2_divisions:") + value, sizes);
    const auto same = [&](const Rounding& o) { return o.rounded == r.rounded; };
    if (same(none) || std::any_of(roundings.begin(), roundings.end(), same)) continue;
    roundings.push_back(std::move(r));
  }
  // garbage_collect_cached_blocks frees whole segments of the large pool only.
  const bool collect = memory_limit && none.largest_rounded > pytorch::kSmallSize;

  GridBuilder grid(memory_limit);
  grid.add("", 0);
  for (const Rounding& r : roundings) grid.add(r.conf, 1);
  for (std::uint64_t mb : kMaxSplitSizesMb)
    if (fits(mb, none)) grid.add(max_split(mb), 1);
  if (collect)
    for (const char* t : kGarbageCollectionThresholds)
      grid.add(std::string("garbage_collection_threshold:") + t, 1, true);
  for (std::uint64_t mb : kMaxSplitSizesMb)
    for (const Rounding& r : roundings)
      if (fits(mb, r)) grid.add(join(max_split(mb), r.conf), 2);
  for (std::uint64_t mb : kMaxSplitSizesMb)
    if (fits(mb, none) && none.largest_rounded >= mb * pytorch::kMiB)
      for (std::uint64_t n : kMaxNonSplitRoundingsMb)
        grid.add(max_split(mb) + ",max_non_split_rounding_mb:" + std::to_string(n), 2);
  if (collect)
    for (const char* t : kGarbageCollectionThresholds)
      for (std::uint64_t mb : kMaxSplitSizesMb)
        if (fits(mb, none))
          grid.add(std::string("garbage_collection_threshold:") + t + "," + max_split(mb), 2, true);
  // Segments that grow page by page instead of one cudaMalloc per segment: a different layout
  // for any trace that asks for memory, alone and with each rounding kept above.
  if (!sizes.empty()) {
    grid.add(kExpandable, 1);
    for (const Rounding& r : roundings) grid.add(join(kExpandable, r.conf), 2);
  }
  return grid.take();
}

std::string pytorch_conf_line(const std::string& conf) {
  const bool plain = std::all_of(conf.begin(), conf.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == ':' || c == ',' || c == '.';
  });
  return "PYTORCH_CUDA_ALLOC_CONF=" + (plain ? conf : "'" + conf + "'");
}

std::uint64_t PyTorchTrial::counter(const std::string& name) const {
  const auto it = counters.find(name);
  return it == counters.end() ? 0 : it->second;
}

double PyTorchTrial::reserved_per_live() const {
  return metrics.peak_live_bytes == 0 ? 0.0
                                      : static_cast<double>(metrics.peak_reserved_bytes) /
                                            static_cast<double>(metrics.peak_live_bytes);
}

PyTorchAdviceOutcome advise_pytorch(const ResolvedTrace& trace,
                                    const std::vector<PyTorchConfig>& grid,
                                    const PyTorchAdviceOptions& options) {
  if (grid.empty() || !grid.front().conf.empty())
    throw std::invalid_argument("advise --pytorch: the grid must start with the default");
  PyTorchAdviceOutcome outcome;
  PyTorchAdvice& a = outcome.advice;
  a.memory_limit = options.memory_limit;
  const auto cancelled = [&] { return options.cancel && options.cancel->load(); };

  ReplayOptions full;
  full.memory_limit = options.memory_limit;
  full.progress = options.progress;
  full.cancel = options.cancel;
  ReplayOptions lean = full;
  lean.max_series_points = 1;  // trials need counters only

  // Each job keeps only what its trial needs: runs and series of every trial held together would
  // grow with the trace times the grid.
  a.trials.resize(grid.size());
  parallel_for(grid.size(), options.threads, [&](std::size_t i) {
    StrategyResult r = replay_sim(trace, grid[i].spec, lean).result;
    PyTorchTrial& t = a.trials[i];
    t.config = grid[i];
    t.metrics = r.metrics;
    t.counters = std::move(r.strategy_counters);
    t.first_failure = r.first_failure;
  });
  if (cancelled()) {
    outcome.interrupted = true;
    return outcome;
  }

  a.least_reserved = pick(a, &Metrics::peak_reserved_bytes, &Metrics::upstream_allocs);
  a.fewest_upstream_allocs = pick(a, &Metrics::upstream_allocs, &Metrics::peak_reserved_bytes);
  a.furthest = furthest(a);

  std::vector<std::size_t> shown = {0};
  for (const auto& p : {a.least_reserved, a.fewest_upstream_allocs, a.furthest})
    if (p && std::find(shown.begin(), shown.end(), *p) == shown.end()) shown.push_back(*p);
  a.results.resize(shown.size());
  parallel_for(shown.size(), options.threads, [&](std::size_t k) {
    a.results[k] = replay_sim(trace, grid[shown[k]].spec, full).result;
  });
  if (cancelled()) {
    outcome.interrupted = true;
    return outcome;
  }
  for (std::size_t k = 0; k < shown.size(); ++k)
    if (a.results[k].metrics != a.trials[shown[k]].metrics)
      throw std::logic_error("advise --pytorch: the full replay of " + grid[shown[k]].spec +
                             " differs from its first (replay is not deterministic?)");
  return outcome;
}

nlohmann::json pytorch_advice_json(const PyTorchAdvice& a) {
  nlohmann::json trials = nlohmann::json::array();
  for (const PyTorchTrial& t : a.trials) trials.push_back(trial_json(t));
  nlohmann::json fraction = nullptr;
  if (a.memory_limit)
    fraction = "per_process_memory_fraction=1,device_memory=" + std::to_string(*a.memory_limit);
  return {
      {"memory_limit_bytes", optional_index(a.memory_limit)},
      {"memory_fraction", fraction},
      {"not_modelled", {"backend:cudaMallocAsync"}},
      {"configurations", trials},
      {"all_oom", a.all_oom()},
      {"default", pick_json(a, a.trials.empty() ? std::nullopt : std::optional<std::size_t>(0))},
      {"least_reserved", pick_json(a, a.least_reserved)},
      {"fewest_upstream_allocs", pick_json(a, a.fewest_upstream_allocs)},
      {"furthest", pick_json(a, a.furthest)}};
}

nlohmann::json make_pytorch_advice_report(const TraceSummary& trace, const PyTorchAdvice& advice,
                                          const ReportContext& context) {
  nlohmann::json report = make_report(trace, advice.results, context);
  report["pytorch_advice"] = pytorch_advice_json(advice);
  return report;
}

}  // namespace alloclab
