#pragma once
// Whether a thread is inside a live library's own work (serving the program through the cache,
// or setting it up): calls it makes then go straight to the real functions, and a recorder
// preloaded beside the library (`run --record`) records none of them, through the recorder's
// guard (alloclab_preload_guard), as the CUDA tracer hides its own work. What the cache and the
// strategy allocate for themselves is alloclab's, not the program's.
//
// Each source file that includes it has a guard of its own (and calls find_recorder_guard):
// enough, as long as one file's work never calls into another's entry points.
#include <dlfcn.h>

namespace alloclab::live {
namespace {

using RecorderGuard = void (*)(int);
RecorderGuard g_recorder_guard = nullptr;

// Looks the recorder's guard up; call once, before the first Inside.
void find_recorder_guard() {
  g_recorder_guard = reinterpret_cast<RecorderGuard>(dlsym(RTLD_DEFAULT, "alloclab_preload_guard"));
}

thread_local int t_inside __attribute__((tls_model("initial-exec"))) = 0;

struct Inside {
  Inside() {
    ++t_inside;
    if (g_recorder_guard != nullptr) g_recorder_guard(1);
  }
  ~Inside() {
    if (g_recorder_guard != nullptr) g_recorder_guard(-1);
    --t_inside;
  }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

}  // namespace
}  // namespace alloclab::live
