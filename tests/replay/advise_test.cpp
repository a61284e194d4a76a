// The default-limit search: known answers on hand-made traces, the target met on the bundled
// traces, the non-monotonic case the search documents, and the report.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/interchange/csv.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/advise.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

// Builds a trace step by step; a slot number stands for an address.
class TraceBuilder {
 public:
  TraceBuilder& alloc(std::uint64_t slot, std::uint64_t size) { return add(Op::alloc, slot, size); }
  TraceBuilder& free(std::uint64_t slot) { return add(Op::free, slot, 0); }
  ResolvedTrace resolved() const { return resolve(trace_); }

 private:
  TraceBuilder& add(Op op, std::uint64_t slot, std::uint64_t size) {
    Event e;
    e.time_ns = ++time_;
    e.op = op;
    e.address = 0x10000000 + slot * 0x1000000;
    e.size = size;
    trace_.push_back(e);
    return *this;
  }
  Trace trace_;
  std::uint64_t time_ = 0;
};

ResolvedTrace tiny_trace() {
  return resolve(read_csv(std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv"));
}

ResolvedTrace bundled(const char* name) {
  return resolve(read_alt(std::string(ALLOCLAB_TRACES_DIR) + "/" + name));
}

AdviseOutcome run_advise(const ResolvedTrace& trace, double target = 0.99,
                         std::size_t threads = 2) {
  AdviseOptions options;
  options.target = target;
  options.threads = threads;
  return advise(trace, default_advice_families(), options);
}

// What every answer promises, checked against fresh replays of the printed spec.
void expect_answer_meets_target(const ResolvedTrace& trace, const Advice& a) {
  ASSERT_TRUE(a.limit_helps) << a.family.name;
  ASSERT_TRUE(a.max_bytes.has_value()) << a.family.name;
  const StrategyResult again = replay_sim(trace, a.recommended).result;
  EXPECT_EQ(again.metrics, a.recommended_result.metrics) << a.recommended;
  EXPECT_GE(static_cast<double>(again.metrics.hits),
            a.target * static_cast<double>(a.baseline.metrics.hits))
      << a.recommended;
  EXPECT_EQ(parse_size(a.recommended.substr(a.recommended.rfind('=') + 1)), *a.max_bytes);
  // The answer is at most the first power of two >= R, and one granule below it fails (or it is
  // the smallest power tried).
  std::uint64_t power = advise_first_power;
  while (power < a.baseline.metrics.peak_reserved_bytes) power *= 2;
  EXPECT_LE(*a.max_bytes, power);
  if (*a.max_bytes > advise_first_power) {
    bool failing_below = false;
    for (const AdviceCandidate& c : a.candidates)
      if (c.max_bytes < *a.max_bytes && !c.meets_target &&
          *a.max_bytes - c.max_bytes <= std::max<std::uint64_t>(4 * KiB, *a.max_bytes / 32))
        failing_below = true;
    EXPECT_TRUE(failing_below) << a.recommended << ": no failing candidate just below it";
  }
  EXPECT_EQ(a.replays, a.candidates.size() + 1);  // + the baseline
  EXPECT_EQ(a.candidates.back().phase, "check");
}

TEST(Advise, tiny_trace_needs_room_for_the_whole_first_run) {
  const ResolvedTrace trace = tiny_trace();
  const AdviseOutcome out = run_advise(trace);
  ASSERT_FALSE(out.interrupted);
  ASSERT_EQ(out.advice.size(), 2u);
  const Advice& exact = out.advice[0];
  EXPECT_EQ(exact.family.baseline, "exact");
  EXPECT_EQ(exact.baseline.metrics.hits, 3u);
  EXPECT_EQ(exact.baseline.metrics.peak_reserved_bytes, 3 * MiB + 4 * KiB);
  // Keeping all three hits of run 2 needs all 3MiB+4KiB of run 1 cached; the bisection between
  // 2MiB and 4MiB works in 64KiB steps.
  EXPECT_EQ(exact.recommended, "fifo-shrink:max=3136KiB");
  EXPECT_EQ(exact.recommended_result.metrics.hits, 3u);
  EXPECT_EQ(exact.saved_bytes, 0);
  expect_answer_meets_target(trace, exact);
  // With best-fit matching the 2MiB block serves the 1MiB request: the 1MiB block may go.
  const Advice& best_fit = out.advice[1];
  EXPECT_EQ(best_fit.family.baseline, "best-fit");
  EXPECT_EQ(best_fit.recommended, "fifo-shrink:match=best-fit,max=2112KiB");
  expect_answer_meets_target(trace, best_fit);
}

TEST(Advise, hand_made_trace_with_a_known_answer) {
  // Ten iterations of: alloc 3MiB, alloc 512KiB, free both. The unbounded cache hits every
  // request after the first two (18 of 20); keeping them all needs the 3.5MiB of both blocks.
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) b.alloc(0, 3 * MiB).alloc(1, 512 * KiB).free(0).free(1);
  const ResolvedTrace trace = b.resolved();
  const AdviseOutcome out = run_advise(trace);
  for (const Advice& a : out.advice) {
    EXPECT_EQ(a.baseline.metrics.hits, 18u);
    EXPECT_EQ(a.baseline.metrics.peak_reserved_bytes, 3 * MiB + 512 * KiB);
    EXPECT_EQ(*a.max_bytes, 3 * MiB + 512 * KiB) << a.family.name;
    // 7 powers (64KiB..4MiB), 5 bisection steps (2MiB..4MiB in 64KiB granules), 1 check.
    EXPECT_EQ(a.replays, 1u + 7u + 5u + 1u);
    expect_answer_meets_target(trace, a);
  }
  EXPECT_EQ(out.advice[0].recommended, "fifo-shrink:max=3584KiB");
  EXPECT_EQ(out.advice[1].recommended, "fifo-shrink:match=best-fit,max=3584KiB");
}

TEST(Advise, answer_is_the_smallest_limit_the_search_found_not_a_global_minimum) {
  // Sizes 192KiB (x, z), 256KiB (y), 128KiB (w). The unbounded exact cache hits twice (steps 7
  // and 11 below), peak reserved 768KiB.
  //  - max=576KiB: the free at step 6 overflows and evicts a 192KiB block (its queue entry goes
  //    too); the hit at step 7 leaves a tombstone *behind* the 256KiB entry; at step 10 the
  //    cache is exactly full, nothing is evicted, step 11 hits: both hits kept.
  //  - max=704KiB: nothing is evicted at step 6; the hit at step 7 leaves its tombstone at the
  //    *front*; at step 10 the shrink consumes it and then evicts the 256KiB block: step 11
  //    misses.
  // So more room gives fewer hits. Bisection between 512KiB (fails) and 1MiB (passes) never
  // looks at 576KiB, and answers 768KiB.
  TraceBuilder b;
  b.alloc(0, 192 * KiB).alloc(1, 256 * KiB).alloc(2, 192 * KiB);  // 1-3
  b.free(0).free(1).free(2);                                      // 4-6
  b.alloc(0, 192 * KiB).free(0);                                  // 7-8
  b.alloc(3, 128 * KiB).free(3);                                  // 9-10
  b.alloc(1, 256 * KiB).free(1);                                  // 11-12
  const ResolvedTrace trace = b.resolved();
  const AdviseOutcome out = run_advise(trace, 1.0);
  const Advice& a = out.advice[0];
  EXPECT_EQ(a.baseline.metrics.hits, 2u);
  EXPECT_EQ(a.baseline.metrics.peak_reserved_bytes, 768 * KiB);
  EXPECT_EQ(a.recommended, "fifo-shrink:max=768KiB");
  expect_answer_meets_target(trace, a);
  EXPECT_EQ(replay_sim(trace, "fifo-shrink:max=576KiB").result.metrics.hits, 2u);
  EXPECT_EQ(replay_sim(trace, "fifo-shrink:max=704KiB").result.metrics.hits, 1u);
  EXPECT_EQ(replay_sim(trace, "fifo-shrink:max=512KiB").result.metrics.hits, 1u);
}

TEST(Advise, bundled_traces_get_answers_that_meet_the_target) {
  for (const char* name : {"cnn-inference.alt", "transformer-varlen.alt"}) {
    SCOPED_TRACE(name);
    const ResolvedTrace trace = bundled(name);
    const AdviseOutcome out = run_advise(trace);
    ASSERT_FALSE(out.interrupted);
    for (const Advice& a : out.advice) expect_answer_meets_target(trace, a);
  }
}

TEST(Advise, lower_target_never_asks_for_more_memory_on_the_transformer_trace) {
  const ResolvedTrace trace = bundled("transformer-varlen.alt");
  const AdviseOutcome strict = run_advise(trace, 0.99);
  const AdviseOutcome loose = run_advise(trace, 0.9);
  for (std::size_t f = 0; f < strict.advice.size(); ++f) {
    expect_answer_meets_target(trace, loose.advice[f]);
    EXPECT_LE(*loose.advice[f].max_bytes, *strict.advice[f].max_bytes);
  }
  // It saves memory there: the limit is below the unbounded peak.
  EXPECT_GT(strict.advice[0].saved_bytes, 0);
}

TEST(Advise, answer_does_not_depend_on_the_thread_count) {
  const ResolvedTrace trace = bundled("cnn-inference.alt");
  const AdviseOutcome one = run_advise(trace, 0.99, 1);
  const AdviseOutcome four = run_advise(trace, 0.99, 4);
  for (std::size_t f = 0; f < one.advice.size(); ++f) {
    EXPECT_EQ(one.advice[f].recommended, four.advice[f].recommended);
    EXPECT_EQ(one.advice[f].replays, four.advice[f].replays);
  }
}

TEST(Advise, small_working_set_gets_the_smallest_power_without_bisection) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) b.alloc(0, 4 * KiB).free(0);
  const ResolvedTrace trace = b.resolved();
  const AdviseOutcome out = run_advise(trace);
  for (const Advice& a : out.advice) {
    EXPECT_EQ(*a.max_bytes, advise_first_power);
    EXPECT_EQ(a.replays, 3u);  // baseline, 64KiB, check
    expect_answer_meets_target(trace, a);
  }
  EXPECT_EQ(out.advice[0].recommended, "fifo-shrink:max=64KiB");
}

