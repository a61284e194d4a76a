#pragma once
// The flame graph (an icicle: callers on top, callees below) of a trace's call stacks. Each stack
// carries a value (live bytes at a time, a strategy's misses or slack, ...); a box is one frame
// reached through one chain of callers, as wide as the values of every stack through that chain.
// Frames are merged by name (describe_function), so two calls from one function are one box, as
// flamegraph.pl and speedscope draw them.
#include <cstdint>
#include <string>
#include <vector>

#include "alloclab/format/trace.hpp"

namespace alloclab::gui {

struct FlameNode {
  std::string name;          // describe_function of its frame; "all" for the root
  std::uint32_t parent = 0;  // the root is its own parent
  std::uint32_t depth = 0;   // 0 for the root
  double value = 0;          // the width: the sum over the stacks through it
  double delta = 0;          // a difference graph: first minus second, summed the same way
  double x = 0;              // left edge, in the root's value units (the root spans [0, value))
  std::vector<std::uint32_t> children;  // widest first, then by name
};

struct FlameGraph {
  std::vector<FlameNode> nodes;  // nodes[0] is the root
  std::uint32_t depth = 0;       // the deepest node's depth
  bool difference = false;
  // For each stack id (index 0: allocations without a stack, which sit in the root itself), the
  // node of its innermost frame; 0 for a stack with nothing to show.
  std::vector<std::uint32_t> node_of_stack;
};

// `stacks` as Trace::stacks() (innermost frame first; stack id k is stacks[k - 1]); `values`
// per stack id (index 0: no stack), negative values read as 0. With `second` (same shape), a
// difference graph: widths are max(first, second) per stack and `delta` first - second.
FlameGraph build_flame(const std::vector<StackFrame>& frames,
                       const std::vector<std::vector<std::uint32_t>>& stacks,
                       const std::vector<double>& values,
                       const std::vector<double>* second = nullptr);

// The caller chain of `node`, outermost first ("main;run;alloc_buffer"), as folded stacks name it.
std::string flame_path(const FlameGraph& graph, std::uint32_t node);

// Per stack id, whether the stack passes through `node` (the root: every stack).
std::vector<bool> stacks_through(const FlameGraph& graph, std::uint32_t node);

// The deepest node under the point (x in root value units, row = depth), or -1.
int flame_node_at(const FlameGraph& graph, double x, std::uint32_t row);

}  // namespace alloclab::gui
