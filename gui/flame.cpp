#include "flame.hpp"

#include <algorithm>
#include <unordered_map>

#include "alloclab/format/stacks.hpp"

namespace alloclab::gui {

FlameGraph build_flame(const std::vector<StackFrame>& frames,
                       const std::vector<std::vector<std::uint32_t>>& stacks,
                       const std::vector<double>& values, const std::vector<double>* second) {
  FlameGraph graph;
  graph.difference = second != nullptr;
  FlameNode root;
  root.name = "all";
  graph.nodes.push_back(std::move(root));
  graph.node_of_stack.assign(stacks.size() + 1, 0);

  // One name per distinct description: the frames of two call sites in one function merge.
  std::unordered_map<std::string, std::uint32_t> name_ids;
  std::vector<std::uint32_t> name_of_frame(frames.size());
  std::vector<const std::string*> names;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const auto [it, added] =
        name_ids.emplace(describe_function(frames[f]), static_cast<std::uint32_t>(names.size()));
    if (added) names.push_back(&it->first);
    name_of_frame[f] = it->second;
  }
  std::unordered_map<std::uint64_t, std::uint32_t> child_of;  // (parent << 32 | name) -> node

  const auto value_at = [](const std::vector<double>* v, std::size_t s) {
    return v && s < v->size() ? std::max(0.0, (*v)[s]) : 0.0;
  };
  for (std::size_t s = 0; s <= stacks.size(); ++s) {
    const double first = value_at(&values, s);
    const double other = value_at(second, s);
    const double width = std::max(first, other);
    if (width <= 0) continue;
    std::uint32_t node = 0;
    graph.nodes[0].value += width;
    graph.nodes[0].delta += first - other;
    if (s == 0) continue;  // no stack: counted in the root alone
    const std::vector<std::uint32_t>& stack = stacks[s - 1];
    for (auto f = stack.rbegin(); f != stack.rend(); ++f) {
      if (*f >= frames.size()) break;  // a damaged stack keeps the frames it names
      const std::uint32_t name = name_of_frame[*f];
      const std::uint64_t key = (static_cast<std::uint64_t>(node) << 32) | name;
      auto [it, added] = child_of.emplace(key, static_cast<std::uint32_t>(graph.nodes.size()));
      if (added) {
        FlameNode child;
        child.name = *names[name];
        child.parent = node;
        child.depth = graph.nodes[node].depth + 1;
        graph.depth = std::max(graph.depth, child.depth);
        graph.nodes[node].children.push_back(it->second);
        graph.nodes.push_back(std::move(child));
      }
      node = it->second;
      graph.nodes[node].value += width;
      graph.nodes[node].delta += first - other;
    }
    graph.node_of_stack[s] = node;
  }

  // Widest first, so the big boxes sit left; ties by name, the same layout on every run. Each
  // node's children are laid out from its left edge (parents come before children).
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    FlameNode& node = graph.nodes[n];
    std::sort(node.children.begin(), node.children.end(), [&](std::uint32_t a, std::uint32_t b) {
      const FlameNode& x = graph.nodes[a];
      const FlameNode& y = graph.nodes[b];
      return x.value != y.value ? x.value > y.value : x.name < y.name;
    });
    double x = node.x;
    for (const std::uint32_t c : node.children) {
      graph.nodes[c].x = x;
      x += graph.nodes[c].value;
    }
  }
  return graph;
}

std::string flame_path(const FlameGraph& graph, std::uint32_t node) {
  std::vector<const std::string*> chain;
  for (std::uint32_t n = node; n != 0; n = graph.nodes[n].parent)
    chain.push_back(&graph.nodes[n].name);
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!path.empty()) path += ';';
    path += **it;
  }
  return path.empty() ? graph.nodes[0].name : path;
}

std::vector<bool> stacks_through(const FlameGraph& graph, std::uint32_t node) {
  std::vector<bool> through(graph.node_of_stack.size(), node == 0);
  if (node == 0) return through;
  for (std::size_t s = 0; s < graph.node_of_stack.size(); ++s)
    for (std::uint32_t n = graph.node_of_stack[s]; n != 0; n = graph.nodes[n].parent)
      if (n == node) {
        through[s] = true;
        break;
      }
  return through;
}

int flame_node_at(const FlameGraph& graph, double x, std::uint32_t row) {
  if (graph.nodes.empty() || x < 0 || x >= graph.nodes[0].value) return -1;
  std::uint32_t node = 0;
  for (std::uint32_t depth = 0; depth < row; ++depth) {
    const FlameNode& parent = graph.nodes[node];
    const auto child =
        std::find_if(parent.children.begin(), parent.children.end(), [&](std::uint32_t c) {
          return x >= graph.nodes[c].x && x < graph.nodes[c].x + graph.nodes[c].value;
        });
    if (child == parent.children.end()) return -1;
    node = *child;
  }
  return static_cast<int>(node);
}

}  // namespace alloclab::gui
