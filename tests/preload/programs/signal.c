/* A 100 us interval timer whose handler maps and unmaps memory (recorded as `mapped`) while
 * the main thread is in malloc/free: the handler's events nest inside the tracer's own record
 * of the main thread's event. (The handler avoids malloc itself: glibc's malloc is not
 * async-signal-safe, so that could deadlock without any tracer.) */

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>

#include "torture.h"

static volatile sig_atomic_t maps;

static void on_alarm(int sig) {
  (void)sig;
  void* p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    munmap(p, 8192);
    ++maps;
  }
}

int main(int argc, char** argv) {
  (void)argc;
  struct sigaction action = {0};
  action.sa_handler = on_alarm;
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, NULL);
  alloclab_run_begin("work");
  struct itimerval every = {{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &every, NULL);
  unsigned long long allocs = 0;
  for (int i = 0; i < 300000 || maps < 200; ++i) {
    free(malloc(32 + i % 512));
    ++allocs;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  unsigned long long m = (unsigned long long)maps;
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs);
  torture_count(argv[1], "maps", m);
  return 0;
}
