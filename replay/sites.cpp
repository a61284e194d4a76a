#include "alloclab/replay/sites.hpp"

#include <algorithm>
#include <ostream>
#include <unordered_map>

#include "alloclab/format/address_map.hpp"
#include "alloclab/format/stacks.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/replay/parallel.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/strategies/strategy.hpp"
#include "sorted_ranges.hpp"

namespace alloclab {
namespace {

// Charges one replay's requests and evictions to stacks (the rules of sites.hpp).
class SiteObserver final : public ReplayObserver {
 public:
  SiteObserver(const std::vector<std::uint32_t>& stack_of, std::size_t stacks)
      : stack_of_(stack_of), counts_(stacks) {}

  void requested(std::size_t, std::uint32_t id, const Block*, const RequestCost& cost) override {
    SiteCounts& c = counts_[stack(id)];
    // Tested one by one rather than added as a pair: the caller stored the two fields apart,
    // and one wide load of both would wait for those stores to reach the cache.
    if (!cost.hit) ++c.misses;
    if (cost.slack_bytes != 0) c.slack_bytes += cost.slack_bytes;
    if (cost.upstream_bytes != 0) c.upstream_bytes += cost.upstream_bytes;
  }

  void freed(std::size_t lane, std::uint32_t id, const Block& block) override {
    if (Holder* h = holder_of(lane_at(lane), block.address)) h->stack = stack(id);
  }

  void upstream_allocated(std::size_t lane, const Block& block) override {
    Lane& l = lane_at(lane);
    l.blocks.insert_or_assign(block.address, Holder{block.capacity, 0});
    if (l.sorted) l.starts.assign(block.address, block.capacity);
  }

  void upstream_freed(std::size_t lane, const Block& block, bool eviction) override {
    Lane& l = lane_at(lane);
    const std::optional<Holder> h = l.blocks.take(block.address);
    if (l.sorted) l.starts.erase(block.address);
    if (eviction) ++counts_[h ? h->stack : 0].evictions;
  }

  std::vector<SiteCounts> take() { return std::move(counts_); }

 private:
  struct Holder {
    std::uint64_t capacity = 0;
    std::uint32_t stack = 0;  // of the allocation that last released memory inside it
  };
  // One lane's upstream blocks by start address, and the same blocks in order, made the first
  // time a block freed by the program does not start an upstream block (a strategy that cuts
  // segments): strategies that hand out whole upstream blocks never pay for the ordered index.
  // Such a strategy keeps its segments, so the index is looked up at most frees and changed at
  // few (SortedRanges).
  struct Lane {
    AddressMap<Holder> blocks;
    bool sorted = false;
    SortedRanges starts;
  };

  std::uint32_t stack(std::uint32_t id) const { return id < stack_of_.size() ? stack_of_[id] : 0; }

  Lane& lane_at(std::size_t lane) {
    if (lane >= lanes_.size()) lanes_.resize(lane + 1);
    return lanes_[lane];
  }

  Holder* holder_of(Lane& l, std::uint64_t address) {
    if (Holder* h = l.blocks.find(address)) return h;
    if (!l.sorted) {
      std::vector<SortedRanges::Range> ranges;
      ranges.reserve(l.blocks.size());
      l.blocks.for_each([&](std::uint64_t start, const Holder& h) {
        ranges.push_back(SortedRanges::Range{start, h.capacity});
      });
      l.starts = SortedRanges(std::move(ranges));
      l.sorted = true;
    }
    const std::optional<SortedRanges::Range> in = l.starts.find_containing(address);
    return in ? l.blocks.find(in->start) : nullptr;
  }

