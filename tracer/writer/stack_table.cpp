#include "stack_table.hpp"

namespace alloclab::writer {

std::size_t StackTable::KeyHash::operator()(const std::vector<std::uint64_t>& key) const noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ key.size();
  for (std::uint64_t v : key) h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
  return static_cast<std::size_t>(h ^ (h >> 31));
}

std::uint32_t StackTable::frame_index(std::uint64_t address, Trace& trace) {
  if (const auto it = frames_.find(address); it != frames_.end()) return it->second;
  FrameName name = namer_.name(address);
  StackFrame frame;
  frame.address = address;
  frame.function = std::move(name.function);
  frame.module = std::move(name.module);
  frame.file = std::move(name.file);
  frame.line = name.line;
  const std::uint32_t index = trace.add_frame(std::move(frame));
  frames_.emplace(address, index);
  return index;
}

std::uint32_t StackTable::intern(const std::uint64_t* frames, int depth, Trace& trace) {
  if (depth <= 0) return 0;
  key_.assign(frames, frames + depth);
  if (const auto it = stacks_.find(key_); it != stacks_.end()) return it->second;
  std::vector<std::uint32_t> indices;
  indices.reserve(key_.size());
  for (std::uint64_t address : key_) indices.push_back(frame_index(address, trace));
  const std::uint32_t id = trace.add_stack(std::move(indices));
  stacks_.emplace(key_, id);
  return id;
}

}  // namespace alloclab::writer
