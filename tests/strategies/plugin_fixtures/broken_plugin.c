/* Deliberately broken strategy plug-ins for tests/strategies/plugin_test.cpp. One source, built
 * once per flaw (tests/CMakeLists.txt defines exactly one BROKEN_* macro):
 *   BROKEN_NO_ENTRY       exports the table under the wrong name
 *   BROKEN_ABI_2          says it was built for ABI version 2
 *   BROKEN_NULL_FUNCTION  leaves `destroy` out of its table
 *   BROKEN_SHORT_BLOCK    hands out blocks of half the requested size
 *   BROKEN_DOUBLE_FREE    gives every freed block back upstream twice
 * Otherwise it is a passthrough strategy: no cache, every request asks the upstream. */
#include <stdlib.h>

#include "alloclab/strategy_plugin.h"

typedef struct broken {
  alloclab_upstream upstream;
  alloclab_strategy_stats stats;
} broken;

static void* b_create(const alloclab_upstream* upstream, const char* const* keys,
                      const char* const* values, size_t count, char* error, size_t error_size) {
  broken* self = calloc(1, sizeof *self);
  (void)keys;
  (void)values;
  (void)count;
  (void)error;
  (void)error_size;
  if (self != NULL) self->upstream = *upstream;
  return self;
}

static int b_allocate(void* opaque, uint64_t size, uint64_t stream, alloclab_block* out) {
  broken* self = opaque;
  (void)stream;
  ++self->stats.requests;
#ifdef BROKEN_SHORT_BLOCK
  size /= 2;
#endif
  if (self->upstream.allocate(self->upstream.context, size, out) == 0) return 0;
  ++self->stats.failed;
  return 1;
}

static void b_deallocate(void* opaque, alloclab_block block) {
  broken* self = opaque;
  self->upstream.deallocate(self->upstream.context, block);
#ifdef BROKEN_DOUBLE_FREE
  self->upstream.deallocate(self->upstream.context, block);
#endif
}

static void b_nothing(void* opaque) {
  (void)opaque;
}

static void b_get_stats(const void* opaque, alloclab_strategy_stats* out) {
  *out = ((const broken*)opaque)->stats;
}

static void b_destroy(void* opaque) {
  free(opaque);
}

static const char* const b_keys[] = {NULL};

#ifdef BROKEN_ABI_2
#define B_ABI_VERSION 2
#else
#define B_ABI_VERSION ALLOCLAB_PLUGIN_ABI_VERSION
#endif

static const alloclab_strategy_plugin b_table = {
    .abi_version = B_ABI_VERSION,
    .struct_size = sizeof(alloclab_strategy_plugin),
    .name = "broken",
    .summary = "a plug-in with one deliberate flaw",
    .keys = b_keys,
    .create = b_create,
    .allocate = b_allocate,
    .deallocate = b_deallocate,
    .begin_run = b_nothing,
    .end_run = b_nothing,
    .release = b_nothing,
    .get_stats = b_get_stats,
#ifndef BROKEN_NULL_FUNCTION
    .destroy = b_destroy,
#endif
};

#ifdef BROKEN_NO_ENTRY
ALLOCLAB_PLUGIN_EXPORT const alloclab_strategy_plugin* alloclab_strategy_plugin_v0(void);
const alloclab_strategy_plugin* alloclab_strategy_plugin_v0(void) {
#else
const alloclab_strategy_plugin* alloclab_strategy_plugin_v1(void) {
#endif
#ifdef BROKEN_NULL_FUNCTION
  (void)b_destroy;
#endif
  return &b_table;
}
