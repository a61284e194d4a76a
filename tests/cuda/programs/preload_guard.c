/* Allocates 100 blocks of 7777 bytes inside alloclab_preload_guard(+1)/(-1) (the way the CUDA
 * tracer hides its own work from the preload tracer) and 3 blocks of 8888 bytes outside it.
 * Exits 3 when the preload library does not offer the guard. */
#define _GNU_SOURCE 1 /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdlib.h>

int main(void) {
  void (*guard)(int) = NULL;
  /* The POSIX way to turn dlsym's object pointer into a function pointer. */
  *(void**)(&guard) = dlsym(RTLD_DEFAULT, "alloclab_preload_guard");
  if (!guard) return 3;
  guard(1);
  for (int i = 0; i < 100; ++i) free(malloc(7777));
  guard(-1);
  for (int i = 0; i < 3; ++i) free(malloc(8888));
  return 0;
}
