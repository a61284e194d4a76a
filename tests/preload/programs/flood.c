/* Two threads allocate small blocks as fast as glibc's per-thread cache hands them out, far
 * faster than the tracer's writer can encode: the writer falls behind by millions of events and
 * must catch up without losing, reordering or hoarding memory for any of them. Every 13th step
 * is a realloc (some move, some stay), so that nearly every flush boundary falls between a
 * realloc's free and its alloc and the writer holds events back for the next flush; a marker now
 * and then has a label to carry along.
 *
 * With "signal-marks" a timer interrupts the workers every 50 us with a handler that marks, so
 * markers from signal handlers, label room and interrupted records all meet a writer that is
 * far behind. (Rarely, and only as timing allows, a handler waiting for label room has
 * interrupted a record that the flush it waits for then gives up on.)
 *
 * flood COUNTS_FILE [PAIRS_PER_THREAD [signal-marks]] (default 1,500,000) */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "torture.h"

enum { threads = 2, slots = 1024 };
static unsigned long pairs = 1500000;
static pthread_barrier_t start, done;
static unsigned long long allocs[threads], frees[threads];

static void* worker(void* arg) {
  const int id = (int)(intptr_t)arg;
  uint64_t state = 0x9E3779B97F4A7C15ull + (uint64_t)id;
  char* slot[slots] = {0};
  pthread_barrier_wait(&start);
  for (unsigned long i = 0; i < pairs; ++i) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const uint64_t r = state * 0x2545F4914F6CDD1Dull;
    const unsigned k = (unsigned)(r % slots);
    const size_t size = 16 + (size_t)(r >> 32) % 1024;
    if (slot[k] && i % 13 == 0) {
      char* moved = realloc(slot[k], size * 3);
      if (!moved) abort();
      slot[k] = moved;
      ++allocs[id], ++frees[id];
    } else {
      if (slot[k]) free(slot[k]), ++frees[id];
      slot[k] = malloc(size);
      if (!slot[k]) abort();
      ++allocs[id];
    }
    slot[k][0] = (char)i;
    if (i % 65536 == 0) alloclab_mark(id ? "thread 1" : "thread 0");
  }
  for (unsigned k = 0; k < slots; ++k)
    if (slot[k]) free(slot[k]), ++frees[id];
  pthread_barrier_wait(&done);
  return NULL;
}

static void mark_tick(int sig) {
  (void)sig;
  alloclab_mark("tick");
}

static void set_timer(long microseconds) {
  struct itimerval every = {{0, microseconds}, {0, microseconds}};
  setitimer(ITIMER_REAL, &every, NULL);
}

int main(int argc, char** argv) {
  if (argc > 2) pairs = strtoul(argv[2], NULL, 10);
  const int signal_marks = argc > 3 && strcmp(argv[3], "signal-marks") == 0;
  if (signal_marks) {
    /* Looks the entry point up outside the handler: dlsym is not safe there. */
    alloclab_mark("timer");
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = mark_tick;
    action.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &action, NULL);
    set_timer(50);
  }
  pthread_t t[threads];
  pthread_barrier_init(&start, NULL, threads + 1);
  pthread_barrier_init(&done, NULL, threads + 1);
  for (intptr_t i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, (void*)i);
  if (signal_marks) {
    /* The ticks go to the workers, mid-allocation, not to this thread waiting on the barrier. */
    sigset_t alarm;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm, NULL);
  }
  alloclab_run_begin("work");
  pthread_barrier_wait(&start);
  pthread_barrier_wait(&done);
  if (signal_marks) set_timer(0);
  alloclab_run_end();
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  torture_count(argv[1], "allocs", allocs[0] + allocs[1]);
  torture_count(argv[1], "frees", frees[0] + frees[1]);
  return 0;
}