  const std::vector<std::uint32_t>& stack_of_;
  std::vector<SiteCounts> counts_;
  std::vector<Lane> lanes_;
};

// The live bytes after each operation, as the program held them (whatever a strategy did):
// allocs add, frees subtract, the start state's blocks are live from the start. Returns the
// operation count after which they peak first.
std::uint64_t peak_op(const ResolvedTrace& resolved) {
  std::uint64_t live = 0;
  for (std::uint32_t id = 0; id < resolved.start_blocks(); ++id) live += resolved.alloc_size[id];
  std::uint64_t best = live, at = 0;
  for (std::size_t k = 0; k < resolved.ops.size(); ++k) {
    const ResolvedOp op = resolved.ops[k];
    if (op.op == ReplayOp::alloc) {
      live += resolved.alloc_size[op.id];
    } else if (op.op == ReplayOp::free) {
      live -= std::min(live, resolved.alloc_size[op.id]);
    }
    if (live > best) {
      best = live;
      at = k + 1;
    }
  }
  return at;
}

std::uint64_t op_at_time(const ResolvedTrace& resolved, std::uint64_t since_start_ns) {
  if (resolved.ops.empty()) return 0;
  // The count ends at the first operation later than the moment (operations are in trace
  // order; a clock that steps back does not make the moment come twice).
  const std::uint64_t t0 = resolved.op_time_ns[0];
  std::uint64_t at = 0;
  while (at < resolved.ops.size() &&
         (resolved.op_time_ns[at] <= t0 || resolved.op_time_ns[at] - t0 <= since_start_ns))
    ++at;
  return at;
}

// Allocations and requested bytes of every stack, and what is live after operations [0, at).
void tally_program(const ResolvedTrace& resolved, const std::vector<std::uint32_t>& stack_of,
                   std::uint64_t at, SitesResult& result) {
  for (std::uint32_t id = 0; id < resolved.start_blocks(); ++id) {
    StackTally& t = result.stacks[stack_of[id]];
    ++t.live_allocations;
    t.live_bytes += resolved.alloc_size[id];
  }
  for (std::size_t k = 0; k < resolved.ops.size(); ++k) {
    const ResolvedOp op = resolved.ops[k];
    if (op.op != ReplayOp::alloc && op.op != ReplayOp::free) continue;
    StackTally& t = result.stacks[stack_of[op.id]];
    const std::uint64_t size = resolved.alloc_size[op.id];
    if (op.op == ReplayOp::alloc) {
      ++t.allocations;
      t.requested_bytes += size;
    }
    if (k >= at) continue;
    if (op.op == ReplayOp::alloc) {
      ++t.live_allocations;
      t.live_bytes += size;
    } else if (t.live_allocations > 0) {
      --t.live_allocations;
      t.live_bytes -= std::min(t.live_bytes, size);
    }
  }
  for (const StackTally& t : result.stacks) result.live_bytes_at += t.live_bytes;
}

std::string folded_name(std::string name) {
  for (char& c : name)
    if (c == ';' || c == '\n' || c == '\r') c = ' ';
  return name;
}

constexpr const char* no_stack_name = "[no stack]";

}  // namespace

std::vector<std::uint32_t> allocation_stacks(const Trace& trace, const ResolvedTrace& resolved) {
  std::vector<std::uint32_t> stack_of(resolved.allocation_count(), 0);
  const auto& entries = trace.stack_id_entries();
  const auto& breaks = resolved.op_event_breaks;
  if (entries.empty() || breaks.empty()) return stack_of;
  // Operation k replays event breaks[b].event + (k - breaks[b].op) for the last break b at or
  // before k; events only grow with k, so both cursors only move forward.
  std::size_t b = 0, e = 0;
  for (std::size_t k = 0; k < resolved.ops.size(); ++k) {
    const ResolvedOp op = resolved.ops[k];
    if (op.op != ReplayOp::alloc) continue;
    while (b + 1 < breaks.size() && breaks[b + 1].op <= k) ++b;
    if (breaks[b].op > k) continue;
    const std::uint64_t event = breaks[b].event + (k - breaks[b].op);
    while (e < entries.size() && entries[e].first < event) ++e;
    if (e == entries.size()) break;
    if (entries[e].first == event && op.id < stack_of.size() && event < trace.size() &&
        trace.op(event) == Op::alloc && !trace.segment(event))
      stack_of[op.id] = entries[e].second;
  }
  return stack_of;
}

SitesResult tally_sites(const Trace& trace, const ResolvedTrace& resolved,
                        const std::vector<std::string>& specs, SitesAt at,
                        const ReplayOptions& options, std::size_t threads) {
  SitesResult result;
  result.specs = specs;
  const std::size_t stack_count = trace.stacks().size() + 1;
  result.stacks.resize(stack_count);
  for (std::size_t id = 0; id < stack_count; ++id) {
    result.stacks[id].stack = static_cast<std::uint32_t>(id);
    result.stacks[id].strategies.resize(specs.size());
  }
  const std::vector<std::uint32_t> stack_of = allocation_stacks(trace, resolved);
  // The program's own figures are one more job beside the replays, the last one started: it
  // writes the stacks' program counts and the moment, the replays only their own counts.
  const auto tally_the_program = [&] {
    result.at_op = at.peak ? peak_op(resolved) : op_at_time(resolved, at.time_ns);
    if (result.at_op > 0)
      result.at_time_ns = resolved.op_time_ns[result.at_op - 1] -
                          std::min(resolved.op_time_ns[result.at_op - 1], resolved.op_time_ns[0]);
    tally_program(resolved, stack_of, result.at_op, result);
  };

  result.results.resize(specs.size());
  std::vector<std::vector<SiteCounts>> counts(specs.size());
  const std::vector<std::size_t> order = replay_order(specs);
  parallel_for(specs.size() + 1, threads, [&](std::size_t job) {
    if (job == specs.size()) return tally_the_program();
    const std::size_t i = order[job];
    SiteObserver observer(stack_of, stack_count);
    ReplayOptions mine = options;
    mine.observer = &observer;
    result.results[i] = replay_trace(resolved, specs[i], mine).result;
    counts[i] = observer.take();
  });
  result.interrupted = options.cancel && options.cancel->load();
  for (std::size_t i = 0; i < specs.size(); ++i)
    for (std::size_t id = 0; id < stack_count; ++id)
      result.stacks[id].strategies[i] = counts[i][id];
  return result;
}

std::string_view to_string(SiteMetric metric) {
  switch (metric) {
    case SiteMetric::allocations:
      return "allocations";
    case SiteMetric::bytes:
      return "bytes";
    case SiteMetric::live:
      return "live";
    case SiteMetric::misses:
      return "misses";
    case SiteMetric::slack:
      return "slack";
    case SiteMetric::upstream_bytes:
      return "upstream-bytes";
    case SiteMetric::evictions:
      return "evictions";
  }
  return "?";
}

const std::vector<SiteMetric>& all_site_metrics() {
  static const std::vector<SiteMetric> all{
      SiteMetric::allocations, SiteMetric::bytes,          SiteMetric::live,     SiteMetric::misses,
      SiteMetric::slack,       SiteMetric::upstream_bytes, SiteMetric::evictions};
  return all;
}

std::optional<SiteMetric> parse_site_metric(std::string_view name) {
  for (SiteMetric m : all_site_metrics())
    if (to_string(m) == name) return m;
  return std::nullopt;
}

bool per_strategy(SiteMetric metric) {
  return metric == SiteMetric::misses || metric == SiteMetric::slack ||
         metric == SiteMetric::upstream_bytes || metric == SiteMetric::evictions;
}

std::uint64_t metric_value(const StackTally& tally, SiteMetric metric, std::size_t spec) {
  const SiteCounts none;
  const SiteCounts& c = spec < tally.strategies.size() ? tally.strategies[spec] : none;
  switch (metric) {
    case SiteMetric::allocations:
      return tally.allocations;
    case SiteMetric::bytes:
      return tally.requested_bytes;
    case SiteMetric::live:
      return tally.live_bytes;
    case SiteMetric::misses:
      return c.misses;
    case SiteMetric::slack:
      return c.slack_bytes;
    case SiteMetric::upstream_bytes:
      return c.upstream_bytes;
    case SiteMetric::evictions:
      return c.evictions;
  }
  return 0;
}

namespace {

bool active(const StackTally& t) {
  if (t.allocations || t.live_allocations) return true;
  for (const SiteCounts& c : t.strategies)
    if (c.misses || c.slack_bytes || c.upstream_bytes || c.evictions) return true;
  return false;
}

void add_to(StackTally& total, const StackTally& t) {
  total.allocations += t.allocations;
  total.requested_bytes += t.requested_bytes;
  total.live_allocations += t.live_allocations;
  total.live_bytes += t.live_bytes;
  if (total.strategies.size() < t.strategies.size()) total.strategies.resize(t.strategies.size());
  for (std::size_t i = 0; i < t.strategies.size(); ++i) {
    total.strategies[i].misses += t.strategies[i].misses;
    total.strategies[i].upstream_bytes += t.strategies[i].upstream_bytes;
    total.strategies[i].slack_bytes += t.strategies[i].slack_bytes;
    total.strategies[i].evictions += t.strategies[i].evictions;
  }
}

// The innermost frame of stack `id`, or none for stack 0 and an empty stack.
std::optional<std::uint32_t> innermost(const Trace& trace, std::uint32_t id) {
  if (id == 0 || id > trace.stacks().size() || trace.stacks()[id - 1].empty()) return std::nullopt;
  return trace.stacks()[id - 1].front();
}

std::string site_key(const StackFrame& f) {
  if (!f.function.empty()) return "f" + f.function + '\0' + f.module;
  return "a" + std::to_string(f.address) + '\0' + f.module;
}

}  // namespace

std::vector<Site> group_sites(const Trace& trace, const SitesResult& result, SiteMetric metric,
                              std::size_t spec) {
  std::vector<Site> sites;
  std::unordered_map<std::string, std::size_t> index;
  std::optional<std::size_t> no_stack;
  for (const StackTally& t : result.stacks) {
    if (!active(t)) continue;
    const std::optional<std::uint32_t> frame = innermost(trace, t.stack);
    std::size_t at = 0;
    if (!frame) {
      if (!no_stack) {
        no_stack = sites.size();
        sites.emplace_back();
      }
      at = *no_stack;
    } else {
      const auto [it, inserted] = index.try_emplace(site_key(trace.frames()[*frame]), sites.size());
      if (inserted) {
        sites.emplace_back();
        sites.back().frame = frame;
      }
      at = it->second;
    }
    add_to(sites[at].total, t);
    sites[at].stacks.push_back(t.stack);
  }
  for (Site& site : sites)
    std::stable_sort(site.stacks.begin(), site.stacks.end(), [&](std::uint32_t a, std::uint32_t b) {
      return metric_value(result.stacks[a], metric, spec) >
             metric_value(result.stacks[b], metric, spec);
    });
  std::stable_sort(sites.begin(), sites.end(), [&](const Site& a, const Site& b) {
    return metric_value(a.total, metric, spec) > metric_value(b.total, metric, spec);
  });
  return sites;
}

std::string site_name(const Trace& trace, const Site& site) {
  return site.frame ? describe_function(trace.frames()[*site.frame]) : no_stack_name;
}

void write_folded(std::ostream& out, const Trace& trace, const SitesResult& result,
                  SiteMetric metric, std::size_t spec) {
  std::string line;
  for (const StackTally& t : result.stacks) {
    const std::uint64_t value = metric_value(t, metric, spec);
    if (value == 0) continue;
    line.clear();
    if (t.stack == 0 || t.stack > trace.stacks().size() || trace.stacks()[t.stack - 1].empty()) {
      line = no_stack_name;
    } else {
      const std::vector<std::uint32_t>& frames = trace.stacks()[t.stack - 1];
      for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
        if (!line.empty()) line += ';';
        line += folded_name(describe_function(trace.frames()[*f]));
      }
    }
    out << line << ' ' << value << '\n';
  }
}

