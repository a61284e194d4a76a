// The default-limit search of advise.hpp. Families advance in lockstep, phase by phase, so that
// the replays of one phase (all baselines, all powers of two, one bisection step of every
// family) run in parallel while the answer stays independent of the thread count.
#include "alloclab/replay/advise.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "alloclab/format/units.hpp"
#include "alloclab/replay/parallel.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/replay/sweep.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {
namespace {

// Search state of one family.
struct Search {
  Advice advice;
  bool active = false;   // still searching
  std::uint64_t lo = 0;  // fails (0: nothing below hi was tried)
  std::uint64_t hi = 0;  // passes
  std::uint64_t granule = advise_granule_floor;
};

struct Job {
  std::size_t family;
  std::string spec;
  std::uint64_t max_bytes = 0;  // 0 for a baseline
  bool keep_series = false;
  StrategyResult result;
};

class Searcher {
 public:
  Searcher(const ResolvedTrace& trace, const AdviseOptions& options)
      : trace_(trace), options_(options) {}

  bool cancelled() const { return options_.cancel && options_.cancel->load(); }

  // Runs every job in parallel; false when cancelled (results may then be cut short).
  bool run(std::vector<Job>& jobs) {
    ReplayOptions full;
    full.progress = options_.progress;
    full.cancel = options_.cancel;
    ReplayOptions lean = full;
    lean.max_series_points = 1;  // candidates need counters only
    parallel_for(jobs.size(), options_.threads, [&](std::size_t i) {
      jobs[i].result = replay_sim(trace_, jobs[i].spec, jobs[i].keep_series ? full : lean).result;
    });
    return !cancelled();
  }

 private:
  const ResolvedTrace& trace_;
  const AdviseOptions& options_;
};

bool meets(const Metrics& m, const Metrics& baseline, double target) {
  // Same requests on both sides, so comparing hits is comparing hit rates (and exact for
  // target 1).
  return static_cast<double>(m.hits) >= target * static_cast<double>(baseline.hits);
}

void record(Search& s, const Job& job, const char* phase) {
  AdviceCandidate c;
  c.max_bytes = job.max_bytes;
  c.phase = phase;
  c.metrics = job.result.metrics;
  c.meets_target = meets(c.metrics, s.advice.baseline.metrics, s.advice.target);
  s.advice.candidates.push_back(c);
  ++s.advice.replays;
}

std::string percent(double fraction, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f%%", decimals, 100.0 * fraction);
  return text;
}

nlohmann::json result_summary_json(const StrategyResult& r) {
  nlohmann::json out = {{"strategy", r.strategy}};
  out.update(metrics_json(r.metrics));
  return out;
}

}  // namespace

std::string AdviceFamily::spec(std::uint64_t max_bytes) const {
  return spec_prefix + "max=" + size_spec(max_bytes);
}

std::vector<AdviceFamily> default_advice_families() {
  return {{"fifo-shrink", "exact", "fifo-shrink:"},
          {"fifo-shrink:match=best-fit", "best-fit", "fifo-shrink:match=best-fit,"}};
}

std::size_t advise_replay_budget(const ResolvedTrace& trace) {
  // R <= the sum of all requests, so the powers stop by the first power >= that sum.
  std::uint64_t total = 0;
  for (std::uint64_t size : trace.alloc_size) total += size;
  std::size_t powers = 1;
  for (std::uint64_t p = advise_first_power; p < total && p <= (std::uint64_t{1} << 62); p *= 2)
    ++powers;
  return 1 + powers + 5 + 1;  // baseline, powers, bisection (32 granules), check
}

