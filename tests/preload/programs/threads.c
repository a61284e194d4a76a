/* 8 threads allocate; each block is freed by whichever thread pops it from a shared queue. */
#include <pthread.h>
#include <stdlib.h>

#include "torture.h"

enum { threads = 8, per_thread = 20000, queue_size = 1024 };
static void* queue[queue_size];
static int queued;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start, done;
static unsigned long long allocs[threads], frees[threads];

static void* worker(void* arg) {
  int id = (int)(long)arg;
  pthread_barrier_wait(&start);
  unsigned seed = (unsigned)id;
  for (int i = 0; i < per_thread; ++i) {
    void* p = malloc(16 + rand_r(&seed) % 4000);
    ++allocs[id];
    void* victim = NULL;
    pthread_mutex_lock(&lock);
    if (queued == queue_size || (queued > 0 && rand_r(&seed) % 2)) victim = queue[--queued];
    if (queued < queue_size)
      queue[queued++] = p;
    else
      victim = p; /* cannot happen: one was just popped */
    pthread_mutex_unlock(&lock);
    if (victim) {
      free(victim);
      ++frees[id];
    }
  }
  pthread_barrier_wait(&done);
  return NULL;
}

int main(int argc, char** argv) {
  (void)argc;
  pthread_t t[threads];
  pthread_barrier_init(&start, NULL, threads + 1);
  pthread_barrier_init(&done, NULL, threads + 1);
  for (long i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, (void*)i);
  alloclab_run_begin("work");
  pthread_barrier_wait(&start);
  pthread_barrier_wait(&done);
  unsigned long long a = 0, f = 0;
  for (int i = 0; i < threads; ++i) a += allocs[i], f += frees[i];
  while (queued > 0) free(queue[--queued]), ++f;
  alloclab_run_end();
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  torture_count(argv[1], "allocs", a);
  torture_count(argv[1], "frees", f);
  return 0;
}
