/* The program bench/live_hit_path runs plain and under `alloclab run`: THREADS threads each make
 * PAIRS malloc(SIZE) + free pairs (the first byte written, so that nothing is optimised away),
 * all started together; with one thread it is the main thread, and the program starts no other.
 * Prints two numbers of nanoseconds per pair of one thread:
 * - the wall time from the start to the last thread's end, divided by PAIRS;
 * - the fastest batch of kBatch pairs of any thread: the cost of a pair where no other process
 *   took the core meanwhile, which on a shared, loaded machine the first number is not.
 *
 *     live_pairs SIZE THREADS PAIRS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs;
static size_t size;
static pthread_barrier_t start;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reading the clock once per batch costs a pair's time over a thousand pairs. */
enum { kBatch = 1000 };

/* Fills *(double*)arg with the thread's fastest batch (ns per pair). */
static void* churn(void* arg) {
  double best = 1e300;
  pthread_barrier_wait(&start);
  uint64_t batch_start = now_ns();
  for (long i = 0; i < pairs; ++i) {
    volatile char* p = malloc(size);
    p[0] = (char)i;
    free((void*)p);
    if ((i + 1) % kBatch == 0) {
      const uint64_t t = now_ns();
      const double per_pair = (double)(t - batch_start) / kBatch;
      if (per_pair < best) best = per_pair;
      batch_start = t;
    }
  }
  if (pairs < kBatch) best = (double)(now_ns() - batch_start) / (double)pairs; /* no whole batch */
  *(double*)arg = best;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: live_pairs SIZE THREADS PAIRS\n");
    return 2;
  }
  size = (size_t)strtoull(argv[1], NULL, 10);
  const int threads = atoi(argv[2]);
  pairs = atol(argv[3]);
  if (threads < 1 || threads > 256 || pairs < 1) return 2;
  if (threads == 1) {
    /* On the main thread: a program that never starts a thread lets the allocators skip their
     * locks (glibc's and the live library's alike). */
    pthread_barrier_init(&start, NULL, 1);
    double best;
    const uint64_t began = now_ns();
    churn(&best);
    printf("%.2f %.2f\n", (double)(now_ns() - began) / (double)pairs, best);
    return 0;
  }
  pthread_t ids[256];
  double bests[256];
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, churn, &bests[t]);
  /* Read before the threads are let go: after, this thread may not run again until they end. */
  const uint64_t began = now_ns();
  pthread_barrier_wait(&start);
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  const uint64_t took = now_ns() - began;
  double best = bests[0];
  for (int t = 1; t < threads; ++t)
    if (bests[t] < best) best = bests[t];
  printf("%.2f %.2f\n", (double)took / (double)pairs, best);
  return 0;
}
