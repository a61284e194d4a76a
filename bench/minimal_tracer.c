/* The least an in-process tracer does per event, as an LD_PRELOAD library: bench/tracer_overhead
 * runs programs under it to measure the floor under `alloclab record` directly, in the same
 * rounds, instead of adding up event_cost's figures.
 *
 * Per malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign and free: one clock read
 * (the TSC), one increment of a global sequence number (locked once the program has started a
 * thread, as alloclab's), and one 32-byte record into a per-thread ring of 65,536 records
 * (2 MiB, the size of alloclab's buffers) that nothing reads. One idle thread, as a tracer's
 * writer thread would be: glibc's malloc takes its arena locks once a process has two threads
 * (none with MINIMAL_TRACER_NO_THREAD=1 in the environment). What it leaves out is everything
 * else a tracer must do: collect, order, encode, compress and write the records; fork, exec,
 * signals, exit.
 *
 * MINIMAL_TRACER_COLLECT=thread or =process replaces the idle thread by a collector that does
 * a writer's kind of work on the first thread's records: it reads each one, updates a 4 MiB
 * table by the record's address (an encoder's map of blocks) and compresses them with zstd,
 * 65,536 at a time, into memory. As a thread it runs inside the program, as alloclab's writer
 * does; as a process (forked at load, the ring in shared memory) it does the same work outside
 * it, so the program keeps glibc's single-thread malloc. The two side by side measure what a
 * writer costs the program's own thread from inside and from outside. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <zstd.h>

#define EXPORT __attribute__((visibility("default")))

enum { ring_records = 65536, op_alloc = 0, op_free = 1 };

struct record {
  uint64_t seq_plus1;
  uint64_t ticks;
  uint64_t address;
  uint64_t size_op;
};

static void* (*real_malloc)(size_t);
static void* (*real_calloc)(size_t, size_t);
static void* (*real_realloc)(void*, size_t);
static void (*real_free)(void*);
static int (*real_posix_memalign)(void**, size_t, size_t);
static void* (*real_aligned_alloc)(size_t, size_t);
static void* (*real_memalign)(size_t, size_t);

static uint64_t sequence;
static int many_threads; /* set by pthread_create: no locked increments before */
static __thread struct record* ring __attribute__((tls_model("initial-exec")));
static __thread uint32_t next_slot __attribute__((tls_model("initial-exec")));

/* dlsym may allocate before the real functions are known: from here, never freed. */
static _Alignas(64) char arena[64 * 1024];
static size_t arena_used;

static int in_arena(const void* p) {
  return (const char*)p >= arena && (const char*)p < arena + sizeof arena;
}

static void* arena_alloc(size_t size, size_t alignment) {
  if (alignment < 64) alignment = 64;
  const size_t start = (arena_used + alignment - 1) & ~(alignment - 1);
  if (start > sizeof arena || size > sizeof arena - start) return NULL;
  arena_used = start + size;
  return arena + start;
}

static uint64_t now(void) {
#if defined(__x86_64__)
  return __rdtsc();
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static void record(const void* address, size_t size, unsigned op) {
  if (!ring) {
    void* p = mmap(NULL, ring_records * sizeof(struct record), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    ring = p;
  }
  struct record* r = &ring[next_slot++ % ring_records];
  uint64_t seq = 1;
#if defined(__x86_64__)
  if (!__atomic_load_n(&many_threads, __ATOMIC_RELAXED))
    __asm__ volatile("xaddq %0, %1" : "+r"(seq), "+m"(sequence) : : "memory");
  else
#endif
    seq = __atomic_fetch_add(&sequence, 1, __ATOMIC_SEQ_CST);
  r->ticks = now();
  r->address = (uint64_t)(uintptr_t)address;
  r->size_op = (uint64_t)size | (uint64_t)op << 56;
  __atomic_store_n(&r->seq_plus1, seq + 1, __ATOMIC_RELEASE);
}

/* ISO C cannot cast dlsym's object pointer to a function pointer; POSIX guarantees the bytes. */
static void resolve(void* function_pointer, const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  memcpy(function_pointer, &symbol, sizeof symbol);
}

typedef int (*pthread_create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
static pthread_create_fn real_pthread_create;
static int starting_idle_thread;

EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*),
                          void* arg) {
  if (!starting_idle_thread) __atomic_store_n(&many_threads, 1, __ATOMIC_SEQ_CST);
  if (!real_pthread_create) resolve(&real_pthread_create, "pthread_create");
  return real_pthread_create(thread, attr, routine, arg);
}

static void* idle(void* unused) {
  for (;;) pause();
  return unused;
}

enum { table_slots = 1 << 18 };
static struct record* collected_ring; /* the first thread's ring, which the collector reads */
static pid_t program_pid;

static void* map_or_die(size_t bytes, int flags) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort();
  return p;
}

