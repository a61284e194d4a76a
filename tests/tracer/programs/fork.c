/* fork without exec while other threads allocate: the parent's trace stays complete, the child
 * (which allocates and frees too) is not traced and writes nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "torture.h"

enum { helpers = 3 };
static pthread_barrier_t start, done;
static volatile int stop;
static unsigned long long helper_allocs[helpers];

static void* helper(void* arg) {
  int id = (int)(long)arg;
  pthread_barrier_wait(&start);
  while (!stop) {
    void* p = malloc(100 + id);
    free(p);
    ++helper_allocs[id];
  }
  pthread_barrier_wait(&done);
  return NULL;
}

int main(int argc, char** argv) {
  (void)argc;
  pthread_t t[helpers];
  pthread_barrier_init(&start, NULL, helpers + 1);
  pthread_barrier_init(&done, NULL, helpers + 1);
  for (long i = 0; i < helpers; ++i) pthread_create(&t[i], NULL, helper, (void*)i);
  unsigned long long allocs = 0;
  alloclab_run_begin("work");
  pthread_barrier_wait(&start);
  for (int round = 0; round < 20; ++round) {
    void* before = malloc(5000);
    ++allocs;
    pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 1000; ++i) free(malloc(5000 + i));
      free(before); /* the parent's block, in the child's copy */
      exit(0);      /* runs the tracer's exit path in the child: must stay silent */
    }
    int status;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    free(before);
  }
  stop = 1;
  pthread_barrier_wait(&done);
  for (int i = 0; i < helpers; ++i) allocs += helper_allocs[i];
  alloclab_run_end();
  for (int i = 0; i < helpers; ++i) pthread_join(t[i], NULL);
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs);
  return 0;
}
