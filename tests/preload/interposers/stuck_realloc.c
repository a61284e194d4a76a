/* Preloaded behind the tracer by two tests: the realloc the tracer calls through (its
 * dlsym(RTLD_NEXT) finds this one first), which never returns for one request size. That is a
 * thread stopped for good inside an allocation call, as a signal handler that leaves with
 * siglongjmp or a deadlocked allocator below the tracer would leave it: the tracer's record of
 * the call stays incomplete. For a second size it returns after 1.5 s, a record completed after
 * the writer gave up waiting for it. Every request goes on to the next realloc. */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "stuck_realloc.h"

__attribute__((visibility("default"))) void* realloc(void* p, size_t size) {
  static void* (*next)(void*, size_t);
  if (size == stuck_realloc_size)
    for (;;) pause();
  if (size == late_realloc_size) usleep(1500000);
  void* (*call)(void*, size_t) = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
  if (!call) {
    /* ISO C cannot cast dlsym's object pointer to a function pointer; POSIX guarantees it. */
    void* symbol = dlsym(RTLD_NEXT, "realloc");
    memcpy(&call, &symbol, sizeof symbol);
    __atomic_store_n(&next, call, __ATOMIC_RELEASE);
  }
  return call(p, size);
}
