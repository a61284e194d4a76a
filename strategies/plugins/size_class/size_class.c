/* size_class: an example alloclab strategy plug-in, in plain C (docs/plugins.md).
 *
 * A power-of-two size-class cache:
 * - alloc(s): the class of s is the smallest power of two >= s, and at least 256. The newest
 *   cached block of that class is a hit (LIFO; slack = capacity - class, 0 in simulation).
 *   Otherwise a miss asks the upstream for class bytes; if the upstream fails, every cached block
 *   is given back (each an eviction) and, if that gave anything back, the upstream is asked once
 *   more; if it still fails, the request is counted as failed. A request above 2^63 has no class
 *   and fails.
 * - free(b): with max_cached set, a block that would take the cached bytes past max_cached goes
 *   straight back upstream (not an eviction: it was never cached). Otherwise it goes on the free
 *   list of the largest power of two <= its capacity (its own class, for a block from here).
 * - begin_run / end_run: nothing. release: every cached block upstream, not evictions.
 * Parameter: max_cached=BYTES, a plain byte count (default: no limit).
 * Build alone: cc -shared -fPIC -O2 -I include size_class.c -o size_class.so
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloclab/strategy_plugin.h"

#define MIN_CLASS 8 /* 2^8 = 256 bytes */
#define CLASSES 64

typedef struct free_list {
  alloclab_block* blocks; /* a stack: the newest block last */
  size_t count;
  size_t room;
} free_list;

typedef struct size_class {
  alloclab_upstream upstream;
  int limited;
  uint64_t max_cached;
  free_list lists[CLASSES]; /* lists[k] holds blocks of class 2^k */
  alloclab_strategy_stats stats;
} size_class;

/* The class (log2 of its size) of a request, or -1 when it is above the largest class. */
static int request_class(uint64_t size) {
  int k = MIN_CLASS;
  while (k < CLASSES - 1 && ((uint64_t)1 << k) < size) ++k;
  return ((uint64_t)1 << k) < size ? -1 : k;
}

/* The class a freed block serves: the largest power of two <= capacity. */
static int block_class(uint64_t capacity) {
  int k = CLASSES - 1;
  while (k > 0 && (capacity >> k) == 0) --k;
  return k;
}

static int push(free_list* list, alloclab_block block) {
  if (list->count == list->room) {
    size_t room = list->room ? 2 * list->room : 16;
    alloclab_block* grown = realloc(list->blocks, room * sizeof *grown);
    if (grown == NULL) return 0;
    list->blocks = grown;
    list->room = room;
  }
  list->blocks[list->count++] = block;
  return 1;
}

/* Gives every cached block back upstream; returns how many. */
static uint64_t give_back_all(size_class* self, int count_as_evictions) {
  uint64_t n = 0;
  int k;
  for (k = 0; k < CLASSES; ++k) {
    free_list* list = &self->lists[k];
    while (list->count > 0) {
      alloclab_block block = list->blocks[--list->count];
      self->stats.cached_bytes -= block.capacity;
      if (count_as_evictions) ++self->stats.evictions;
      self->upstream.deallocate(self->upstream.context, block);
      ++n;
    }
  }
  return n;
}

/* A plain byte count: decimal digits only, at most 2^64-1. */
static int parse_bytes(const char* text, uint64_t* out) {
  uint64_t value = 0;
  if (*text == '\0') return 0;
  for (; *text != '\0'; ++text) {
    unsigned digit = (unsigned)(*text - '0');
    if (*text < '0' || *text > '9') return 0;
    if (value > (UINT64_MAX - digit) / 10) return 0;
    value = value * 10 + digit;
  }
  *out = value;
  return 1;
}

static void* sc_create(const alloclab_upstream* upstream, const char* const* keys,
                       const char* const* values, size_t count, char* error, size_t error_size) {
  size_class* self = calloc(1, sizeof *self);
  size_t i;
  if (self == NULL) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  self->upstream = *upstream;
  for (i = 0; i < count; ++i) {
    if (strcmp(keys[i], "max_cached") == 0 && parse_bytes(values[i], &self->max_cached)) {
      self->limited = 1;
    } else {
      if (strcmp(keys[i], "max_cached") == 0) {
        snprintf(error, error_size,
                 "bad value '%s' for 'max_cached': expected a plain byte count such as 1048576",
                 values[i]);
      } else {
        snprintf(error, error_size, "unknown parameter '%s' (accepted: max_cached)", keys[i]);
      }
      free(self);
      return NULL;
    }
  }
  return self;
}

static int sc_allocate(void* opaque, uint64_t size, uint64_t stream, alloclab_block* out) {
  size_class* self = opaque;
  int k = request_class(size);
  (void)stream;
  ++self->stats.requests;
  if (k < 0) {
    ++self->stats.failed;
    return 1;
  }
  if (self->lists[k].count > 0) {
    *out = self->lists[k].blocks[--self->lists[k].count];
    ++self->stats.hits;
    self->stats.slack_bytes += out->capacity - ((uint64_t)1 << k);
    self->stats.cached_bytes -= out->capacity;
    return 0;
  }
  if (self->upstream.allocate(self->upstream.context, (uint64_t)1 << k, out) == 0) return 0;
  if (give_back_all(self, 1) > 0 &&
      self->upstream.allocate(self->upstream.context, (uint64_t)1 << k, out) == 0) {
    return 0;
  }
  ++self->stats.failed;
  return 1;
}

static void sc_deallocate(void* opaque, alloclab_block block) {
  size_class* self = opaque;
  /* Over the limit, or no memory for the free list: straight back upstream. (cached_bytes never
   * exceeds max_cached, so the subtraction cannot wrap.) */
  if ((self->limited && block.capacity > self->max_cached - self->stats.cached_bytes) ||
      !push(&self->lists[block_class(block.capacity)], block)) {
    self->upstream.deallocate(self->upstream.context, block);
    return;
  }
  self->stats.cached_bytes += block.capacity;
}

static void sc_nothing(void* opaque) {
  (void)opaque;
}

static void sc_release(void* opaque) {
  give_back_all(opaque, 0);
}

static void sc_get_stats(const void* opaque, alloclab_strategy_stats* out) {
  *out = ((const size_class*)opaque)->stats;
}

static void sc_destroy(void* opaque) {
  size_class* self = opaque;
  int k;
  for (k = 0; k < CLASSES; ++k) free(self->lists[k].blocks);
  free(self);
}

static const char* const sc_keys[] = {"max_cached", NULL};

static const alloclab_strategy_plugin sc_table = {
    .abi_version = ALLOCLAB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(alloclab_strategy_plugin),
    .name = "size_class",
    .summary = "power-of-two size classes (min 256 bytes), LIFO per class, optional max_cached",
    .keys = sc_keys,
    .create = sc_create,
    .allocate = sc_allocate,
    .deallocate = sc_deallocate,
    .begin_run = sc_nothing,
    .end_run = sc_nothing,
    .release = sc_release,
    .get_stats = sc_get_stats,
    .destroy = sc_destroy,
};

const alloclab_strategy_plugin* alloclab_strategy_plugin_v1(void) {
  return &sc_table;
}
