/* More threads than the tracer keeps buffers in its backlog (128), all alive at once, each
 * allocating and freeing a few blocks: none of them is behind, so none may wait or lose events.
 * many_threads COUNTS_FILE [THREADS] (default 300). */
#include <pthread.h>
#include <stdlib.h>

#include "torture.h"

enum { per_thread = 10, most_threads = 1000 };
static pthread_barrier_t all_started, all_allocated, all_freed;

static void* worker(void* unused) {
  void* blocks[per_thread];
  pthread_barrier_wait(&all_started);
  for (int i = 0; i < per_thread; ++i) blocks[i] = torture_keep(malloc(32 + (size_t)i * 48));
  /* Every thread holds its blocks, and so its buffer, until all have allocated. */
  pthread_barrier_wait(&all_allocated);
  for (int i = 0; i < per_thread; ++i) free(blocks[i]);
  pthread_barrier_wait(&all_freed);
  return unused;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int threads = argc > 2 ? atoi(argv[2]) : 300;
  if (threads < 1 || threads > most_threads) return 2;
  static pthread_t t[most_threads];
  pthread_barrier_init(&all_started, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&all_allocated, NULL, (unsigned)threads);
  pthread_barrier_init(&all_freed, NULL, (unsigned)threads + 1);
  for (int i = 0; i < threads; ++i)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 1;
  alloclab_run_begin("work");
  pthread_barrier_wait(&all_started);
  pthread_barrier_wait(&all_freed);
  /* Before the joins: joining frees each thread's own bookkeeping. */
  alloclab_run_end();
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  torture_count(argv[1], "allocs", (unsigned long long)threads * per_thread);
  torture_count(argv[1], "frees", (unsigned long long)threads * per_thread);
  return 0;
}