AdviseOutcome advise(const ResolvedTrace& trace, const std::vector<AdviceFamily>& families,
                     const AdviseOptions& options) {
  if (!(options.target > 0 && options.target <= 1))
    throw SpecError("advise: target " + std::to_string(options.target) +
                    " is out of range (expected a share of the baseline hit rate in (0, 1], "
                    "e.g. 0.99)");
  Searcher searcher(trace, options);
  AdviseOutcome outcome;
  std::vector<Search> searches(families.size());
  for (std::size_t f = 0; f < families.size(); ++f) {
    searches[f].advice.family = families[f];
    searches[f].advice.target = options.target;
  }
  auto finish = [&](bool interrupted) {
    outcome.interrupted = interrupted;
    for (Search& s : searches) outcome.advice.push_back(std::move(s.advice));
    return std::move(outcome);
  };

  // 1. Baselines: H and R.
  std::vector<Job> jobs;
  for (std::size_t f = 0; f < families.size(); ++f)
    jobs.push_back(Job{f, families[f].baseline, 0, true, {}});
  if (!searcher.run(jobs)) return finish(true);
  for (Job& job : jobs) {
    Search& s = searches[job.family];
    s.advice.baseline = std::move(job.result);
    s.advice.replays = 1;
    s.advice.limit_helps = s.advice.baseline.metrics.hits > 0;
    s.active = s.advice.limit_helps;
  }

  // 2. Powers of two from 64KiB up to the first one >= R.
  jobs.clear();
  for (std::size_t f = 0; f < searches.size(); ++f) {
    if (!searches[f].active) continue;
    const std::uint64_t peak = searches[f].advice.baseline.metrics.peak_reserved_bytes;
    for (std::uint64_t p = advise_first_power;; p *= 2) {
      jobs.push_back(Job{f, families[f].spec(p), p, false, {}});
      if (p >= peak || p > (std::uint64_t{1} << 62)) break;
    }
  }
  if (!searcher.run(jobs)) return finish(true);
  for (const Job& job : jobs) {
    Search& s = searches[job.family];
    record(s, job, "power");
    if (s.hi == 0 && s.advice.candidates.back().meets_target) s.hi = job.max_bytes;
  }
  for (Search& s : searches) {
    if (!s.active) continue;
    if (s.hi == 0)
      throw std::logic_error("advise: no power of two up to the baseline's peak reserved keeps " +
                             percent(s.advice.target, 1) + " of " + s.advice.family.baseline +
                             "'s hit rate; " + s.advice.family.name +
                             " without a limit should behave as " + s.advice.family.baseline);
    if (s.hi > advise_first_power) {
      s.lo = s.hi / 2;  // the power below the smallest passing one fails
      s.granule =
          std::max(advise_granule_floor, s.hi / 64 / advise_granule_floor * advise_granule_floor);
    }
  }

  // 3. Bisection, one step of every family at a time.
  while (true) {
    jobs.clear();
    for (std::size_t f = 0; f < searches.size(); ++f) {
      Search& s = searches[f];
      if (!s.active || s.lo == 0 || s.hi - s.lo <= s.granule) continue;
      const std::uint64_t mid = (s.lo + (s.hi - s.lo) / 2) / s.granule * s.granule;
      jobs.push_back(Job{f, families[f].spec(mid), mid, false, {}});
    }
    if (jobs.empty()) break;
    if (!searcher.run(jobs)) return finish(true);
    for (const Job& job : jobs) {
      Search& s = searches[job.family];
      record(s, job, "bisect");
      (s.advice.candidates.back().meets_target ? s.hi : s.lo) = job.max_bytes;
    }
  }

  // 4. Re-check the answer from its printed spec; its replay is the one reported.
  jobs.clear();
  for (std::size_t f = 0; f < searches.size(); ++f)
    if (searches[f].active)
      jobs.push_back(Job{f, families[f].spec(searches[f].hi), searches[f].hi, true, {}});
  if (!searcher.run(jobs)) return finish(true);
  for (Job& job : jobs) {
    Search& s = searches[job.family];
    record(s, job, "check");
    if (!s.advice.candidates.back().meets_target)
      throw std::logic_error("advise: re-check of " + job.spec +
                             " missed the target it met during the search (replay is not "
                             "deterministic?)");
    Advice& a = s.advice;
    a.max_bytes = job.max_bytes;
    a.recommended = job.spec;
    a.recommended_result = std::move(job.result);
    const Metrics& base = a.baseline.metrics;
    const Metrics& rec = a.recommended_result.metrics;
    a.saved_bytes = static_cast<std::int64_t>(base.peak_reserved_bytes) -
                    static_cast<std::int64_t>(rec.peak_reserved_bytes);
    a.saved_fraction = base.peak_reserved_bytes ? static_cast<double>(a.saved_bytes) /
                                                      static_cast<double>(base.peak_reserved_bytes)
                                                : 0.0;
    a.hit_rate_kept =
        base.hits ? static_cast<double>(rec.hits) / static_cast<double>(base.hits) : 0.0;
  }
  return finish(false);
}

