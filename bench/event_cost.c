/* event_cost: nanoseconds per call of what every event of the preload tracer pays, measured
 * here because virtual machines differ wildly (a TSC read costs ~7 ns on bare metal and 25 ns
 * or more under some hypervisors):
 *   tsc      reading the time stamp counter (the timestamp of each event)
 *   locked   an atomic increment of a shared counter (the global sequence number)
 *   clock    clock_gettime(CLOCK_MONOTONIC) through the vDSO (the fallback time source)
 * Prints one line of JSON: {"tsc_ns": ..., "locked_ns": ..., "clock_ns": ...}, each the best of
 * five runs of 10 million calls. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static volatile uint64_t sink;
static uint64_t counter;
enum { calls = 10000000, runs = 5 };

/* Seconds for `calls` evaluations of EXPR, summed so none is optimised away. A macro, not a
 * function taking a callback: a call per evaluation would cost as much as what is measured. */
#define TIME_CALLS(EXPR)                                     \
  do {                                                       \
    uint64_t sum = 0;                                        \
    const double start = seconds();                          \
    for (int i = 0; i < calls; ++i) sum += (uint64_t)(EXPR); \
    const double elapsed = seconds() - start;                \
    sink = sum;                                              \
    return elapsed;                                          \
  } while (0)

static uint64_t read_tsc(void) {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

static uint64_t monotonic_nsec(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_nsec;
}

static double tsc_once(void) {
  TIME_CALLS(read_tsc());
}
static double locked_once(void) {
  TIME_CALLS(__atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST));
}
static double clock_once(void) {
  TIME_CALLS(monotonic_nsec());
}

static double best_ns(double (*once)(void)) {
  double best = 1e9;
  for (int r = 0; r < runs; ++r) {
    const double s = once();
    if (s < best) best = s;
  }
  return best / calls * 1e9;
}

int main(void) {
  const double tsc = best_ns(tsc_once);
  const double locked = best_ns(locked_once);
  const double clock = best_ns(clock_once);
  printf("{\"tsc_ns\": %.1f, \"locked_ns\": %.1f, \"clock_ns\": %.1f}\n", tsc, locked, clock);
  return 0;
}
