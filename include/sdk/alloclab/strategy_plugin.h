/* alloclab strategy plug-ins: the C ABI between alloclab and a caching strategy that lives in a
 * shared library, loaded at run time with `-s plugin:PATH.so[,key=value...]`.
 *
 * This header is plain C99 (it also compiles as C++) and is the whole contract. docs/plugins.md
 * has a walk-through and a complete example (strategies/plugins/size_class/size_class.c).
 *
 * WHAT A PLUG-IN IS
 *   A shared library that exports one function, alloclab_strategy_plugin_v1(), returning a pointer
 *   to a table (alloclab_strategy_plugin) of metadata and function pointers. alloclab builds
 *   strategy instances with create() and drives each one exactly like a built-in strategy: the
 *   rules of the replay model and the meaning of every counter are those of
 *   docs/strategy-contract.md.
 *
 * VERSIONING
 *   ALLOCLAB_PLUGIN_ABI_VERSION is 1. A plug-in sets abi_version to the version of the header it
 *   was built with and struct_size to sizeof(alloclab_strategy_plugin).
 *   - alloclab refuses a plug-in whose abi_version differs from its own (no guessing).
 *   - Within one ABI version, new members may only be APPENDED to alloclab_strategy_plugin. The
 *     host reads a member only if struct_size says the plug-in's table contains it, so a plug-in
 *     built with an older header of the same version keeps working; a table smaller than the
 *     first release of the version is refused.
 *   - alloclab_block, alloclab_upstream and alloclab_strategy_stats are frozen for ABI 1: new
 *     information travels through new functions appended to the table, or a new ABI version.
 *   - The entry point keeps its name (`_v1`) and signature in every ABI version, so that any
 *     alloclab can find it, read abi_version and struct_size (always the first two members) and
 *     say which version a plug-in was built for.
 *
 * THREADS
 *   - One instance is used by one thread at a time: calls on the same `self` never overlap,
 *     though successive calls may come from different threads.
 *   - Different instances, of the same plug-in or not, may be used in parallel threads (a sweep
 *     replays many specs at once), and create()/destroy() may run while other instances are in
 *     use. A plug-in must therefore keep its state in the instance; global mutable state needs
 *     the plug-in's own locking.
 *   - The entry point may be called from any thread, any number of times; it should return the
 *     address of one static, constant table.
 *   - The upstream may be called only from inside a call on the instance it was given to (create,
 *     allocate, deallocate, begin_run, end_run, release), on that call's thread.
 *
 * ERRORS AND FAILURES
 *   - Bad parameters: create() returns NULL and writes a one-line, NUL-terminated message into
 *     `error` (at most error_size bytes, truncated if longer). alloclab shows it to the user, so
 *     say which key and what is accepted. Never print, exit or abort on user input.
 *   - Out of memory upstream: allocate() returns nonzero and counts the request as `failed`. A
 *     failure is a value, not a crash. (A plug-in may first give cached blocks back upstream and
 *     retry, as the built-in strategies do.)
 *   - A plug-in written in C++ must not let an exception escape any of these functions.
 *   - alloclab checks what it can (a block smaller than the request is a bug it reports), but a
 *     plug-in runs inside alloclab's process: a crash in it is a crash of alloclab.
 *
 * DETERMINISM
 *   A simulation replay must give identical counters on every run. A plug-in should therefore
 *   decide only from what it is given (sizes, streams, blocks, parameters): no clocks, no unseeded
 *   randomness, no dependence on its own heap addresses.
 */
#ifndef ALLOCLAB_STRATEGY_PLUGIN_H
#define ALLOCLAB_STRATEGY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define ALLOCLAB_PLUGIN_ABI_VERSION 1

/* Marks the entry point as exported, even when the library is built with -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define ALLOCLAB_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define ALLOCLAB_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A range of memory: one obtained from the upstream, or a piece of one handed out by a strategy.
 * Addresses are opaque numbers (in simulation nothing is mapped there): never dereference them. */
typedef struct alloclab_block {
  uint64_t address;
  uint64_t capacity; /* bytes */
} alloclab_block;

/* The allocator under the strategy (simulated, malloc, mmap, cudaMalloc, ...), given to create().
 * The struct and its context stay valid until destroy() returns; keep the pointer or a copy. */
