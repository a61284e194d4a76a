// A long replay on a terminal: the progress bar's line, and Ctrl-C turned into a flag that a
// replay stops on, once, while the guard lives.
#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/progress.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {
namespace {

TEST(ProgressLine, fills_forty_columns_in_proportion) {
  EXPECT_EQ(progress_line("replay", 0, 10), "replay [" + std::string(40, ' ') + "]   0%");
  EXPECT_EQ(progress_line("replay", 52, 100),
            "replay [" + std::string(20, '#') + std::string(20, ' ') + "]  52%");
  EXPECT_EQ(progress_line("sweep", 7, 7), "sweep [" + std::string(40, '#') + "] 100%");
}

TEST(ProgressLine, counts_past_the_total_as_done) {
  // Replays advance the counter in steps: the last step may pass a total that was estimated.
  EXPECT_EQ(progress_line("advise", 250, 200), progress_line("advise", 200, 200));
}

TEST(ProgressBar, counts_without_a_terminal_and_stops_at_once) {
  // Under ctest stderr is no terminal: nothing is drawn, no thread waits to be joined.
  ProgressBar bar("replay", 100);
  bar.counter().fetch_add(40);
  EXPECT_EQ(bar.counter().load(), 40u);
}

sighandler_t current_sigint_handler() {
  struct sigaction now = {};
  ::sigaction(SIGINT, nullptr, &now);
  return now.sa_handler;
}

TEST(InterruptGuard, the_first_sigint_sets_the_flag_instead_of_killing) {
  const sighandler_t before = current_sigint_handler();
  {
    InterruptGuard guard;
    EXPECT_FALSE(guard.interrupted());
    ::raise(SIGINT);
    EXPECT_TRUE(guard.interrupted());
    // A second Ctrl-C behaves as it would have without the guard.
    EXPECT_EQ(current_sigint_handler(), before);
  }
  EXPECT_EQ(current_sigint_handler(), before);
}

TEST(InterruptGuard, a_new_guard_starts_uninterrupted_and_is_undone_by_its_destructor) {
  const sighandler_t before = current_sigint_handler();
  {
    InterruptGuard first;
    ::raise(SIGINT);
    ASSERT_TRUE(first.interrupted());
  }
  InterruptGuard second;
  EXPECT_FALSE(second.interrupted());
  EXPECT_NE(current_sigint_handler(), before);
}

TEST(InterruptGuard, a_replay_watching_the_flag_stops_when_it_is_set) {
  SyntheticOptions synthetic;
  synthetic.min_events = 400'000;  // several of a replay's cancel checks (every 65,536 ops)
  const ResolvedTrace trace = resolve(generate_synthetic(synthetic));
  InterruptGuard guard;
  ::raise(SIGINT);
  ReplayOptions options;
  options.cancel = &guard.flag();
  EXPECT_TRUE(replay_trace(trace, "exact", options).interrupted);
}

}  // namespace
}  // namespace alloclab