namespace {

std::string counts_line(const SiteCounts& c) {
  return string_printf("%s, %s from upstream, %s slack, %s",
                       counted(c.misses, "miss", "misses").c_str(),
                       human_bytes(c.upstream_bytes).c_str(), human_bytes(c.slack_bytes).c_str(),
                       counted(c.evictions, "eviction").c_str());
}

constexpr std::size_t chains_shown = 3;

nlohmann::json counts_json(const SiteCounts& c) {
  return {{"misses", c.misses},
          {"upstream_bytes", c.upstream_bytes},
          {"slack_bytes", c.slack_bytes},
          {"evictions", c.evictions}};
}

nlohmann::json tally_json(const SitesResult& result, const StackTally& t) {
  nlohmann::json strategies = nlohmann::json::array();
  for (std::size_t i = 0; i < t.strategies.size(); ++i) {
    nlohmann::json s = counts_json(t.strategies[i]);
    s["strategy"] = result.specs[i];
    strategies.push_back(std::move(s));
  }
  return {{"allocations", t.allocations},
          {"requested_bytes", t.requested_bytes},
          {"live_allocations", t.live_allocations},
          {"live_bytes", t.live_bytes},
          {"strategies", std::move(strategies)}};
}

}  // namespace

std::string sites_text(const Trace& trace, const SitesResult& result,
                       const std::vector<Site>& sites, SiteMetric sorted_by, std::size_t top) {
  std::string text = string_printf(
      "live at %s after %s: %s\n", human_duration(result.at_time_ns).c_str(),
      counted(result.at_op, "operation").c_str(), human_bytes(result.live_bytes_at).c_str());
  std::string by(to_string(sorted_by));
  if (per_strategy(sorted_by) && !result.specs.empty()) by += " under " + result.specs[0];
  text += string_printf("%s, the top %zu by %s\n", counted(sites.size(), "site").c_str(),
                        std::min(top, sites.size()), by.c_str());
  for (std::size_t s = 0; s < sites.size() && s < top; ++s) {
    const Site& site = sites[s];
    const StackTally& t = site.total;
    text += string_printf("\n%zu. %s\n", s + 1, site_name(trace, site).c_str());
    text += string_printf(
        "   %s, %s requested; live %s, %s\n", counted(t.allocations, "allocation").c_str(),
        human_bytes(t.requested_bytes).c_str(), counted(t.live_allocations, "allocation").c_str(),
        human_bytes(t.live_bytes).c_str());
    for (std::size_t i = 0; i < result.specs.size() && i < t.strategies.size(); ++i)
      text += string_printf("   %s: %s\n", result.specs[i].c_str(),
                            counts_line(t.strategies[i]).c_str());
    for (std::size_t c = 0; c < site.stacks.size() && c < chains_shown; ++c) {
      const std::uint32_t id = site.stacks[c];
      const StackTally& chain = result.stacks[id];
      std::string value = grouped(metric_value(chain, sorted_by, 0));
      if (sorted_by == SiteMetric::bytes || sorted_by == SiteMetric::live ||
          sorted_by == SiteMetric::slack || sorted_by == SiteMetric::upstream_bytes)
        value = human_bytes(metric_value(chain, sorted_by, 0));
      const std::string metric(to_string(sorted_by));
      if (id == 0 || id > trace.stacks().size() || trace.stacks()[id - 1].empty()) {
        text += string_printf("   stack %u: %s %s\n", id, value.c_str(), metric.c_str());
        continue;
      }
      // The innermost frame's address tells apart two calls in one function.
      const std::vector<std::uint32_t>& frames = trace.stacks()[id - 1];
      text += string_printf("   caller chain %zu (stack %u, from 0x%llx): %s %s\n", c + 1, id,
                            static_cast<unsigned long long>(trace.frames()[frames[0]].address),
                            value.c_str(), metric.c_str());
      for (std::size_t f = 1; f < frames.size(); ++f)
        text += string_printf("       %s\n", describe_frame(trace.frames()[frames[f]]).c_str());
    }
    if (site.stacks.size() > chains_shown)
      text += string_printf(
          "   and %s\n", counted(site.stacks.size() - chains_shown, "more caller chain").c_str());
  }
  return text;
}

