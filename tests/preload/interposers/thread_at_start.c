/* Preloaded behind the tracer by a test: its constructor starts a thread that sleeps for good,
 * so the program already has two threads when the tracer starts. A fork then copies only one of
 * them, and a lock the other held would stay held in the copy: the tracer's writer must be a
 * thread, not a process forked from the program. */
#include <pthread.h>
#include <unistd.h>

static void* sleep_for_good(void* unused) {
  for (;;) pause();
  return unused;
}

__attribute__((constructor)) static void start_a_thread(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, sleep_for_good, NULL) == 0) pthread_detach(thread);
}
