/* What the tracer must add to a program: nothing. Modes:
 *   footprint none                      allocates nothing at all
 *   footprint exact N                   exactly N allocations (through every allocation
 *                                       function), then their N frees, and nothing else
 *   footprint threads COUNTS T N        T threads make N allocations each inside run "work"
 *   footprint objects FILE              writes the path of every loaded object to FILE
 * No stdio, no markers: either could allocate or add an event of their own. */
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "torture.h"

static void* allocate(long i) {
  const size_t size = 100 + (size_t)i % 1000;
  void* p = NULL;
  switch (i % 7) {
    case 0:
      return malloc(size);
    case 1:
      return calloc(1, size);
    case 2:
      return posix_memalign(&p, 64, size) == 0 ? p : NULL;
    case 3:
      return aligned_alloc(64, 64 * (size / 64 + 1));
    case 4:
      return memalign(256, size);
    case 5:
      return valloc(size);
    default:
      return realloc(NULL, size);
  }
}

static int exact(long n) {
  void** blocks = NULL;
  /* The array itself is one of the n. */
  blocks = malloc((size_t)(n > 0 ? n : 1) * sizeof(void*));
  if (!blocks) return 1;
  blocks[0] = blocks;
  for (long i = 1; i < n; ++i)
    if (!(blocks[i] = torture_keep(allocate(i)))) return 1;
  for (long i = n - 1; i >= 1; --i) free(blocks[i]);
  free(blocks);
  return 0;
}

static long per_thread;

static void* worker(void* arg) {
  (void)arg;
  for (long i = 0; i < per_thread; ++i) free(torture_keep(malloc(48 + (size_t)i % 200)));
  return NULL;
}

static int threads(const char* counts, int count, long n) {
  per_thread = n;
  pthread_t t[64];
  if (count > 64) count = 64;
  alloclab_run_begin("work");
  for (int i = 0; i < count; ++i)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 1;
  for (int i = 0; i < count; ++i) pthread_join(t[i], NULL);
  alloclab_run_end();
  torture_count(counts, "allocs", (unsigned long long)count * (unsigned long long)n);
  return 0;
}

static int add_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  const int fd = *(const int*)data;
  const char* name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "(main)";
  if (write(fd, name, strlen(name)) < 0 || write(fd, "\n", 1) < 0) return 1;
  return 0;
}

static int objects(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  dl_iterate_phdr(add_object, &fd);
  close(fd);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "none") == 0) return 0;
  if (argc >= 3 && strcmp(argv[1], "exact") == 0) return exact(atol(argv[2]));
  if (argc >= 5 && strcmp(argv[1], "threads") == 0)
    return threads(argv[2], atoi(argv[3]), atol(argv[4]));
  if (argc >= 3 && strcmp(argv[1], "objects") == 0) return objects(argv[2]);
  return 2;
}