nlohmann::json stack_frames_json(const Trace& trace, std::uint32_t id) {
  nlohmann::json frames = nlohmann::json::array();
  if (id == 0 || id > trace.stacks().size()) return frames;
  for (std::uint32_t f : trace.stacks()[id - 1]) {
    const StackFrame& frame = trace.frames()[f];
    frames.push_back(
        {{"address", frame.address}, {"function", frame.function}, {"module", frame.module}});
  }
  return frames;
}

nlohmann::json sites_json(const Trace& trace, const SitesResult& result,
                          const std::vector<Site>& sites, SiteMetric sorted_by, std::size_t top) {
  nlohmann::json strategies = nlohmann::json::array();
  for (std::size_t i = 0; i < result.specs.size(); ++i)
    strategies.push_back(
        {{"strategy", result.specs[i]}, {"metrics", metrics_json(result.results[i].metrics)}});
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t s = 0; s < sites.size() && s < top; ++s) {
    const Site& site = sites[s];
    nlohmann::json j = tally_json(result, site.total);
    j["site"] = site_name(trace, site);
    if (site.frame) {
      const StackFrame& f = trace.frames()[*site.frame];
      j["frame"] = {{"address", f.address}, {"function", f.function}, {"module", f.module}};
    } else {
      j["frame"] = nullptr;
    }
    nlohmann::json stacks = nlohmann::json::array();
    for (const std::uint32_t id : site.stacks) {
      nlohmann::json chain = tally_json(result, result.stacks[id]);
      chain["stack"] = id;
      chain["frames"] = stack_frames_json(trace, id);
      stacks.push_back(std::move(chain));
    }
    j["stacks"] = std::move(stacks);
    list.push_back(std::move(j));
  }
  return {{"at_op", result.at_op},
          {"at_time_ns", result.at_time_ns},
          {"live_bytes", result.live_bytes_at},
          {"sorted_by", std::string(to_string(sorted_by))},
          {"distinct_sites", sites.size()},
          {"strategies", std::move(strategies)},
          {"sites", std::move(list)}};
}

nlohmann::json top_miss_stacks_json(const Trace& trace, const SitesResult& result, std::size_t spec,
                                    std::size_t n) {
  std::vector<std::uint32_t> ids;
  for (const StackTally& t : result.stacks)
    if (spec < t.strategies.size() && t.strategies[spec].misses > 0) ids.push_back(t.stack);
  std::stable_sort(ids.begin(), ids.end(), [&](std::uint32_t a, std::uint32_t b) {
    return result.stacks[a].strategies[spec].misses > result.stacks[b].strategies[spec].misses;
  });
  if (ids.size() > n) ids.resize(n);
  nlohmann::json list = nlohmann::json::array();
  for (const std::uint32_t id : ids) {
    const StackTally& t = result.stacks[id];
    nlohmann::json j = counts_json(t.strategies[spec]);
    j["stack"] = id;
    j["allocations"] = t.allocations;
    j["requested_bytes"] = t.requested_bytes;
    j["frames"] = stack_frames_json(trace, id);
    list.push_back(std::move(j));
  }
  return list;
}

}  // namespace alloclab
