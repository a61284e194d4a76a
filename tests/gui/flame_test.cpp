#include "gui/flame.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace alloclab::gui {
namespace {

// main -> run -> {load, step}; step calls make_buffer twice (two call sites, one function).
struct Stacks {
  std::vector<StackFrame> frames = {
      {0x10, "main", "/bin/p"},         // 0
      {0x20, "run", "/bin/p"},          // 1
      {0x30, "load", "/bin/p"},         // 2
      {0x40, "step", "/bin/p"},         // 3
      {0x50, "make_buffer", "/bin/p"},  // 4
      {0x51, "make_buffer", "/bin/p"},  // 5: another address in the same function
  };
  // Innermost first, as Trace::stacks().
  std::vector<std::vector<std::uint32_t>> stacks = {
      {2, 1, 0},     // id 1: main;run;load
      {4, 3, 1, 0},  // id 2: main;run;step;make_buffer
      {5, 3, 1, 0},  // id 3: the same chain through the other call site
  };
};

const FlameNode* find(const FlameGraph& g, const std::string& path) {
  for (std::uint32_t n = 0; n < g.nodes.size(); ++n)
    if (flame_path(g, n) == path) return &g.nodes[n];
  return nullptr;
}

TEST(Flame, widths_sum_along_the_caller_chain_and_frames_of_one_function_merge) {
  const Stacks s;
  const FlameGraph g = build_flame(s.frames, s.stacks, {5, 10, 30, 60});
  EXPECT_EQ(g.nodes[0].value, 105);  // with the 5 of allocations without a stack
  ASSERT_NE(find(g, "main (p)"), nullptr);
  EXPECT_EQ(find(g, "main (p)")->value, 100);
  EXPECT_EQ(find(g, "main (p);run (p);step (p)")->value, 90);
  const FlameNode* buffer = find(g, "main (p);run (p);step (p);make_buffer (p)");
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->value, 90);  // both call sites
  EXPECT_EQ(g.depth, 4u);
  EXPECT_EQ(g.node_of_stack[2], g.node_of_stack[3]);
  // Widest first: step (90) left of load (10), inside run's span.
  const FlameNode* step = find(g, "main (p);run (p);step (p)");
  const FlameNode* load = find(g, "main (p);run (p);load (p)");
  EXPECT_EQ(step->x, 0);
  EXPECT_EQ(load->x, 90);
}

TEST(Flame, stacks_with_nothing_are_left_out) {
  const Stacks s;
  const FlameGraph g = build_flame(s.frames, s.stacks, {0, 7, 0, -3});
  EXPECT_EQ(g.nodes[0].value, 7);
  EXPECT_EQ(find(g, "main (p);run (p);step (p)"), nullptr);
  EXPECT_EQ(g.node_of_stack[2], 0u);
}

TEST(Flame, a_difference_graph_is_as_wide_as_the_larger_and_keeps_the_sign) {
  const Stacks s;
  const std::vector<double> second = {0, 40, 0, 0};
  const FlameGraph g = build_flame(s.frames, s.stacks, {0, 10, 30, 60}, &second);
  EXPECT_TRUE(g.difference);
  EXPECT_EQ(find(g, "main (p);run (p);load (p)")->value, 40);
  EXPECT_EQ(find(g, "main (p);run (p);load (p)")->delta, -30);
  EXPECT_EQ(find(g, "main (p);run (p);step (p)")->delta, 90);
  EXPECT_EQ(g.nodes[0].delta, 60);
}

TEST(Flame, a_box_selects_the_stacks_through_it) {
  const Stacks s;
  const FlameGraph g = build_flame(s.frames, s.stacks, {0, 10, 30, 60});
  const std::uint32_t step =
      static_cast<std::uint32_t>(find(g, "main (p);run (p);step (p)") - g.nodes.data());
  EXPECT_EQ(stacks_through(g, step), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(stacks_through(g, 0), (std::vector<bool>{true, true, true, true}));
  // The point under the mouse: row 3 at x 95 is load (x 90..100), at x 10 step.
  EXPECT_EQ(flame_path(g, static_cast<std::uint32_t>(flame_node_at(g, 95, 3))),
            "main (p);run (p);load (p)");
  EXPECT_EQ(flame_path(g, static_cast<std::uint32_t>(flame_node_at(g, 10, 3))),
            "main (p);run (p);step (p)");
  EXPECT_EQ(flame_node_at(g, 95, 4), -1);  // load calls nothing
  EXPECT_EQ(flame_node_at(g, 200, 0), -1);
}

TEST(Flame, deep_stacks_of_thousands_of_sites_build_quickly_and_exactly) {
  // 64-frame stacks, 5,000 distinct ones over a shared trunk of 32 frames.
  std::vector<StackFrame> frames;
  for (std::uint32_t f = 0; f < 32 + 5000 * 32; ++f)
    frames.push_back({f, "f" + std::to_string(f), "/lib/x.so"});
  std::vector<std::vector<std::uint32_t>> stacks;
  std::vector<double> values = {0};
  for (std::uint32_t s = 0; s < 5000; ++s) {
    std::vector<std::uint32_t> stack;
    for (std::uint32_t d = 0; d < 32; ++d) stack.push_back(32 + s * 32 + d);
    for (std::uint32_t d = 32; d-- > 0;) stack.push_back(d);
    stacks.push_back(stack);
    values.push_back(s + 1);
  }
  const FlameGraph g = build_flame(frames, stacks, values);
  EXPECT_EQ(g.depth, 64u);
  EXPECT_EQ(g.nodes.size(), 1u + 32 + 5000 * 32);
  EXPECT_EQ(g.nodes[0].value, 5000.0 * 5001 / 2);
}

}  // namespace
}  // namespace alloclab::gui
