#pragma once
// Allocation sites from recorded call stacks (`alloclab record --stacks N`): which stacks
// allocated most often and most bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "alloclab/format/trace.hpp"

namespace alloclab {

struct StackSite {
  std::uint32_t stack = 0;  // id in trace.stacks() (1-based)
  std::uint64_t count = 0;  // allocations made with this stack
  std::uint64_t bytes = 0;  // bytes they requested
};

struct StackSites {
  std::uint64_t allocations_with_stack = 0;
  std::uint64_t distinct_stacks = 0;  // stacks that allocated at least once
  std::vector<StackSite> by_count;    // the top `n`, most first
  std::vector<StackSite> by_bytes;
};

// Allocations (program requests, not the allocator's own segment events) by stack.
StackSites top_stack_sites(const Trace& trace, std::size_t n);

// "function (module file name)", or the address in hex when the recorder could not name it.
std::string describe_frame(const StackFrame& frame);

}  // namespace alloclab
