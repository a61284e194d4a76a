/* The main thread leaves with pthread_exit while two threads go on allocating; the process ends
 * when the last of them does (glibc's exit(0)), with status 0.
 * main_exits_first COUNTS_FILE */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "torture.h"

enum { workers = 2, per_worker = 20000 };
static const char* counts_path;
static pthread_barrier_t main_gone, run_begun, all_done;

static void* worker(void* arg) {
  const int first = arg == NULL;
  pthread_barrier_wait(&main_gone);
  usleep(100000); /* the main thread is a zombie by now */
  if (first) alloclab_run_begin("work");
  pthread_barrier_wait(&run_begun);
  for (int i = 0; i < per_worker; ++i) free(torture_keep(malloc(16 + (size_t)(i % 200))));
  pthread_barrier_wait(&all_done);
  if (first) {
    alloclab_run_end();
    torture_count(counts_path, "allocs", (unsigned long long)workers * per_worker);
    torture_count(counts_path, "frees", (unsigned long long)workers * per_worker);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  counts_path = argv[1];
  pthread_barrier_init(&main_gone, NULL, workers + 1);
  pthread_barrier_init(&run_begun, NULL, workers);
  pthread_barrier_init(&all_done, NULL, workers);
  pthread_t t[workers];
  for (long i = 0; i < workers; ++i)
    if (pthread_create(&t[i], NULL, worker, (void*)i) != 0) return 1;
  pthread_barrier_wait(&main_gone);
  pthread_exit(NULL);
}
