// The grid of pytorch_advice.hpp, its replays and its picks.
#include "alloclab/replay/pytorch_advice.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
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

// --- The recorded settings ---

// The divisions of each interval of request sizes (pytorch::roundup_interval), 1 written as 0
// (both round to 512 bytes only).
std::vector<std::uint64_t> interval_divisions(const PyTorchOptions& o) {
  std::vector<std::uint64_t> divisions;
  for (std::size_t k = 0; k < pytorch::kRoundupIntervals; ++k) {
    const std::uint64_t d = o.divisions_for(std::uint64_t{1} << (pytorch::kRoundupFirstLog2 + k));
    divisions.push_back(d == 1 ? 0 : d);
  }
  return divisions;
}

// PyTorch's defaults of the settings the model does not have: a recorded value other than these
// changed something the conf cannot say.
const std::pair<const char*, nlohmann::json> kUnmodelledDefaults[] = {
    {"pinned_num_register_threads", 1},      {"pinned_use_cuda_host_register", false},
    {"pinned_use_hip_host_register", false}, {"pinned_use_background_threads", false},
    {"pinned_reserve_segment_size_mb", 0},   {"graph_capture_record_stream_reuse", false},
};

// The structured key of the snapshot's settings that says what a conf key says.
std::string structured_key(const std::string& conf_key) {
  if (conf_key == "max_split_size_mb") return "max_split_size";
  if (conf_key == "release_lock_on_hipmalloc") return "release_lock_on_cudamalloc";
  return conf_key;
}