typedef struct alloclab_upstream {
  void* context; /* pass it back as the first argument of the two functions below */
  /* Asks for a block of `bytes` bytes. Returns 0 and fills *out (capacity >= bytes; exactly
   * `bytes` in simulation) on success, nonzero when the upstream is out of memory. */
  int (*allocate)(void* context, uint64_t bytes, alloclab_block* out);
  /* Gives back a block that allocate() returned, exactly as returned (same address and capacity),
   * once. */
  void (*deallocate)(void* context, alloclab_block block);
} alloclab_upstream;

/* The counters a strategy keeps, with the meaning of alloclab::StrategyStats
 * (docs/strategy-contract.md): upstream calls and reserved bytes are counted by alloclab itself,
 * around the upstream. */
typedef struct alloclab_strategy_stats {
  uint64_t requests;     /* allocate() calls */
  uint64_t hits;         /* requests served from a block the strategy already held */
  uint64_t failed;       /* allocate() calls that returned nonzero */
  uint64_t evictions;    /* cached blocks given back upstream while in use (limits, run ends);
                            not those given back by release() */
  uint64_t slack_bytes;  /* sum over hits of capacity - request (the request after the
                            strategy's own rounding, if any) */
  uint64_t cached_bytes; /* bytes held by the strategy and not handed out, right now */
} alloclab_strategy_stats;

/* The table a plug-in exports. Every member is required (none may be NULL) unless it says
 * otherwise. `self` is the pointer create() returned. */
typedef struct alloclab_strategy_plugin {
  uint32_t abi_version; /* ALLOCLAB_PLUGIN_ABI_VERSION */
  uint32_t struct_size; /* sizeof(alloclab_strategy_plugin) */

  const char* name;    /* short identifier for messages and reports, e.g. "size_class" */
  const char* summary; /* one line: what the strategy does */
  /* The parameter keys create() accepts, as a NULL-terminated array ({NULL} for none). alloclab
   * refuses any other key before calling create(), with the same message as for a built-in
   * strategy. May be NULL: then every key reaches create(), which must refuse unknown ones. */
  const char* const* keys;

  /* Makes one instance over `upstream`. The parameters are the spec's key=value pairs, in the
   * order given: keys[i], values[i] for i < count (keys are distinct; values are non-empty and
   * trimmed; both are valid only during the call). Returns the instance, or NULL after writing a
   * message into `error` (error_size >= 1 bytes, NUL-terminated). */
  void* (*create)(const alloclab_upstream* upstream, const char* const* keys,
                  const char* const* values, size_t count, char* error, size_t error_size);

  /* Serves a request of `size` bytes (may be 0) on `stream` (0 when the trace has none). Returns
   * 0 and fills *out with a block of capacity >= size that overlaps no other block handed out
   * and not yet deallocated; or nonzero when no memory could be had (count it as failed). Counts
   * the request, and the hit if it was one. */
  int (*allocate)(void* self, uint64_t size, uint64_t stream, alloclab_block* out);
  /* Takes back a block that allocate() returned, exactly as returned, once. */
  void (*deallocate)(void* self, alloclab_block block);
  /* Marks the start and end of a run (one graph execution). Runs do not nest; do nothing if the
   * strategy does not care. */
  void (*begin_run)(void* self);
  void (*end_run)(void* self);
  /* Gives every cached block back upstream; not counted as evictions. Blocks still handed out
   * stay handed out. Called for the final clean-up, and also in the middle of a replay where the
   * trace shows the program emptying its allocator's cache (torch.cuda.empty_cache() in a
   * PyTorch snapshot): the instance must go on serving calls after it. */
  void (*release)(void* self);
  /* Writes the current counters. Must not change the instance. */
  void (*get_stats)(const void* self, alloclab_strategy_stats* out);
  /* Frees the instance and the memory it allocated for itself. Blocks still cached are forgotten,
   * not given back: do not call the upstream here (as with the built-in strategies, alloclab calls
   * release() first when it wants them back). `self` is not used afterwards. */
  void (*destroy)(void* self);
} alloclab_strategy_plugin;

/* The entry point every plug-in exports. Returns the plug-in's table, which must stay valid and
 * unchanged while the library is loaded (a pointer to a static const table). */
ALLOCLAB_PLUGIN_EXPORT const alloclab_strategy_plugin* alloclab_strategy_plugin_v1(void);

/* The entry point's name, for dlsym(). */
#define ALLOCLAB_PLUGIN_ENTRY_POINT "alloclab_strategy_plugin_v1"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ALLOCLAB_STRATEGY_PLUGIN_H */
