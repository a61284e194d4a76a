/* fork without exec for --follow-fork: while busy threads allocate, the parent forks children
 * that allocate in a run of their own and report their counters in COUNTS.<pid>. With the
 * argument "abort" each child aborts in the middle of its run instead of finishing it. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "busy_threads.h"
#include "torture.h"

enum { children = 6, child_blocks = 2000 };

/* `inherited`: the parent's block from before the fork, which the child frees (outside its run):
 * its trace starts at the fork, so that is a free of a block it never saw allocated. */
static void child(const char* counts, int aborts, void* inherited) {
  static void* kept[child_blocks];
  char path[512];
  snprintf(path, sizeof path, "%s.%d", counts, (int)getpid());
  unsigned long long allocs = 0, frees = 0;
  free(inherited);
  alloclab_run_begin("child");
  for (int i = 0; i < child_blocks; ++i) {
    kept[i] = malloc(7000 + i % 1000);
    ++allocs;
    if (i % 2) free(kept[i]), kept[i] = NULL, ++frees;
  }
  if (aborts) {
    torture_count(path, "allocs", allocs);
    torture_count(path, "frees", frees);
    abort();
  }
  for (int i = 0; i < child_blocks; ++i)
    if (kept[i]) free(kept[i]), ++frees;
  alloclab_run_end();
  torture_count(path, "allocs", allocs);
  torture_count(path, "frees", frees);
  exit(0); /* the tracer's exit path runs in the child */
}

int main(int argc, char** argv) {
  const int aborts = argc > 2 && strcmp(argv[2], "abort") == 0;
  busy_threads_create();
  unsigned long long allocs = 0, expected_ends = 0;
  alloclab_run_begin("work");
  busy_threads_go();
  for (int round = 0; round < children; ++round) {
    void* before = malloc(5000);
    ++allocs;
    pid_t pid = fork();
    if (pid == 0) child(argv[1], aborts, before);
    int status;
    waitpid(pid, &status, 0);
    expected_ends += aborts ? WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT
                            : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    free(before);
  }
  allocs += busy_threads_stop();
  alloclab_run_end();
  busy_threads_join();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs);
  torture_count(argv[1], "children_as_expected", expected_ends);
  return 0;
}
