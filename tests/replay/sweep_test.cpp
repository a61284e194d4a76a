// Sweep templates: every form of brace group, products, printing of sizes, every error, shards.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "alloclab/format/units.hpp"
#include "alloclab/replay/sweep.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {
namespace {

using Points = std::vector<std::string>;

// The SpecError message of expanding `tmpl` ("" when it expands).
std::string error_of(const std::string& tmpl) {
  try {
    (void)expand_sweep(tmpl);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_MENTIONS(tmpl, part)                                                          \
  do {                                                                                             \
    const std::string message_ = error_of(tmpl);                                                   \
    EXPECT_NE(message_.find(part), std::string::npos)                                              \
        << "template " << (tmpl) << " gave \"" << message_ << "\", expected \"" << (part) << "\""; \
    EXPECT_NE(message_.find("accepted forms"), std::string::npos) << message_;                     \
  } while (false)

TEST(SweepExpand, template_without_groups_is_one_point) {
  EXPECT_EQ(expand_sweep("exact"), Points{"exact"});
  EXPECT_EQ(expand_sweep("fifo-shrink:max=1GiB"), Points{"fifo-shrink:max=1GiB"});
}

TEST(SweepExpand, geometric_range_of_sizes_prints_binary_units) {
  EXPECT_EQ(expand_sweep("fifo-shrink:max={1MiB..4MiB:x2}"),
            (Points{"fifo-shrink:max=1MiB", "fifo-shrink:max=2MiB", "fifo-shrink:max=4MiB"}));
  const Points wide = expand_sweep("{1MiB..4GiB:x2}");
  ASSERT_EQ(wide.size(), 13u);
  EXPECT_EQ(wide.front(), "1MiB");
  EXPECT_EQ(wide[9], "512MiB");
  EXPECT_EQ(wide[10], "1GiB");
  EXPECT_EQ(wide.back(), "4GiB");
}

TEST(SweepExpand, geometric_range_stops_at_the_last_value_not_above_b) {
  EXPECT_EQ(expand_sweep("{1MiB..5MiB:x2}"), (Points{"1MiB", "2MiB", "4MiB"}));
  EXPECT_EQ(expand_sweep("{3..3:x2}"), Points{"3"});
}

TEST(SweepExpand, decimal_factor_rounds_to_whole_bytes) {
  // 1, 1.5, 2.25, 3.375 MiB.
  EXPECT_EQ(expand_sweep("{1MiB..4MiB:x1.5}"), (Points{"1MiB", "1536KiB", "2304KiB", "3456KiB"}));
  // 10, 12.5, 15.625, 19.53, 24.41, 30.52, 38.15: rounded half up.
  EXPECT_EQ(expand_sweep("{10..40:x1.25}"), (Points{"10", "13", "16", "20", "24", "31", "38"}));
  // 1, 1.1, 1.21, 1.33, ... rounds to 1 several times: repeats are skipped.
  EXPECT_EQ(expand_sweep("{1..3:x1.1}"), (Points{"1", "2", "3"}));
}

TEST(SweepExpand, arithmetic_range_of_sizes) {
  const Points p = expand_sweep("{64MiB..1GiB:+64MiB}");
  ASSERT_EQ(p.size(), 16u);
  EXPECT_EQ(p[0], "64MiB");
  EXPECT_EQ(p[2], "192MiB");
  EXPECT_EQ(p[15], "1GiB");
  EXPECT_EQ(expand_sweep("{1KiB..2KiB:+512}"), (Points{"1KiB", "1536", "2KiB"}));
  EXPECT_EQ(expand_sweep("{0..2KiB:+1KiB}"), (Points{"0", "1KiB", "2KiB"}));
}

TEST(SweepExpand, plain_whole_numbers_stay_plain) {
  // No unit given: printed as given (max_items takes counts, which "1KiB" would not be).
  EXPECT_EQ(expand_sweep("max_items={1024..4096:x2}"),
            (Points{"max_items=1024", "max_items=2048", "max_items=4096"}));
  EXPECT_EQ(expand_sweep("{1..3}"), (Points{"1", "2", "3"}));
  EXPECT_EQ(expand_sweep("{0..10:+5}"), (Points{"0", "5", "10"}));
}

TEST(SweepExpand, decimal_ranges_print_the_shortest_form) {
  EXPECT_EQ(expand_sweep("best-fit:max_ratio={1.0..2.0:+0.25}"),
            (Points{"best-fit:max_ratio=1", "best-fit:max_ratio=1.25", "best-fit:max_ratio=1.5",
                    "best-fit:max_ratio=1.75", "best-fit:max_ratio=2"}));
  EXPECT_EQ(expand_sweep("{1..2:+0.5}"), (Points{"1", "1.5", "2"}));
  EXPECT_EQ(expand_sweep("{0.1..0.3:+0.1}"), (Points{"0.1", "0.2", "0.3"}));
  EXPECT_EQ(expand_sweep("{0.1..0.9:x3}"), (Points{"0.1", "0.3", "0.9"}));
  EXPECT_EQ(expand_sweep("{1.0..3.0:x1.5}"), (Points{"1", "1.5", "2.25"}));
}

TEST(SweepExpand, lists_are_verbatim) {
  EXPECT_EQ(expand_sweep("{exact,best-fit,fifo-shrink:max=1GiB}"),
            (Points{"exact", "best-fit", "fifo-shrink:max=1GiB"}));
  EXPECT_EQ(expand_sweep("exact{,:round=256}"), (Points{"exact", "exact:round=256"}));
  EXPECT_EQ(expand_sweep("{only}"), Points{"only"});
}

TEST(SweepExpand, product_varies_the_leftmost_group_slowest) {
  EXPECT_EQ(expand_sweep("fifo-shrink:match={exact,best-fit},max={1MiB..2MiB:x2}"),
            (Points{"fifo-shrink:match=exact,max=1MiB", "fifo-shrink:match=exact,max=2MiB",
                    "fifo-shrink:match=best-fit,max=1MiB", "fifo-shrink:match=best-fit,max=2MiB"}));
  EXPECT_EQ(expand_sweep("{a,b}{1..3}-{x,y}").size(), 12u);
  EXPECT_EQ(expand_sweep("{a,b}{1..3}-{x,y}")[1], "a1-y");
  EXPECT_EQ(expand_sweep("{a,b}{1..3}-{x,y}")[6], "b1-x");
}

TEST(SweepExpand, several_templates_concatenate_in_order) {
  EXPECT_EQ(expand_sweeps({"exact", "fifo-shrink:max={1MiB..2MiB:x2}"}),
            (Points{"exact", "fifo-shrink:max=1MiB", "fifo-shrink:max=2MiB"}));
}

TEST(SweepExpand, sizes_of_points_read_back_as_the_same_bytes) {
  // Points print sizes with size_spec; a spec parses them with parse_size.
  for (unsigned shift = 0; shift < 64; ++shift)
    for (std::uint64_t v : {std::uint64_t{1} << shift, (std::uint64_t{3} << shift) >> 1,
                            (std::uint64_t{1} << shift) + 1, (std::uint64_t{1} << shift) - 1})
      EXPECT_EQ(parse_size(size_spec(v)), v) << v;
  EXPECT_EQ(parse_size(size_spec(~std::uint64_t{0})), ~std::uint64_t{0});
}

TEST(SweepErrors, unbalanced_braces) {
  EXPECT_ERROR_MENTIONS("fifo-shrink:max={1MiB..2MiB:x2", "unbalanced '{'");
  EXPECT_ERROR_MENTIONS("fifo-shrink:max=1MiB..2MiB:x2}", "unbalanced '}'");
}

TEST(SweepErrors, nested_braces) {
  EXPECT_ERROR_MENTIONS("{a,{b,c}}", "cannot nest");
}

TEST(SweepErrors, empty_group) {
  EXPECT_ERROR_MENTIONS("exact:round={}", "group 1 '{}': the group is empty");
  EXPECT_ERROR_MENTIONS("{a,b}{ }", "group 2");
}

TEST(SweepErrors, start_above_end) {
  EXPECT_ERROR_MENTIONS("{4GiB..1MiB:x2}", "greater than end b");
  EXPECT_ERROR_MENTIONS("{2.0..1.0:+0.5}", "greater than end b");
}

TEST(SweepErrors, factor_not_above_one) {
  EXPECT_ERROR_MENTIONS("{1MiB..4MiB:x1}", "must be greater than 1");
  EXPECT_ERROR_MENTIONS("{1MiB..4MiB:x0.5}", "must be greater than 1");
  EXPECT_ERROR_MENTIONS("{0..4MiB:x2}", "cannot start at 0");
}

TEST(SweepErrors, zero_step) {
  EXPECT_ERROR_MENTIONS("{1MiB..4MiB:+0}", "step +0 must be greater than 0");
  EXPECT_ERROR_MENTIONS("{1.0..2.0:+0.0}", "must be greater than 0");
}

TEST(SweepErrors, too_many_points) {
  EXPECT_ERROR_MENTIONS("{1..200000}", "more than 100000 values");
  EXPECT_ERROR_MENTIONS("{0..1GiB:+1}", "more than 100000 values");
  const std::string message = error_of("{1..1000}x{1..1000}");
  EXPECT_NE(message.find("more than 100000 points"), std::string::npos) << message;
  EXPECT_EQ(expand_sweep("{1..100000}").size(), 100000u);
}

TEST(SweepErrors, bad_range_parts) {
  EXPECT_ERROR_MENTIONS("{1MiB..4MiB}", "whole numbers only");
  EXPECT_ERROR_MENTIONS("{1MiB..4MiB:y2}", "must start with x");
  EXPECT_ERROR_MENTIONS("{1MiB..4MiB:}", "not followed by a step");
  EXPECT_ERROR_MENTIONS("{1MiB..4MiB:x}", "has no K");
  EXPECT_ERROR_MENTIONS("{..4MiB:x2}", "no start a");
  EXPECT_ERROR_MENTIONS("{1MiB..:x2}", "no end b");
  EXPECT_ERROR_MENTIONS("{1XB..4MiB:x2}", "start a: invalid size '1XB'");
  EXPECT_ERROR_MENTIONS("{1..4:x1.00000000000000001}", "too close to 1");
  EXPECT_ERROR_MENTIONS("{1.0..2.0:x1.0000000000001}", "too close to 1");
}

TEST(SweepErrors, message_names_the_template_and_the_group) {
  const std::string message = error_of("fifo-shrink:match={exact,best-fit},max={8MiB..1MiB:x2}");
  EXPECT_NE(message.find("sweep template 'fifo-shrink:match={exact,best-fit},max={8MiB..1MiB:x2}'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("group 2 '{8MiB..1MiB:x2}'"), std::string::npos) << message;
}

TEST(SweepShard, parse_accepts_i_of_n) {
  EXPECT_EQ(parse_shard("0/1"), (Shard{0, 1}));
  EXPECT_EQ(parse_shard("3/4"), (Shard{3, 4}));
  EXPECT_EQ(parse_shard(" 1 / 2 "), (Shard{1, 2}));
}

TEST(SweepShard, parse_rejects_everything_else_clearly) {
  for (const char* bad :
       {"2/2", "0/0", "5/3", "1", "a/2", "1/b", "-1/2", "1/-2", "1/2/3", "", "/2", "1/", "1.5/2"}) {
    try {
      (void)parse_shard(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find("0 <= i < n"), std::string::npos) << e.what();
    }
  }
}

TEST(SweepShard, shards_are_disjoint_and_cover_every_point) {
  for (std::size_t total : {0u, 1u, 7u, 100u})
    for (std::size_t n : {1u, 2u, 3u, 8u, 150u}) {
      std::set<std::size_t> seen;
      std::size_t count = 0;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k : shard_points(total, Shard{i, n})) {
          EXPECT_EQ(k % n, i);
          EXPECT_LT(k, total);
          seen.insert(k);
          ++count;
        }
      EXPECT_EQ(count, total) << total << " points, " << n << " shards";
      EXPECT_EQ(seen.size(), total);
    }
  EXPECT_EQ(shard_points(10, Shard{1, 3}), (std::vector<std::size_t>{1, 4, 7}));
}

TEST(SweepPlan, checks_every_spec_before_replaying) {
  try {
    (void)plan_sweep({"exact", "fifo-shrink:maxx={1MiB..2MiB:x2}"}, Shard{});
    ADD_FAILURE() << "accepted an unknown parameter";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("sweep point 1 'fifo-shrink:maxx=1MiB'"),
              std::string::npos)
        << e.what();
  }
  const SweepRun run = plan_sweep({"exact", "fifo-shrink:max={1MiB..8MiB:x2}"}, Shard{1, 2});
  EXPECT_EQ(run.points.size(), 5u);
  EXPECT_EQ(run.point_indices, (std::vector<std::size_t>{1, 3}));
}

}  // namespace
}  // namespace alloclab
