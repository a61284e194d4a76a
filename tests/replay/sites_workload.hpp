#pragma once
// A trace with call stacks at realistic sizes, for the site tests and bench/sites_bench: a
// synthetic workload whose allocations each get one of many 16-frame stacks, some of which leak.
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "alloclab/format/synthetic.hpp"
#include "alloclab/format/trace.hpp"
#include "tests/split_mix.hpp"

namespace alloclab::test {

struct StackedOptions {
  std::uint32_t stacks = 2000;     // distinct call stacks
  std::uint32_t depth = 16;        // frames per stack
  std::uint32_t functions = 600;   // distinct functions the frames are drawn from
  std::uint64_t leak_every = 500;  // one allocation in this many is never freed (0: none)
  std::uint64_t seed = 7;
};

// A copy of `base` where each program allocation carries a stack (stack k's innermost frame is
// function k % functions) and one in `leak_every` moves to an address of its own and loses its
// free.
inline Trace with_stacks(const Trace& base, const StackedOptions& o) {
  Trace out;
  out.reserve(base.size());
  for (const Origin& origin : base.origins()) out.add_origin(origin);
  std::vector<std::uint32_t> functions;
  for (std::uint32_t f = 0; f < o.functions; ++f)
    functions.push_back(out.add_frame(
        StackFrame{0x401000 + 0x40ull * f, "fn_" + std::to_string(f), "/opt/work/libwork.so"}));
  SplitMix rng{o.seed};
  for (std::uint32_t s = 0; s < o.stacks; ++s) {
    std::vector<std::uint32_t> frames{functions[s % o.functions]};
    while (frames.size() < o.depth) frames.push_back(functions[rng.below(o.functions)]);
    out.add_stack(std::move(frames));
  }
  std::unordered_set<std::uint64_t> leaked;
  std::uint64_t next_leak_address = 0x7e0000000000ull, allocs = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    std::uint64_t address = base.address(i);
    const bool program_alloc = base.op(i) == Op::alloc && !base.segment(i) && address != 0;
    if (base.op(i) == Op::free && !base.segment(i) && leaked.erase(address)) continue;
    if (program_alloc && o.leak_every && ++allocs % o.leak_every == 0) {
      leaked.insert(address);
      address = next_leak_address;
      next_leak_address += 1 << 20;
    }
    out.append_raw(base.time_ns(i), address, base.size_of(i), base.origin_index(i),
                   base.raw_attrs(i));
    if (program_alloc) {
      // Skewed: a few stacks allocate most, as in programs.
      const std::uint64_t r = rng.next();
      const std::uint32_t stack = (r & 3) != 0 ? static_cast<std::uint32_t>((r >> 8) % 32)
                                               : static_cast<std::uint32_t>((r >> 8) % o.stacks);
      out.set_stack_id(out.size() - 1, stack + 1);
    }
  }
  return out;
}

// A transformer-shaped synthetic trace of at least `events` events, with stacks.
inline Trace stacked_workload(std::uint64_t events, const StackedOptions& o = {}) {
  SyntheticOptions s;
  s.shape = SyntheticShape::transformer;
  s.runs = 1;
  s.min_events = events;
  return with_stacks(generate_synthetic(s), o);
}

}  // namespace alloclab::test
