#pragma once
// Turns a record's raw frames into a stack id of the trace: each distinct stack is added to the
// trace's stack table once, and each distinct frame to its frame table once, named then.
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "alloclab/format/trace.hpp"
#include "frame_namer.hpp"

namespace alloclab::writer {

class StackTable {
 public:
  explicit StackTable(FrameNamer& namer) : namer_(namer) {}

  // The id in `trace` of the stack `frames[0..depth)` (innermost first); 0 for an empty one.
  std::uint32_t intern(const std::uint64_t* frames, int depth, Trace& trace);

 private:
  std::uint32_t frame_index(std::uint64_t address, Trace& trace);

  struct KeyHash {
    std::size_t operator()(const std::vector<std::uint64_t>& key) const noexcept;
  };
  FrameNamer& namer_;
  std::unordered_map<std::vector<std::uint64_t>, std::uint32_t, KeyHash> stacks_;
  std::unordered_map<std::uint64_t, std::uint32_t> frames_;
  std::vector<std::uint64_t> key_;
};

}  // namespace alloclab::writer