std::string shown(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

class RecordedReader {
 public:
  explicit RecordedReader(std::optional<std::uint64_t> memory_limit) : limit_(memory_limit) {}

  // One structured value; false when the key is not one of them.
  bool structured(const std::string& key, const nlohmann::json& value) {
    if (key == "max_split_size") {
      max_split(value);
    } else if (key == "garbage_collection_threshold") {
      threshold(value);
    } else if (key == "expandable_segments") {
      if (!value.is_boolean()) return refuse(key, value, "expected true or false");
      if (value.get<bool>()) expandable_ = "expandable_segments:True";
    } else if (key == "roundup_power2_divisions") {
      divisions(value);
    } else if (key == "release_lock_on_cudamalloc" || key == "trace_alloc_max_entries" ||
               key == "max_entries" || key == "trace_alloc_record_context") {
      // Whether a lock is held during cudaMalloc, and how much history is recorded: no effect
      // on which memory is used.
    } else {
      for (const auto& [name, fallback] : kUnmodelledDefaults)
        if (key == name) {
          if (value != fallback) refuse(key, value, "not modelled");
          return true;
        }
      return false;
    }
    return true;
  }

  // One item `key:value` of the PYTORCH_CUDA_ALLOC_CONF string whose key has no structured value.
  void conf_item(const std::string& key, const std::string& item) {
    PyTorchOptions o;
    try {
      o = parse_pytorch_alloc_conf(item);
    } catch (const SpecError& e) {
      not_expressed_.push_back(item + " (" + e.what() + ")");
      return;
    }
    if (key == "max_split_size_mb" && o.max_split_size != pytorch::kUnlimited)
      max_split_ = item;
    else if (key == "max_non_split_rounding_mb" &&
             o.max_non_split_rounding != pytorch::kLargeBuffer)
      max_non_split_ = item;
    else if (key == "garbage_collection_threshold")
      gc(item);
    else if (key == "roundup_power2_divisions")
      rounding_ = item;
    else if (key == "expandable_segments" && o.expandable_segments)
      expandable_ = item;
  }

  RecordedPyTorchConf take() {
    RecordedPyTorchConf r;
    // The grid's order of keys, so that equal settings read alike.
    for (const std::string* item : {&gc_, &expandable_, &max_split_, &max_non_split_, &rounding_})
      if (!item->empty()) r.conf += (r.conf.empty() ? "" : ",") + *item;
    r.not_expressed = std::move(not_expressed_);
    return r;
  }

 private:
  bool refuse(const std::string& key, const nlohmann::json& value, const std::string& why) {
    not_expressed_.push_back(key + "=" + shown(value) + " (" + why + ")");
    return true;
  }

  void max_split(const nlohmann::json& value) {
    // size_t's maximum, PyTorch's "no limit", is -1 once pickled as a signed integer.
    if ((value.is_number_integer() && value.get<std::int64_t>() == -1) ||
        (value.is_number_unsigned() && value.get<std::uint64_t>() == pytorch::kUnlimited))
      return;
    if (value.is_number_unsigned() ||
        (value.is_number_integer() && value.get<std::int64_t>() > 0)) {
      const auto bytes = value.get<std::uint64_t>();
      if (bytes % pytorch::kMiB == 0 && bytes >= pytorch::kLargeBuffer) {
        max_split_ = "max_split_size_mb:" + std::to_string(bytes / pytorch::kMiB);
        return;
      }
    }
    refuse("max_split_size", value, "not a whole number of MiB from 20 up");
  }

  void threshold(const nlohmann::json& value) {
    if (!value.is_number() || value.get<double>() < 0 || value.get<double>() >= 1) {
      refuse("garbage_collection_threshold", value, "expected a fraction in [0, 1)");
      return;
    }
    const double t = value.get<double>();
    if (t == 0) return;  // PyTorch's "off"
    char text[64];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, t, std::chars_format::fixed);
    if (ec != std::errc()) {
      refuse("garbage_collection_threshold", value, "not a decimal fraction");
      return;
    }
    gc("garbage_collection_threshold:" + std::string(text, end));
  }

  void gc(const std::string& item) {
    try {
      parse_pytorch_alloc_conf(item);
    } catch (const SpecError& e) {
      not_expressed_.push_back(item + " (" + e.what() + ")");
      return;
    }
    if (!limit_) {
      not_expressed_.push_back(item +
                               " (PyTorch collects only under a memory fraction: give "
                               "--memory-limit)");
      return;
    }
    gc_ = item;
  }

  // {"1": n, "2": n, ..., "32768": n}: the divisions of interval log2(key), as PyTorch's list
  // form `[1:n,2:n,...]` sets them.
  void divisions(const nlohmann::json& value) {
    if (!value.is_object()) {
      refuse("roundup_power2_divisions", value, "expected an object");
      return;
    }
    std::vector<std::uint64_t> list(pytorch::kRoundupIntervals, 0);
    for (const auto& [bound_text, n] : value.items()) {
      std::uint64_t bound = 0;
      const auto [ptr, ec] =
          std::from_chars(bound_text.data(), bound_text.data() + bound_text.size(), bound);
      if (ec != std::errc() || ptr != bound_text.data() + bound_text.size() ||
          !std::has_single_bit(bound) || !n.is_number_integer() || n.get<std::int64_t>() < 0) {
        refuse("roundup_power2_divisions", value, "expected powers of two mapped to divisions");
        return;
      }
      const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(std::countr_zero(bound)),
                                                  pytorch::kRoundupIntervals - 1);
      // 1 division rounds as 0 does (to 512 bytes only).
      list[k] = n.get<std::uint64_t>() == 1 ? 0 : n.get<std::uint64_t>();
    }
    if (std::all_of(list.begin(), list.end(), [](std::uint64_t d) { return d == 0; })) return;
    std::string item = "roundup_power2_divisions:" + division_text(list);
    try {
      if (interval_divisions(parse_pytorch_alloc_conf(item)) != list)
        throw std::logic_error("advise --pytorch: " + item + " does not read back as recorded");
    } catch (const SpecError& e) {
      refuse("roundup_power2_divisions", value, e.what());
      return;
    }
    rounding_ = std::move(item);
  }

  // The shortest text PyTorch reads back as `list`: one value when all are equal, else the list
  // form, each run of equal values as few items as its rules allow (the first item also fills
  // every interval below it, `>` every one from the previous item's on).
  static std::string division_text(const std::vector<std::uint64_t>& list) {
    if (std::all_of(list.begin(), list.end(), [&](std::uint64_t d) { return d == list[0]; }))
      return std::to_string(list[0]);
    const auto item = [](std::size_t k, std::uint64_t d) {
      return std::to_string(std::uint64_t{1} << k) + ":" + std::to_string(d);
    };
    std::vector<std::string> items;
    const std::size_t n = list.size();
    std::size_t first_end = 1;
    while (list[first_end] == list[0]) ++first_end;
    items.push_back(item(first_end - 1, list[0]));
    std::size_t last_start = n - 1;
    while (list[last_start - 1] == list[n - 1]) --last_start;
    for (std::size_t k = first_end; k < last_start; ++k) items.push_back(item(k, list[k]));
    items.push_back(item(last_start, list[n - 1]));
    if (last_start + 1 < n) items.push_back(">:" + std::to_string(list[n - 1]));
    std::string text = "[";
    for (const std::string& i : items) text += (text.size() > 1 ? "," : "") + i;
    return text + "]";
  }

  std::optional<std::uint64_t> limit_;
  std::string gc_, expandable_, max_split_, max_non_split_, rounding_;
  std::vector<std::string> not_expressed_;
};