std::string advice_sentence(const Advice& a) {
  const std::string& base = a.family.baseline;
  const Metrics& bm = a.baseline.metrics;
  if (!a.limit_helps)
    return base + " never reuses a freed block on this trace (hit rate 0%), so no " +
           a.family.name + " limit helps: a cache would only hold memory here.";
  if (!a.max_bytes) return "No answer for " + a.family.name + " (the search was interrupted).";
  const Metrics& rm = a.recommended_result.metrics;
  std::string out = a.recommended + " keeps " + percent(a.hit_rate_kept, 1) + " of " + base +
                    "'s hit rate (" + percent(rm.hit_rate(), 1) + " vs " +
                    percent(bm.hit_rate(), 1) + ") and reserves " +
                    short_bytes(rm.peak_reserved_bytes);
  // Under 1%, two sizes of three digits look the same: the saving is said in bytes instead.
  if (a.saved_bytes > 0 && a.saved_fraction < 0.005)
    return out + " at peak, " + short_bytes(static_cast<std::uint64_t>(a.saved_bytes)) +
           " less than " + base + " (" + short_bytes(bm.peak_reserved_bytes) + ").";
  if (a.saved_bytes > 0)
    return out + " instead of " + short_bytes(bm.peak_reserved_bytes) + " (saves " +
           percent(a.saved_fraction, 0) + ").";
  return out + " at peak, " + (a.saved_bytes == 0 ? "as much as " : "more than ") + base + " (" +
         short_bytes(bm.peak_reserved_bytes) +
         "): on this trace no limit saves memory without losing more hits than the target "
         "allows.";
}

nlohmann::json advice_json(const Advice& a) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const AdviceCandidate& c : a.candidates)
    candidates.push_back({{"max_bytes", c.max_bytes},
                          {"strategy", a.family.spec(c.max_bytes)},
                          {"phase", c.phase},
                          {"hits", c.metrics.hits},
                          {"hit_rate", c.metrics.hit_rate()},
                          {"peak_reserved_bytes", c.metrics.peak_reserved_bytes},
                          {"meets_target", c.meets_target}});
  nlohmann::json recommended = nullptr;
  if (a.max_bytes) {
    recommended = result_summary_json(a.recommended_result);
    recommended["max_bytes"] = *a.max_bytes;
  }
  return {{"family", a.family.name},
          {"target", a.target},
          {"baseline", result_summary_json(a.baseline)},
          {"limit_helps", a.limit_helps},
          {"recommended", recommended},
          {"hit_rate_kept", a.hit_rate_kept},
          {"saved_bytes", a.saved_bytes},
          {"saved_fraction", a.saved_fraction},
          {"replays", a.replays},
          {"candidates", candidates},
          {"summary", advice_sentence(a)}};
}

nlohmann::json make_advice_report(const TraceSummary& trace, const std::vector<Advice>& advice,
                                  double target, const ReportContext& context) {
  std::vector<StrategyResult> results;
  for (const Advice& a : advice) {
    results.push_back(a.baseline);
    if (a.max_bytes) results.push_back(a.recommended_result);
  }
  nlohmann::json report = make_report(trace, results, context);
  report["target"] = target;
  nlohmann::json list = nlohmann::json::array();
  for (const Advice& a : advice) list.push_back(advice_json(a));
  report["advice"] = std::move(list);
  return report;
}

}  // namespace alloclab
