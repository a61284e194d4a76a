#pragma once
// Tests that run the LD_PRELOAD tracer inside other programs, in the sanitizer builds: an
// ASan-built preload library cannot be preloaded into programs built without ASan, and under
// ThreadSanitizer some torture programs cannot run (each test says why).
#include <gtest/gtest.h>

namespace alloclab::test {

#if defined(__SANITIZE_ADDRESS__)
#define ALLOCLAB_SKIP_UNDER_ASAN() \
  GTEST_SKIP() << "an ASan-built preload library cannot be preloaded into other programs"
#else
#define ALLOCLAB_SKIP_UNDER_ASAN() (void)0
#endif

// scripts/test-tsan: the preload library and the torture programs built with ThreadSanitizer.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool under_tsan = true;
#define ALLOCLAB_SKIP_UNDER_TSAN(why) GTEST_SKIP() << "under ThreadSanitizer: " why
#else
inline constexpr bool under_tsan = false;
#define ALLOCLAB_SKIP_UNDER_TSAN(why) (void)0
#endif

}  // namespace alloclab::test
