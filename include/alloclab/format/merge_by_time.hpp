#pragma once
// `record --cuda --cpu`: the CUDA tracer and the preload tracer each write their own file (each
// keeps its own order); afterwards the two become one trace, ordered by time. Both stamp events
// with CLOCK_MONOTONIC, and their addresses never meet (CUDA events are recorded on cuda:N, host
// ones on the CPU), so a merge by time keeps every address's history intact.
#include "alloclab/format/trace.hpp"

namespace alloclab {

// Events of both traces in time order; on equal times `first`'s come first, and each trace's
// own order is kept (a stable merge). Metadata is `first`'s, with `second`'s under
// "merged_trace"; warnings of both are kept, and so are the call stacks of both (their frame and
// stack tables, `second`'s after `first`'s).
Trace merge_by_time(const Trace& first, const Trace& second);

}  // namespace alloclab
