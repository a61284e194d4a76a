#pragma once
// Allocation sites from recorded call stacks (`alloclab record --stacks N`): which stacks
// allocated most often and most bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// The function (the address in hex when the recorder could not name it), then in parentheses
// where it is: "source file name:line" when the frame has a source location, else the module's
// file name ("main (app.cpp:42)", "malloc (libc.so.6)", "0x7f12 (libfoo.so)").
std::string describe_frame(const StackFrame& frame);
// The frame's function without its line: "function (module file name)", or the source file's
// name for a frame without a module (a PyTorch snapshot's), or the address in hex. Frames of one
// function at several lines share it: folded stacks and flame graphs merge frames by it.
std::string describe_function(const StackFrame& frame);

// `alloclab info --stacks`: how many allocations had a stack, then the top sites by count and by
// bytes, each with its frames; or, for a trace recorded without stacks, a line saying how to
// record them. Each line ends in '\n'.
std::string stack_sites_text(const Trace& trace, const StackSites& sites);

// `alloclab info --json --stacks`'s keys: allocations_with_stack, distinct_stacks and
// top_stacks_by_count, top_stacks_by_bytes (each site: stack, count, bytes and its frames'
// address, function, module).
nlohmann::json stack_sites_json(const Trace& trace, const StackSites& sites);

}  // namespace alloclab