TEST(Advise, no_limit_helps_when_nothing_is_ever_reused) {
  TraceBuilder b;
  b.alloc(0, 1 * MiB).free(0).alloc(1, 2 * MiB).free(1).alloc(2, 3 * MiB).free(2);
  const AdviseOutcome out = run_advise(b.resolved());
  for (const Advice& a : out.advice) {
    EXPECT_FALSE(a.limit_helps);
    EXPECT_FALSE(a.max_bytes.has_value());
    EXPECT_EQ(a.replays, 1u);
    EXPECT_NE(advice_sentence(a).find("limit helps"), std::string::npos) << advice_sentence(a);
    EXPECT_TRUE(advice_json(a)["recommended"].is_null());
  }
}

TEST(Advise, target_out_of_range_is_a_spec_error) {
  const ResolvedTrace trace = tiny_trace();
  EXPECT_THROW(run_advise(trace, 0.0), SpecError);
  EXPECT_THROW(run_advise(trace, 1.5), SpecError);
}

TEST(Advise, sentence_reads_as_plain_language) {
  Advice a;
  a.family = default_advice_families()[0];
  a.limit_helps = true;
  a.max_bytes = 48 * MiB;
  a.recommended = a.family.spec(48 * MiB);
  a.baseline.metrics.requests = a.recommended_result.metrics.requests = 1000;
  a.baseline.metrics.hits = 879;
  a.recommended_result.metrics.hits = 871;
  a.baseline.metrics.peak_reserved_bytes = 112 * MiB;
  a.recommended_result.metrics.peak_reserved_bytes = 48 * MiB;
  a.saved_bytes = 64 * MiB;
  a.saved_fraction = 64.0 / 112.0;
  a.hit_rate_kept = 871.0 / 879.0;
  EXPECT_EQ(advice_sentence(a),
            "fifo-shrink:max=48MiB keeps 99.1% of exact's hit rate (87.1% vs 87.9%) and "
            "reserves 48.0 MiB instead of 112 MiB (saves 57%).");
}

