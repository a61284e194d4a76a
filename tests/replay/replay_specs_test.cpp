// Replaying several specs on one trace in parallel: the results in the order of the specs, the
// same as one replay each, and a cancelled set said to be interrupted.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {
namespace {

const ResolvedTrace& cnn() {
  static const ResolvedTrace trace =
      resolve(read_alt(std::string(ALLOCLAB_TRACES_DIR) + "/cnn-inference.alt"));
  return trace;
}

const std::vector<std::string> kSpecs = {"exact", "fifo-shrink:max=1MiB", "passthrough", "best-fit",
                                         "fifo-shrink:max=16MiB,match=best-fit"};

TEST(ReplaySpecs, results_follow_the_specs_and_equal_one_replay_each) {
  const ReplaySetOutcome outcome = replay_specs(cnn(), kSpecs, {}, 3);
  EXPECT_FALSE(outcome.interrupted);
  ASSERT_EQ(outcome.results.size(), kSpecs.size());
  for (std::size_t i = 0; i < kSpecs.size(); ++i) {
    EXPECT_EQ(outcome.results[i].strategy, kSpecs[i]);
    EXPECT_EQ(metrics_json(outcome.results[i].metrics),
              metrics_json(replay_trace(cnn(), kSpecs[i]).result.metrics))
        << kSpecs[i];
  }
}

TEST(ReplaySpecs, the_pytorch_models_start_first_and_the_rest_as_given) {
  const std::vector<std::string> specs = {
      "exact",       " pytorch-conf :conf=expandable_segments:True",
      "passthrough", "pytorch",
      "pytorchish",  "best-fit"};
  EXPECT_EQ(replay_order(specs), (std::vector<std::size_t>{1, 3, 0, 2, 4, 5}));
  EXPECT_TRUE(replay_order({}).empty());
  // Results still follow the specs' order.
  const std::vector<std::string> mixed = {"exact", "pytorch", "passthrough"};
  const ReplaySetOutcome outcome = replay_specs(cnn(), mixed, {}, 1);
  for (std::size_t i = 0; i < mixed.size(); ++i) EXPECT_EQ(outcome.results[i].strategy, mixed[i]);
}

TEST(ReplaySpecs, progress_counts_every_operation_of_every_replay) {
  std::atomic<std::uint64_t> progress{0};
  ReplayOptions options;
  options.progress = &progress;
  (void)replay_specs(cnn(), kSpecs, options, 2);
  EXPECT_EQ(progress.load(), cnn().ops.size() * kSpecs.size());
}

TEST(ReplaySpecs, a_cancelled_set_is_interrupted) {
  const std::atomic<bool> cancel{true};
  ReplayOptions options;
  options.cancel = &cancel;
  EXPECT_TRUE(replay_specs(cnn(), kSpecs, options, 2).interrupted);
}

TEST(ReplaySpecs, a_bad_spec_throws_after_every_replay_stopped) {
  EXPECT_THROW(replay_specs(cnn(), {"exact", "no-such-strategy"}, {}, 2), SpecError);
}

}  // namespace
}  // namespace alloclab
