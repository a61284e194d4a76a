/* A program that runs alone for a while, then gains a second thread that hands blocks back and
 * forth with the first. argv[2] says how the thread starts: "pthread" (pthread_create) or
 * "timer" (a SIGEV_THREAD timer, whose thread glibc starts without calling pthread_create).
 * Both threads allocate and free at full speed while they overlap. The program's blocks are
 * 4100 to 6099 bytes: glibc's own allocations while it starts the thread are smaller. */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "torture.h"

enum { blocks = 4096, alone_rounds = 50000, together_rounds = 200000 };
static _Atomic(void*) shared[blocks];
static atomic_ullong allocs, frees;
static atomic_int second_running, second_done;
static sem_t finished;

static void churn(unsigned seed, int rounds, int first, int step) {
  for (int i = 0; i < rounds; ++i) {
    const int slot = first + step * (int)(rand_r(&seed) % (blocks / step));
    void* p = malloc(4100 + rand_r(&seed) % 2000);
    ++allocs;
    void* old = atomic_exchange(&shared[slot], p);
    if (old) {
      free(old);
      ++frees;
    }
  }
}

/* The second thread frees blocks the first allocated (odd slots were filled by the first) and
 * the first, later, frees the second's. */
static void second_thread(void) {
  atomic_store(&second_running, 1);
  churn(2, together_rounds, 1, 2);
  atomic_store(&second_done, 1);
}

static void* second_pthread(void* unused) {
  second_thread();
  return unused;
}

static void on_timer(union sigval unused) {
  (void)unused;
  second_thread();
  sem_post(&finished);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  sem_init(&finished, 0, 0);
  alloclab_run_begin("work");
  churn(1, alone_rounds, 0, 1);
  pthread_t thread;
  timer_t timer;
  if (strcmp(argv[2], "pthread") == 0) {
    if (pthread_create(&thread, NULL, second_pthread, NULL) != 0) return 3;
  } else {
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_THREAD;
    event.sigev_notify_function = on_timer;
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return 3;
    struct itimerspec once;
    memset(&once, 0, sizeof once);
    once.it_value.tv_nsec = 1000000;
    if (timer_settime(timer, 0, &once, NULL) != 0) return 3;
  }
  while (!atomic_load(&second_running)) {
  }
  /* Even slots only while the second thread runs, so each slot has one writer at a time. */
  while (!atomic_load(&second_done)) churn(3, 1000, 0, 2);
  if (strcmp(argv[2], "pthread") == 0)
    pthread_join(thread, NULL);
  else
    sem_wait(&finished);
  for (int slot = 0; slot < blocks; ++slot)
    if (atomic_load(&shared[slot])) {
      free(atomic_load(&shared[slot]));
      ++frees;
    }
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", frees);
  return 0;
}
