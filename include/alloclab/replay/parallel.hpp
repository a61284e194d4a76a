#pragma once
// Runs independent jobs on a small pool of threads (specs and sweep points replay in parallel;
// each job is deterministic on its own, so the order they finish in does not matter).
#include <cstddef>
#include <functional>

namespace alloclab {

// Calls job(i) for every i in [0, count) on up to `threads` threads (0: all cores). The first
// exception thrown by a job is rethrown here after every thread has stopped.
void parallel_for(std::size_t count, std::size_t threads,
                  const std::function<void(std::size_t)>& job);

std::size_t default_thread_count();

}  // namespace alloclab
