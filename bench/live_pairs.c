/* The program bench/live_hit_path runs plain and under `alloclab run`: THREADS threads each make
 * PAIRS malloc(SIZE) + free pairs (the first byte written, so that nothing is optimised away),
 * all started together; one thread is the main thread, and the program starts no other. Prints the
 * nanoseconds per pair of one thread: the wall time from the start to the last thread's end,
 * divided by PAIRS.
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

static void* churn(void* arg) {
  (void)arg;
  pthread_barrier_wait(&start);
  for (long i = 0; i < pairs; ++i) {
    volatile char* p = malloc(size);
    p[0] = (char)i;
    free((void*)p);
  }
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
    const uint64_t began = now_ns();
    churn(NULL);
    printf("%.2f\n", (double)(now_ns() - began) / (double)pairs);
    return 0;
  }
  pthread_t ids[256];
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, churn, NULL);
  pthread_barrier_wait(&start);
  const uint64_t began = now_ns();
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  const uint64_t took = now_ns() - began;
  printf("%.2f\n", (double)took / (double)pairs);
  return 0;
}