// The items of a PYTORCH_CUDA_ALLOC_CONF string, split at the commas outside brackets, spaces
// dropped (as PyTorch's lexer drops them); each with its key.
std::vector<std::pair<std::string, std::string>> conf_items(const std::string& conf) {
  std::vector<std::pair<std::string, std::string>> items;
  std::string item;
  int depth = 0;
  const auto flush = [&] {
    if (item.empty()) return;
    items.emplace_back(item.substr(0, item.find(':')), item);
    item.clear();
  };
  for (char c : conf) {
    if (c == ' ') continue;
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth <= 0) {
      flush();
      continue;
    }
    item += c;
  }
  flush();
  return items;
}

// The options a conf gives the model, in a form where equal behaviour compares equal.
auto behaviour(const PyTorchConfig& c) {
  const PyTorchOptions o = parse_pytorch_alloc_conf(c.conf);
  std::optional<std::pair<std::uint64_t, std::uint64_t>> gc;
  if (o.garbage_collection_threshold && c.memory_fraction)
    gc = {o.garbage_collection_threshold->num, o.garbage_collection_threshold->den};
  return std::tuple(o.max_split_size, interval_divisions(o), o.max_non_split_rounding, gc,
                    o.expandable_segments);
}

class GridBuilder {
 public:
  explicit GridBuilder(std::optional<std::uint64_t> memory_limit) : limit_(memory_limit) {}
  void add(const std::string& conf, std::size_t keys, bool memory_fraction = false,
           bool recorded = false) {
    PyTorchConfig c;
    c.conf = conf;
    c.keys = keys;
    c.memory_fraction = memory_fraction;
    c.recorded = recorded;
    c.spec = "pytorch-conf:\"" + conf + "\"";
    if (memory_fraction)
      c.spec += ",per_process_memory_fraction=1,device_memory=" + std::to_string(*limit_);
    grid_.push_back(std::move(c));
  }
  // The grid, less every row after the first that configures the model as the first does (the
  // recorded settings may be one of the grid's, written otherwise).
  std::vector<PyTorchConfig> take() {
    if (!grid_.empty()) {
      const auto first = behaviour(grid_.front());
      grid_.erase(std::remove_if(grid_.begin() + 1, grid_.end(),
                                 [&](const PyTorchConfig& c) { return behaviour(c) == first; }),
                  grid_.end());
    }
    return std::move(grid_);
  }

 private:
  std::optional<std::uint64_t> limit_;
  std::vector<PyTorchConfig> grid_;
};

// The most one expandable segment can ever have mapped: every request of the trace in whole pages
// of its pool (E1), at most. Saturates.
std::uint64_t expandable_reach(const ResolvedTrace& trace) {
  std::uint64_t total = 0;
  for (std::uint64_t s : trace.alloc_size) {
    if (s > pytorch::kMaxRequest) continue;  // refused before any mapping
    const std::uint64_t rounded = pytorch::round_size(s, 0);
    const std::uint64_t page =
        rounded <= pytorch::kSmallSize ? pytorch::kSmallBuffer : pytorch::kLargeBuffer;
    const std::uint64_t pages = (rounded + page - 1) / page * page;
    total = pages > ~total ? ~std::uint64_t{0} : total + pages;
  }
  return total;
}

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
  nlohmann::json j = {{"conf", t.config.conf},
                      {"line", pytorch_conf_line(t.config.conf)},
                      {"keys", t.config.keys},
                      {"memory_fraction", t.config.memory_fraction},
                      {"as_recorded", t.config.recorded},
                      {"strategy", t.config.spec},
                      {"oom", t.oom()}};
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

