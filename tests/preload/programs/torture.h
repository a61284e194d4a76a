/* Shared by the torture programs: counters written with write(2) (stdio would allocate). */
#ifndef ALLOCLAB_TORTURE_H
#define ALLOCLAB_TORTURE_H
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloclab/markers.h"

/* Makes the compiler believe the block is used (C++ may elide new/delete pairs otherwise). */
static inline void* torture_keep(void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

/* Appends "key=value\n" to the file named by path. */
static inline void torture_count(const char* path, const char* key, unsigned long long value) {
  char line[128];
  int n = snprintf(line, sizeof line, "%s=%llu\n", key, value);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) != n) {
  }
  close(fd);
}
#endif
