/* fork without exec while other threads allocate: the parent's trace stays complete, the child
 * (which allocates and frees too) is not traced and writes nothing. */
#include <stdlib.h>
#include <sys/wait.h>

#include "busy_threads.h"
#include "torture.h"

int main(int argc, char** argv) {
  (void)argc;
  busy_threads_create();
  unsigned long long allocs = 0;
  alloclab_run_begin("work");
  busy_threads_go();
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
  allocs += busy_threads_stop();
  alloclab_run_end();
  busy_threads_join();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs);
  return 0;
}
