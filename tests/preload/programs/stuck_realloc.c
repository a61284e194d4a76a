/* A thread stops for good inside realloc (tests/preload/interposers/stuck_realloc.c, preloaded
 * behind the tracer) while the main thread allocates inside an open run.
 * stuck_realloc COUNTS_FILE kill|exit|exit-reopened|late: then reports its counters and pid and
 * waits to be killed with SIGKILL, or exits while that thread is still inside the call (after
 * closing its stderr and opening COUNTS_FILE.data, which takes descriptor 2, with
 * exit-reopened); or (late) the call returns after 1.5 s, the thread frees the new block, and the
 * program exits once it has. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../interposers/stuck_realloc.h"
#include "torture.h"

static int in_call;
static int late;

static void* realloc_in_thread(void* unused) {
  void* p = torture_keep(malloc(32));
  __atomic_store_n(&in_call, 1, __ATOMIC_RELEASE);
  free(torture_keep(realloc(p, late ? late_realloc_size : stuck_realloc_size)));
  return unused;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  late = strcmp(argv[2], "late") == 0;
  pthread_t in_realloc;
  if (pthread_create(&in_realloc, NULL, realloc_in_thread, NULL) != 0) return 1;
  while (!__atomic_load_n(&in_call, __ATOMIC_ACQUIRE)) usleep(1000);
  usleep(20000); /* into the call, past the tracer's reservation of its record */
  unsigned long long allocs = 0;
  alloclab_run_begin("work");
  for (int i = 0; i < 20000; ++i) {
    void* p = torture_keep(malloc(64 + (size_t)(i % 500)));
    ++allocs;
    free(p);
  }
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs);
  torture_count(argv[1], "pid", (unsigned long long)getpid());
  if (late) pthread_join(in_realloc, NULL);
  if (strcmp(argv[2], "exit-reopened") == 0) {
    char data[4096];
    snprintf(data, sizeof data, "%s.data", argv[1]);
    close(2);
    if (open(data, O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2) return 3;
    if (write(2, "data\n", 5) != 5) return 4;
    exit(0);
  }
  if (late || strcmp(argv[2], "exit") == 0) exit(0);
  for (;;) pause();
}
