/* Threads that allocate and free blocks of 100, 101 and 102 bytes while the main thread works
 * (forks, in the fork torture programs), so the tracer has other threads' events in flight. */
#ifndef ALLOCLAB_BUSY_THREADS_H
#define ALLOCLAB_BUSY_THREADS_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "torture.h"

enum { busy_thread_count = 3 };
static pthread_t busy_ids[busy_thread_count];
static pthread_barrier_t busy_start, busy_done;
static atomic_int busy_stop;
static unsigned long long busy_allocs[busy_thread_count];

static void* busy_loop(void* arg) {
  int id = (int)(long)arg;
  pthread_barrier_wait(&busy_start);
  while (!atomic_load_explicit(&busy_stop, memory_order_relaxed)) {
    free(torture_keep(malloc(100 + id)));
    ++busy_allocs[id];
  }
  pthread_barrier_wait(&busy_done);
  return NULL;
}

/* Creates the threads; they start allocating at busy_threads_go(). */
static inline void busy_threads_create(void) {
  pthread_barrier_init(&busy_start, NULL, busy_thread_count + 1);
  pthread_barrier_init(&busy_done, NULL, busy_thread_count + 1);
  for (long i = 0; i < busy_thread_count; ++i)
    pthread_create(&busy_ids[i], NULL, busy_loop, (void*)i);
}

static inline void busy_threads_go(void) {
  pthread_barrier_wait(&busy_start);
}

/* Stops them and returns how many blocks they allocated (and freed) in all. */
static inline unsigned long long busy_threads_stop(void) {
  atomic_store_explicit(&busy_stop, 1, memory_order_relaxed);
  pthread_barrier_wait(&busy_done);
  unsigned long long allocs = 0;
  for (int i = 0; i < busy_thread_count; ++i) allocs += busy_allocs[i];
  return allocs;
}

static inline void busy_threads_join(void) {
  for (int i = 0; i < busy_thread_count; ++i) pthread_join(busy_ids[i], NULL);
}
#endif
