/* exit_now COUNTS [HOW]: allocates in a run "work", then ends at once, without exit handlers or
 * destructors: with _exit (HOW "_exit", the default), _Exit ("_Exit") or the exit_group system
 * call through syscall() ("exit_group"), always with status 3; or with quick_exit
 * ("quick_exit"), whose at_quick_exit handler allocates 100 blocks in a run "quick" first.
 * Recorded with a long flush period, only a flush inside those calls saves the events. */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "torture.h"

static void allocate_in_quick_exit(void) {
  alloclab_run_begin("quick");
  for (int i = 0; i < 100; ++i) free(torture_keep(malloc(32)));
  alloclab_run_end();
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  unsigned long long allocs = 0;
  alloclab_run_begin("work");
  for (int i = 0; i < 2000; ++i) free(torture_keep(malloc(64 + (size_t)(i % 500)))), ++allocs;
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  const char* how = argc > 2 ? argv[2] : "_exit";
  if (strcmp(how, "_Exit") == 0) _Exit(3);
  if (strcmp(how, "exit_group") == 0) syscall(SYS_exit_group, 3);
  if (strcmp(how, "quick_exit") == 0) {
    at_quick_exit(allocate_in_quick_exit);
    quick_exit(3);
  }
  _exit(3);
}
