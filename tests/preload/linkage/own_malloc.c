/* A program that defines malloc and its family itself, as one linked with a static allocator
 * (or clang's AddressSanitizer runtime) does: the C library's calls and its own reach this code
 * before any preloaded library. A bump allocator over a static arena; free forgets. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static _Alignas(64) unsigned char arena[64 << 20];
static size_t used;

void* malloc(size_t size) {
  const size_t header = 16;
  const size_t need = (size + header + 15) & ~(size_t)15;
  if (need < size || need > sizeof arena - used) {
    errno = ENOMEM;
    return NULL;
  }
  unsigned char* block = arena + used;
  used += need;
  memcpy(block, &size, sizeof size);
  return block + header;
}

void free(void* p) {
  (void)p;
}

void* calloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return malloc(n * size); /* the arena is zero and never reused */
}

void* realloc(void* p, size_t size) {
  void* moved = malloc(size);
  if (p && moved) {
    size_t old;
    memcpy(&old, (unsigned char*)p - 16, sizeof old);
    memcpy(moved, p, old < size ? old : size);
  }
  return moved;
}

int main(void) {
  for (int i = 0; i < 1000; ++i) {
    void* volatile p = malloc(100 + (size_t)i);
    free(p);
  }
  return 0;
}