TEST(Advise, report_has_the_documented_keys) {
  const ResolvedTrace trace = tiny_trace();
  const AdviseOutcome out = run_advise(trace);
  TraceSummary summary;
  const nlohmann::json report = make_advice_report(summary, out.advice, 0.99, ReportContext{});
  for (const char* key : {"schema_version", "trace", "target", "advice", "results"})
    EXPECT_TRUE(report.contains(key)) << key;
  EXPECT_EQ(report["results"].size(), 4u);  // baseline and answer of each family
  const nlohmann::json& a = report["advice"][0];
  for (const char* key :
       {"family", "target", "baseline", "limit_helps", "recommended", "hit_rate_kept",
        "saved_bytes", "saved_fraction", "replays", "candidates", "summary"})
    EXPECT_TRUE(a.contains(key)) << key;
  EXPECT_EQ(a["recommended"]["strategy"], "fifo-shrink:max=3136KiB");
  EXPECT_EQ(a["recommended"]["max_bytes"], 3136 * KiB);
  EXPECT_EQ(a["baseline"]["strategy"], "exact");
  for (const char* key : {"max_bytes", "strategy", "phase", "hits", "hit_rate",
                          "peak_reserved_bytes", "meets_target"})
    EXPECT_TRUE(a["candidates"][0].contains(key)) << key;
}

}  // namespace
}  // namespace alloclab
