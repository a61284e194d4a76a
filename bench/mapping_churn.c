/* What recording anonymous mappings costs a program that maps and unmaps at full speed:
 * mapping_churn [CYCLES] maps 64 KiB, touches its first page and unmaps it, CYCLES times
 * (default 200,000), and prints the nanoseconds per cycle on stderr.
 * mapping_churn --mprotect [CYCLES] instead flips one 64 KiB mapping between RW and RX, as a
 * JIT does with its code pages, and prints the nanoseconds per mprotect call.
 * Run it plain and under `alloclab record` (or two builds of it) side by side, a few times each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int flip_protection(long cycles, size_t bytes) {
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  p[0] = 1;
  const double start = now_ns();
  for (long i = 0; i < cycles; ++i) {
    if (mprotect(p, bytes, PROT_READ | PROT_EXEC) != 0) return 1;
    if (mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) return 1;
  }
  fprintf(stderr, "mapping_churn: %.0f ns per mprotect of 64 KiB (RW <-> RX)\n",
          (now_ns() - start) / (2.0 * (double)cycles));
  return munmap(p, bytes) != 0;
}

int main(int argc, char** argv) {
  const int flip = argc > 1 && strcmp(argv[1], "--mprotect") == 0;
  const long cycles = argc > 1 + flip ? atol(argv[1 + flip]) : 200000;
  if (cycles <= 0) return 2;
  const size_t bytes = 64 * 1024;
  if (flip) return flip_protection(cycles, bytes);
  const double start = now_ns();
  for (long i = 0; i < cycles; ++i) {
    char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    p[0] = (char)i;
    if (munmap(p, bytes) != 0) return 1;
  }
  fprintf(stderr, "mapping_churn: %.0f ns per mmap + touch + munmap of 64 KiB\n",
          (now_ns() - start) / (double)cycles);
  return 0;
}
