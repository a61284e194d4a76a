#pragma once
// Whether a thread is inside a live library's own work (serving the program through the cache,
// or setting it up): calls it makes then go straight to the real functions. What the cache and
// the strategy allocate for themselves is alloclab's, not the program's, so two other guards
// are taken as well:
// - a recorder's preloaded beside the library (`run --record`, alloclab_preload_guard), which
//   then records none of it, as the CUDA tracer hides its own work;
// - the host live library's (alloclab_live_guard), in the libraries for device memory and
//   PyTorch: their own allocations reach the program's malloc, which is liballoclab_live.so's
//   under `run`, and would otherwise go through the host strategy as the program's requests.
//
// Each source file that includes it has a guard of its own (and calls find_guards): enough,
// as long as one file's work never calls into another's entry points. liballoclab_live.so's
// hooks define ALLOCLAB_LIVE_HOST_GUARD, being that guard themselves.
#include <dlfcn.h>

namespace alloclab::live {
namespace {

using Guard = void (*)(int);
Guard g_recorder_guard = nullptr;
Guard g_host_guard = nullptr;

// Looks the other guards up; call once, before the first Inside. The host's guard first, and
// held while the recorder's is looked up: a lookup that fails allocates dlerror's message.
void find_guards() {
#ifndef ALLOCLAB_LIVE_HOST_GUARD
  g_host_guard = reinterpret_cast<Guard>(dlsym(RTLD_DEFAULT, "alloclab_live_guard"));
#endif
  if (g_host_guard != nullptr) g_host_guard(1);
  g_recorder_guard = reinterpret_cast<Guard>(dlsym(RTLD_DEFAULT, "alloclab_preload_guard"));
  if (g_host_guard != nullptr) g_host_guard(-1);
}

thread_local int t_inside __attribute__((tls_model("initial-exec"))) = 0;

struct Inside {
  Inside() {
    ++t_inside;
    if (g_recorder_guard != nullptr) g_recorder_guard(1);
    if (g_host_guard != nullptr) g_host_guard(1);
  }
  ~Inside() {
    if (g_host_guard != nullptr) g_host_guard(-1);
    if (g_recorder_guard != nullptr) g_recorder_guard(-1);
    --t_inside;
  }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

}  // namespace
}  // namespace alloclab::live