std::optional<RecordedPyTorchConf> recorded_pytorch_conf(
    const nlohmann::json& settings, std::optional<std::uint64_t> memory_limit) {
  if (!settings.is_object() || settings.empty()) return std::nullopt;
  RecordedReader reader(memory_limit);
  std::vector<std::string> unknown;
  for (const auto& [key, value] : settings.items()) {
    if (key == "PYTORCH_CUDA_ALLOC_CONF") continue;
    if (!reader.structured(key, value)) unknown.push_back(key + "=" + shown(value));
  }
  const auto conf = settings.find("PYTORCH_CUDA_ALLOC_CONF");
  if (conf != settings.end() && conf->is_string())
    for (const auto& [key, item] : conf_items(conf->get<std::string>()))
      if (!settings.contains(structured_key(key))) reader.conf_item(key, item);
  RecordedPyTorchConf r = reader.take();
  for (std::string& u : unknown) r.not_expressed.push_back(u + " (unknown setting)");
  return r;
}

const nlohmann::json& recorded_allocator_settings(const nlohmann::json& metadata) {
  static const nlohmann::json none;
  if (!metadata.is_object()) return none;
  const auto snapshot = metadata.find("torch_snapshot");
  if (snapshot == metadata.end() || !snapshot->is_object()) return none;
  const auto settings = snapshot->find("allocator_settings");
  return settings == snapshot->end() ? none : *settings;
}

std::vector<PyTorchConfig> pytorch_advice_grid(const ResolvedTrace& trace,
                                               std::optional<std::uint64_t> memory_limit,
                                               const std::optional<std::string>& recorded) {
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
  if (recorded) {
    const PyTorchOptions o = parse_pytorch_alloc_conf(*recorded);
    grid.add(*recorded, conf_items(*recorded).size(),
             o.garbage_collection_threshold.has_value() && memory_limit.has_value(), true);
  }
  if (!recorded || !recorded->empty()) grid.add("", 0);
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
    // A piece of an expandable segment is split whatever its size (rule E3), but the oversize
    // tests of the search still hold for it (E2): max_split_size_mb matters once some piece can
    // reach it, and pieces merge across pages up to all the segment has mapped.
    const std::uint64_t reach = expandable_reach(trace);
    for (std::uint64_t mb : kMaxSplitSizesMb)
      if (mb * pytorch::kMiB <= reach) grid.add(join(kExpandable, max_split(mb)), 2);
    // Collection frees whole fixed segments only (E6); with expandable segments the only fixed
    // ones are those adopted from the state the trace starts in.
    if (collect && trace.start_state && !trace.start_state->empty())
      for (const char* t : kGarbageCollectionThresholds)
        grid.add(std::string("garbage_collection_threshold:") + t + "," + kExpandable, 2, true);
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

std::optional<std::size_t> PyTorchAdvice::default_index() const {
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].config.conf.empty()) return i;
  return std::nullopt;
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
  if (grid.empty() || (!grid.front().conf.empty() && !grid.front().recorded))
    throw std::invalid_argument(
        "advise --pytorch: the grid must start with the default or the recorded settings");
  PyTorchAdviceOutcome outcome;
  PyTorchAdvice& a = outcome.advice;
  a.memory_limit = options.memory_limit;
  a.recorded_not_expressed = options.recorded_not_expressed;
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
  return {{"memory_limit_bytes", optional_index(a.memory_limit)},
          {"memory_fraction", fraction},
          {"not_modelled", {"backend:cudaMallocAsync"}},
          {"configurations", trials},
          {"all_oom", a.all_oom()},
          {"default", pick_json(a, a.default_index())},
          {"as_recorded", pick_json(a, !a.trials.empty() && a.trials[0].config.recorded
                                           ? std::optional<std::size_t>(0)
                                           : std::nullopt)},
          {"recorded_not_expressed", a.recorded_not_expressed},
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
