/* A program for `alloclab run`'s tests: what it does with big blocks is chosen by its first
 * argument, and each mode checks what it got back (exit status 1 on a wrong answer). */
#include <alloclab/markers.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kBig = 256 * 1024 };

/* A fixed mix of sizes, reallocs that shrink (kept in place), that grow (moved) and frees, so
 * that every strategy both hits and misses. */
static int churn(int rounds) {
  void* held[8] = {0};
  for (int i = 0; i < rounds; ++i) {
    const size_t size = (size_t)kBig * (1 + (size_t)(i % 5));
    const int slot = i % 8;
    free(held[slot]);
    char* p = malloc(size);
    if (!p) return 1;
    memset(p, i & 0xff, 64);
    if (i % 3 == 0) {
      p = realloc(p, size / 2); /* fits: kept */
      if (!p || p[63] != (char)(i & 0xff)) return 1;
    }
    if (i % 7 == 0) {
      p = realloc(p, size * 3); /* grows: moved, the bytes kept */
      if (!p || p[63] != (char)(i & 0xff)) return 1;
    }
    held[slot] = p;
    free(malloc(100)); /* small: the program's allocator's */
  }
  for (int k = 0; k < 8; ++k) free(held[k]);
  return 0;
}

/* `runs` marked runs, each labelled "step N", that differ: sizes by step, reallocs kept in
 * place and reallocs that move (both blocks live at once, which the replay's peaks must see
 * too), a block carried from one run into the next, work between runs, and now and then a run
 * ended by the next run_begin. */
static int steps(int runs) {
  void* carried = NULL;
  char label[32];
  for (int run = 0; run < runs; ++run) {
    if (run % 11 == 0) free(malloc(2 * kBig)); /* outside any run */
    snprintf(label, sizeof label, "step %d", run);
    alloclab_run_begin(label);
    void* blocks[4];
    for (int k = 0; k < 4; ++k) {
      blocks[k] = malloc((size_t)kBig * (1 + (size_t)((run + k) % 5)));
      if (!blocks[k]) return 1;
    }
    if (run % 3 == 0 && !(blocks[3] = realloc(blocks[3], kBig))) return 1; /* fits: kept */
    if (run % 4 == 1 && !(blocks[2] = realloc(blocks[2], 6 * (size_t)kBig)))
      return 1; /* grows past every size above: moved */
    for (int k = 0; k < 3; ++k) free(blocks[k]);
    if (run % 5 == 0) {
      free(carried);
      carried = blocks[3];
    } else {
      free(blocks[3]);
    }
    if (run % 97 != 5) alloclab_run_end();
  }
  free(carried);
  return 0;
}

static void* thread_churn(void* arg) {
  (void)arg;
  return (void*)(intptr_t)churn(2000);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "churn";
  if (strcmp(mode, "churn") == 0) return churn(argc > 2 ? atoi(argv[2]) : 1000);
  if (strcmp(mode, "exit") == 0) {
    void* p = malloc(kBig);
    printf("the program's own output\n");
    fflush(stdout);
    free(p);
    return atoi(argv[2]);
  }
  if (strcmp(mode, "kill") == 0) {
    free(malloc(kBig));
    raise(SIGKILL);
  }
  if (strcmp(mode, "calloc") == 0) {
    /* A cached block handed out again by calloc must read as zero. */
    unsigned char* p = malloc(kBig);
    memset(p, 0xff, kBig);
    free(p);
    unsigned char* q = calloc(1, kBig);
    for (size_t i = 0; i < kBig; ++i)
      if (q[i] != 0) return 1;
    if (malloc_usable_size(q) < kBig) return 1;
    /* Aligned requests: what the strategy cannot promise goes to the real allocator. */
    void* a = NULL;
    if (posix_memalign(&a, 4096, kBig) != 0 || ((uintptr_t)a & 4095) != 0) return 1;
    void* b = aligned_alloc(16, kBig);
    if (!b || ((uintptr_t)b & 15) != 0) return 1;
    free(a);
    free(b);
    free(q);
    return 0;
  }
  if (strcmp(mode, "aligned") == 0) {
    /* Ten blocks the strategy serves (alignments up to 64), ten it leaves to glibc (4096). */
    for (int i = 0; i < 10; ++i) {
      void* a = NULL;
      void* b = NULL;
      if (posix_memalign(&a, 64, kBig) != 0 || ((uintptr_t)a & 63) != 0) return 1;
      if (posix_memalign(&b, 4096, kBig) != 0 || ((uintptr_t)b & 4095) != 0) return 1;
      free(a);
      free(b);
    }
    return 0;
  }
  if (strcmp(mode, "threads") == 0) {
    pthread_t threads[4];
    for (int t = 0; t < 4; ++t) pthread_create(&threads[t], NULL, thread_churn, NULL);
    int failed = 0;
    for (int t = 0; t < 4; ++t) {
      void* r;
      pthread_join(threads[t], &r);
      failed |= (int)(intptr_t)r;
    }
    return failed;
  }
  if (strcmp(mode, "runs") == 0) {
    for (int run = 0; run < 10; ++run) {
      alloclab_run_begin("step");
      void* a = malloc(kBig);
      void* b = malloc(2 * kBig);
      free(a);
      free(b);
      alloclab_run_end();
    }
    return 0;
  }
  if (strcmp(mode, "steps") == 0) return steps(argc > 2 ? atoi(argv[2]) : 100);
  if (strcmp(mode, "enomem-after-churn") == 0) {
    /* A failure after some work, with a pause on each side of it, then one more block. */
    if (churn(50) != 0) return 1;
    usleep(20000);
    errno = 0;
    void* p = malloc((size_t)1 << 60);
    if (p != NULL || errno != ENOMEM) return 1;
    usleep(20000);
    free(malloc(kBig));
    return 0;
  }
  if (strcmp(mode, "enomem") == 0) {
    /* Bigger than any machine: the strategy's upstream fails, and the program sees it. */
    errno = 0;
    void* p = malloc((size_t)1 << 60);
    return p == NULL && errno == ENOMEM ? 0 : 1;
  }
  if (strcmp(mode, "fork") == 0) {
    void* p = malloc(kBig);
    const pid_t child = fork();
    if (child == 0) {
      free(p);
      free(malloc(kBig));
      exit(churn(50));
    }
    int status = 0;
    waitpid(child, &status, 0);
    free(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  fprintf(stderr, "live_subject: unknown mode %s\n", mode);
  return 2;
}