/* Takes each record once, in ring order, as soon as its sequence number shows it is newer than
 * the last one taken; looks every millisecond when there is none. A collector that falls a lap
 * behind takes the newer records in the slots it reaches: the work per record is what counts. */
static void* collect(void* as_process) {
  struct table_slot {
    uint64_t address;
    uint64_t events;
  };
  struct table_slot* table = map_or_die(table_slots * sizeof *table, MAP_PRIVATE);
  struct record* batch = map_or_die(ring_records * sizeof *batch, MAP_PRIVATE);
  const size_t bound = ZSTD_compressBound(ring_records * sizeof *batch);
  void* compressed = map_or_die(bound, MAP_PRIVATE);
  ZSTD_CCtx* context = ZSTD_createCCtx();
  uint64_t last_taken = 0;
  uint32_t position = 0;
  uint32_t batched = 0;
  for (;;) {
    const struct record* r = &collected_ring[position % ring_records];
    const uint64_t seq_plus1 = __atomic_load_n(&r->seq_plus1, __ATOMIC_ACQUIRE);
    if (seq_plus1 <= last_taken) {
      if (as_process && getppid() != program_pid) _exit(0);
      const struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
      continue;
    }
    last_taken = seq_plus1;
    ++position;
    struct table_slot* slot = &table[(r->address * 0x9E3779B97F4A7C15ull) >> (64 - 18)];
    slot->address = r->address;
    ++slot->events;
    batch[batched++] = *r;
    if (batched == ring_records) {
      ZSTD_compressCCtx(context, compressed, bound, batch, batched * sizeof *batch, 1);
      batched = 0;
    }
  }
  return NULL;
}

/* The collecting process: a fork of the program at load, before main. Its own allocations go to
 * a ring of its own, it has no signal handlers of the program's to run, and it ends with the
 * program. */
static void start_collecting_process(void) {
  program_pid = getpid();
  const pid_t child = fork();
  if (child != 0) return;
  ring = map_or_die(ring_records * sizeof *ring, MAP_PRIVATE);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != program_pid) _exit(0);
  collect((void*)1);
}

__attribute__((constructor)) static void start(void) {
  resolve(&real_malloc, "malloc");
  resolve(&real_calloc, "calloc");
  resolve(&real_realloc, "realloc");
  resolve(&real_posix_memalign, "posix_memalign");
  resolve(&real_aligned_alloc, "aligned_alloc");
  resolve(&real_memalign, "memalign");
  resolve(&real_free, "free");
  const char* collector = getenv("MINIMAL_TRACER_COLLECT");
  if (collector) {
    const int shared = strcmp(collector, "process") == 0 ? MAP_SHARED : MAP_PRIVATE;
    collected_ring = ring = map_or_die(ring_records * sizeof *ring, shared);
    if (shared == MAP_SHARED) {
      start_collecting_process();
      return;
    }
  }
  pthread_t thread;
  starting_idle_thread = 1;
  if (!getenv("MINIMAL_TRACER_NO_THREAD") &&
      pthread_create(&thread, NULL, collector ? collect : idle, NULL) == 0)
    pthread_detach(thread);
  starting_idle_thread = 0;
}

EXPORT void* malloc(size_t size) {
  if (!real_malloc) return arena_alloc(size, 0);
  void* p = real_malloc(size);
  if (p) record(p, size, op_alloc);
  return p;
}

EXPORT void* calloc(size_t n, size_t size) {
  if (!real_calloc) return n && size > SIZE_MAX / n ? NULL : arena_alloc(n * size, 0);
  void* p = real_calloc(n, size);
  if (p) record(p, n * size, op_alloc);
  return p;
}

EXPORT void free(void* p) {
  if (!p || in_arena(p) || !real_free) return;
  record(p, 0, op_free);
  real_free(p);
}

EXPORT void* realloc(void* old, size_t size) {
  if (!real_realloc || in_arena(old)) {
    void* p = malloc(size);
    if (p && old) {
      const size_t room = (size_t)(arena + sizeof arena - (char*)old);
      memcpy(p, old, size < room ? size : room);
    }
    return p;
  }
  if (old) record(old, 0, op_free);
  void* p = real_realloc(old, size);
  if (p) record(p, size, op_alloc);
  return p;
}

EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (!real_posix_memalign) return (*out = arena_alloc(size, alignment)) ? 0 : ENOMEM;
  const int status = real_posix_memalign(out, alignment, size);
  if (status == 0) record(*out, size, op_alloc);
  return status;
}

EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (!real_aligned_alloc) return arena_alloc(size, alignment);
  void* p = real_aligned_alloc(alignment, size);
  if (p) record(p, size, op_alloc);
  return p;
}

EXPORT void* memalign(size_t alignment, size_t size) {
  if (!real_memalign) return arena_alloc(size, alignment);
  void* p = real_memalign(alignment, size);
  if (p) record(p, size, op_alloc);
  return p;
}
