/* Run markers for programs traced by `alloclab record` (C and C++).
 *
 *   alloclab_run_begin("forward");  ... one unit of work ...  alloclab_run_end();
 *   alloclab_mark("checkpoint");
 *
 * Header only, nothing to link. Each function looks the tracer's entry point up once with
 * dlsym(RTLD_DEFAULT, ...) and caches it: a program that is not traced pays one dlsym per
 * function, then a NULL check. Labels are truncated to 63 bytes (before a UTF-8 character,
 * not inside one). Link with -ldl on glibc < 2.34.
 */
#ifndef ALLOCLAB_MARKERS_H
#define ALLOCLAB_MARKERS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*alloclab_label_fn)(const char*);
typedef void (*alloclab_void_fn)(void);

/* (void*)1: looked up, not there. */
static inline void* alloclab_markers_lookup_(void** cache, const char* name) {
  void* fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!fn) {
    fn = dlsym(RTLD_DEFAULT, name);
    if (!fn) fn = (void*)1;
    __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
  }
  return fn == (void*)1 ? (void*)0 : fn;
}

/* memcpy, not a cast: ISO C has no conversion from object to function pointers. */
static inline void alloclab_run_begin(const char* label) {
  static void* cache;
  void* fn = alloclab_markers_lookup_(&cache, "alloclab_preload_run_begin");
  alloclab_label_fn call;
  if (!fn) return;
  __builtin_memcpy(&call, &fn, sizeof call);
  call(label);
}

static inline void alloclab_run_end(void) {
  static void* cache;
  void* fn = alloclab_markers_lookup_(&cache, "alloclab_preload_run_end");
  alloclab_void_fn call;
  if (!fn) return;
  __builtin_memcpy(&call, &fn, sizeof call);
  call();
}

static inline void alloclab_mark(const char* label) {
  static void* cache;
  void* fn = alloclab_markers_lookup_(&cache, "alloclab_preload_mark");
  alloclab_label_fn call;
  if (!fn) return;
  __builtin_memcpy(&call, &fn, sizeof call);
  call(label);
}

#ifdef __cplusplus
}
#endif

#endif
