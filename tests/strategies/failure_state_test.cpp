// Strategy::failure_state: what each built-in strategy says about itself once a request failed
// (the largest cached block, what it asked its upstream for, a limit of its own).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "strategy_test_support.hpp"

namespace alloclab {
namespace {

using testing::Stack;

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

TEST(FailureState, caching_strategies_name_their_largest_cached_block) {
  for (const std::string spec :
       {"exact", "best-fit", "fifo-shrink", "fifo-shrink:match=best-fit", "per-run-pool"}) {
    Stack s(spec);
    s.strategy->begin_run();  // per-run-pool caches only inside a run
    EXPECT_EQ(s.strategy->failure_state(10).largest_cached_block, 0u) << spec;
    const Block big = s.alloc(3000);
    s.drop_in(100);
    s.drop_in(5000);
    s.drop_in(700);
    EXPECT_EQ(s.strategy->failure_state(10).largest_cached_block, 5000u) << spec;
    s.free(big);
    EXPECT_EQ(s.strategy->failure_state(10).largest_cached_block, 5000u) << spec;
    EXPECT_EQ(s.strategy->failure_state(6000).upstream_request, 6000u) << spec;
    EXPECT_EQ(s.strategy->failure_state(6000).allowed_bytes, std::nullopt) << spec;
  }
  Stack none("passthrough");
  none.drop_in(100);
  EXPECT_EQ(none.strategy->failure_state(10).largest_cached_block, 0u);
}

TEST(FailureState, the_upstream_request_is_the_request_after_rounding) {
  Stack s("exact:round=512");
  EXPECT_EQ(s.strategy->failure_state(1).upstream_request, 512u);
  EXPECT_EQ(s.strategy->failure_state(1024).upstream_request, 1024u);
  // Rounding would overflow: the request never reaches the upstream.
  EXPECT_EQ(s.strategy->failure_state(~std::uint64_t{0}).upstream_request, std::nullopt);
}

TEST(FailureState, pytorch_names_the_largest_piece_of_any_pool_and_stream_and_its_segment_size) {
  Stack s("pytorch");
  // Stream 1: a 20 MiB segment for 5 MiB, its 15 MiB rest cached. Stream 2: a whole free
  // 12 MiB segment. Stream 3: a small segment, 2 MiB - 1 KiB of it cached.
  ASSERT_TRUE(s.strategy->allocate(5 * MiB, 1));
  const std::optional<Block> twelve = s.strategy->allocate(12 * MiB, 2);
  ASSERT_TRUE(twelve);
  s.strategy->deallocate(*twelve);
  ASSERT_TRUE(s.strategy->allocate(1000, 3));
  const FailureState state = s.strategy->failure_state(5 * MiB);
  EXPECT_EQ(state.largest_cached_block, 15 * MiB);
  EXPECT_EQ(state.upstream_request, 20 * MiB);  // kLargeBuffer for a 1-10 MiB request
  EXPECT_EQ(s.strategy->failure_state(1000).upstream_request, 2 * MiB);
  EXPECT_EQ(s.strategy->failure_state(11 * MiB + 1).upstream_request, 12 * MiB);
  EXPECT_EQ(state.allowed_bytes, std::nullopt);
  Stack limited("pytorch:per_process_memory_fraction=0.5,device_memory=100MiB");
  EXPECT_EQ(limited.strategy->failure_state(1).allowed_bytes, 50 * MiB);
  EXPECT_EQ(limited.strategy->failure_state(1).largest_cached_block, 0u);
}

TEST(FailureState, pytorch_divisions_change_the_segment_asked_for) {
  Stack s("pytorch:roundup_power2_divisions=4");
  // 17 MiB rounds to 20 MiB with 4 divisions, a 20 MiB segment.
  EXPECT_EQ(s.strategy->failure_state(17 * MiB).upstream_request, 20 * MiB);
}

}  // namespace
}  // namespace alloclab
