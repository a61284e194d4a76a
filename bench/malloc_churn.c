/* The malloc-heavy program that bench/tracer_overhead runs plain and under tracers.
 *
 * malloc_churn [PAIRS] [LIVE] [--idle-thread] [--small]: PAIRS malloc/free pairs (default
 * 5,000,000) over a working set of LIVE blocks (default 4096); sizes 16 B to 64 KiB, log-uniform
 * (as many 16-31 B blocks as 32-64 KiB ones), from a fixed-seed generator so every run does the
 * same calls. Each block's first byte is written so the allocation cannot be optimised away.
 * Prints the pair count.
 *
 * --small keeps the sizes below 1 KiB (16 B to 1 KiB, log-uniform), where glibc serves most
 * requests from its per-thread cache in a few nanoseconds: a program that makes events faster
 * than a tracer's writer thread can encode them.
 *
 * With MALLOC_CHURN_THREAD_CPU=1 in the environment it also prints, on stderr, the CPU time of
 * its own (main) thread: what a tracer costs the program itself, without its writer thread or
 * its start and end.
 *
 * --large takes sizes from 64 KiB to 16 MiB (log-uniform, eight sizes per power of two, as a
 * program's tensors and buffers repeat their shapes) and writes every 4 KiB page of each block: the
 * buffers where glibc maps fresh pages, and a cache in front of it saves their faults
 * (bench/end_to_end). Use a smaller PAIRS and LIVE with it (e.g. 20000 64).
 *
 * --idle-thread starts one thread that only sleeps. glibc's malloc and free skip their arena
 * lock while a process has a single thread; any second thread, such as an in-process tracer's
 * writer, turns the locks on for good. This run shows what that alone costs. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void) {
  /* xorshift64*: fast and good enough to pick slots and sizes. */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

static unsigned size_exponents = 12; /* 2^4 .. 2^15; --small: 2^4 .. 2^9 */
static unsigned first_exponent = 4;  /* --large: 2^16 .. 2^23 */
static int touch_pages = 0;

static size_t next_size(void) {
  const uint64_t r = next_random();
  const unsigned exponent = first_exponent + (unsigned)(r % size_exponents);
  const size_t low = (size_t)1 << exponent;
  if (touch_pages) return low + (size_t)((r >> 8) % 8) * (low / 8); /* --large */
  return low + (size_t)((r >> 8) % low);                            /* [2^e, 2^(e+1)) */
}

static unsigned long parse_count(const char* text, unsigned long fallback) {
  if (!text) return fallback;
  char* end = NULL;
  const unsigned long v = strtoul(text, &end, 10);
  return (*end == '\0' && v > 0) ? v : fallback;
}

static void* sleep_forever(void* unused) {
  for (;;) pause();
  return unused;
}

int main(int argc, char** argv) {
  const unsigned long pairs = parse_count(argc > 1 ? argv[1] : NULL, 5000000ul);
  const unsigned long live = parse_count(argc > 2 ? argv[2] : NULL, 4096ul);
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--idle-thread") == 0) {
      pthread_t sleeper;
      if (pthread_create(&sleeper, NULL, sleep_forever, NULL) != 0) return 1;
    } else if (strcmp(argv[i], "--small") == 0) {
      size_exponents = 6;
    } else if (strcmp(argv[i], "--large") == 0) {
      first_exponent = 16;
      size_exponents = 8;
      touch_pages = 1;
    } else {
      fprintf(stderr, "malloc_churn: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  char** slots = calloc(live, sizeof *slots);
  if (!slots) return 1;
  unsigned long made = 0;
  for (unsigned long i = 0; i < pairs; ++i) {
    const unsigned long k = (unsigned long)(next_random() % live);
    free(slots[k]);
    const size_t size = next_size();
    slots[k] = malloc(size);
    if (!slots[k]) return 1;
    slots[k][0] = (char)i;
    if (touch_pages)
      for (size_t at = 4096; at < size; at += 4096) slots[k][at] = (char)i;
    ++made;
  }
  for (unsigned long k = 0; k < live; ++k) free(slots[k]);
  free(slots);
  printf("%lu\n", made);
  if (getenv("MALLOC_CHURN_THREAD_CPU")) {
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
      fprintf(stderr, "malloc_churn: main thread CPU %.6f s\n",
              (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9);
  }
  return 0;
}
