// The interposed allocation functions. Each one calls the real function (found with
// dlsym(RTLD_NEXT)) and, when tracing, records the event in the order recorder.hpp explains.
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstring>

#include "alloclab/protocol/bootstrap_arena.hpp"
#include "export.hpp"
#include "kernel_call.hpp"
#include "life_cycle.hpp"
#include "mappings.hpp"
#include "recorder.hpp"
#include "stacks.hpp"

namespace alloclab::preload {
namespace {

using MallocFn = void* (*)(std::size_t);
using CallocFn = void* (*)(std::size_t, std::size_t);
using ReallocFn = void* (*)(void*, std::size_t);
using FreeFn = void (*)(void*);
using PosixMemalignFn = int (*)(void**, std::size_t, std::size_t);
using AlignedFn = void* (*)(std::size_t, std::size_t);
using MmapFn = void* (*)(void*, std::size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, std::size_t);
using MremapFn = void* (*)(void*, std::size_t, std::size_t, int, ...);
using MprotectFn = int (*)(void*, std::size_t, int);

struct RealFunctions {
  MallocFn malloc;
  CallocFn calloc;
  ReallocFn realloc;
  FreeFn free;
  PosixMemalignFn posix_memalign;
  AlignedFn aligned_alloc;
  AlignedFn memalign;
  MallocFn valloc;
  MallocFn pvalloc;
  MmapFn mmap;
  MunmapFn munmap;
  MremapFn mremap;
  MprotectFn mprotect;
};
RealFunctions real;

// dlsym itself may call calloc before the real one is known: served from a static arena,
// never recorded.
protocol::BootstrapArena<64 * 1024> g_arena;

template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// --min-size: decide on the block's usable size, which is the same at alloc and at free, so a
// recorded allocation always gets its free recorded and a skipped one never does.
bool big_enough(void* p) {
  return g.min_size == 0 || malloc_usable_size(p) >= g.min_size;
}

void after_alloc(void* p, std::size_t size, std::size_t alignment) {
  if (p && tracing_heap() && big_enough(p))
    record_event(op_alloc, kind_host, reinterpret_cast<std::uintptr_t>(p), size, alignment);
  else if (t_collect_unwinder_blocks && p && big_enough(p)) [[unlikely]]
    note_unwinder_block(p, size);
}

void before_free(void* p) {
  if (p && tracing_heap() && big_enough(p)) {
    if (unwinder_blocks_outstanding() && forget_unwinder_block(p)) [[unlikely]]
      return;
    record_event(op_free, kind_host, reinterpret_cast<std::uintptr_t>(p), 0, 0);
  }
}

using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

#ifdef ALLOCLAB_TSAN_BUILD
// ThreadSanitizer's runtime calls malloc while it initialises, before any instrumented code
// may run: this file is built without instrumentation, finds the real functions itself, and
// leaves initialize() to the library constructor, which runs after the runtime is ready.
std::atomic<bool> g_resolving{false};
void ensure_ready() {
  if (!real.free && !g_resolving.exchange(true)) resolve_real_functions();
}

struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
};
void* start_unguarded(void* start) {
  const ThreadStart copy = *static_cast<ThreadStart*>(start);
  real.free(start);
  t_guard = 0;
  return copy.routine(copy.arg);
}

// The runtime's own code maps memory too (its symbolizer, inside interceptors that ignore
// synchronisation): not the program's, and recorded it would show as a race in the tracer.
CodeRange g_runtime;
bool from_runtime(const void* caller) {
  return g_runtime.contains(reinterpret_cast<std::uintptr_t>(caller));
}
#define ALLOCLAB_FROM_RUNTIME() from_runtime(__builtin_return_address(0))
#else
#define ALLOCLAB_FROM_RUNTIME() false
void ensure_ready() {
  if (g.state.load(std::memory_order_acquire) == static_cast<int>(State::uninitialized))
    initialize();
}
#endif

// realloc and reallocarray: free(old) is ordered before the call (the old block may be handed
// to another thread as soon as the real realloc returns), alloc(new) after it. A moved block is
// flagged so the writer can put alloc(new) first, as the replay model wants; a block kept in
// place is flagged so the replay can keep it too (docs/strategy-contract.md), when both halves
// are recorded.
template <typename Call>
void* traced_realloc(void* old, std::size_t size, Call&& call) {
  if (!old || !tracing_heap()) return call();
  const bool record_old = big_enough(old);
  const Pending freed = record_old ? begin_record() : Pending{nullptr, 0};
  void* p = call();
  if (p == nullptr) {
    // Size 0 frees the block (glibc); any other failure leaves it allocated.
    const bool freed_it = size == 0;
    complete_record(freed, freed_it ? op_free : op_skip, kind_host,
                    reinterpret_cast<std::uintptr_t>(old), 0, 0);
    return p;
  }
  const bool record_new = big_enough(p);
  complete_record(freed, op_free, kind_host, reinterpret_cast<std::uintptr_t>(old), 0, 0,
                  record_new ? realloc_free_bit : 0);
  if (record_new) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    if (p != old && freed.record)
      complete_moved_realloc(begin_record_pair(), address, size, freed.seq);
    else
      complete_record(begin_record(), op_alloc, kind_host, address, size, 0,
                      p == old && freed.record ? realloc_in_place_bit : 0);
  }
  return p;
}

}  // namespace

void resolve_real_functions() {
  real.calloc = next_symbol<CallocFn>("calloc");
  real.malloc = next_symbol<MallocFn>("malloc");
  real.realloc = next_symbol<ReallocFn>("realloc");
  real.free = next_symbol<FreeFn>("free");
  real.posix_memalign = next_symbol<PosixMemalignFn>("posix_memalign");
  real.aligned_alloc = next_symbol<AlignedFn>("aligned_alloc");
  real.memalign = next_symbol<AlignedFn>("memalign");
  real.valloc = next_symbol<MallocFn>("valloc");
  real.pvalloc = next_symbol<MallocFn>("pvalloc");
  real.mmap = next_symbol<MmapFn>("mmap");
  real.munmap = next_symbol<MunmapFn>("munmap");
  real.mremap = next_symbol<MremapFn>("mremap");
  real.mprotect = next_symbol<MprotectFn>("mprotect");
}

}  // namespace alloclab::preload

using namespace alloclab::preload;

ALLOCLAB_EXPORT void* malloc(std::size_t size) {
  ensure_ready();
  if (!real.malloc) return g_arena.allocate(size);
  void* p = real.malloc(size);
  after_alloc(p, size, 0);
  return p;
}

ALLOCLAB_EXPORT void* calloc(std::size_t n, std::size_t size) {
  ensure_ready();
  if (!real.calloc) {
    if (size && n > SIZE_MAX / size) return nullptr;
    return g_arena.allocate(n * size);  // static storage: already zero
  }
  void* p = real.calloc(n, size);
  after_alloc(p, n * size, 0);
  return p;
}

ALLOCLAB_EXPORT void free(void* p) {
  if (!p || g_arena.contains(p)) return;
  ensure_ready();
  if (!real.free) return;  // only while dlsym itself runs: leak rather than crash
  before_free(p);
  real.free(p);
}

ALLOCLAB_EXPORT void* realloc(void* old, std::size_t size) {
  ensure_ready();
  if (g_arena.contains(old)) {
    void* p = malloc(size);
    if (p) {
      const std::size_t room = g_arena.room_after(old);
      std::memcpy(p, old, size < room ? size : room);
    }
    return p;
  }
  if (!real.realloc) return nullptr;
  if (!old) {
    void* p = real.realloc(nullptr, size);
    after_alloc(p, size, 0);
    return p;
  }
  void* p = traced_realloc(old, size, [&] { return real.realloc(old, size); });
  return p;
}

// glibc's reallocarray calls realloc through the PLT, i.e. our realloc: calling it here as well
// would record the event twice. So it is realloc with an overflow check, as in glibc.
ALLOCLAB_EXPORT void* reallocarray(void* old, std::size_t n, std::size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(old, n * size);
}

ALLOCLAB_EXPORT int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  ensure_ready();
  if (!real.posix_memalign) {
    *out = g_arena.allocate(size, alignment);
    return *out ? 0 : ENOMEM;
  }
  const int status = real.posix_memalign(out, alignment, size);
  if (status == 0) after_alloc(*out, size, alignment);
  return status;
}

ALLOCLAB_EXPORT void* aligned_alloc(std::size_t alignment, std::size_t size) {
  ensure_ready();
  if (!real.aligned_alloc) return g_arena.allocate(size, alignment);
  void* p = real.aligned_alloc(alignment, size);
  after_alloc(p, size, alignment);
  return p;
}

ALLOCLAB_EXPORT void* memalign(std::size_t alignment, std::size_t size) {
  ensure_ready();
  if (!real.memalign) return g_arena.allocate(size, alignment);
  void* p = real.memalign(alignment, size);
  // glibc rounds a non-power-of-two alignment up; record what was honoured.
  std::size_t recorded = 1;
  while (recorded < alignment) recorded <<= 1;
  after_alloc(p, size, alignment ? recorded : 0);
  return p;
}

ALLOCLAB_EXPORT void* valloc(std::size_t size) {
  ensure_ready();
  const std::size_t page = 4096;
  if (!real.valloc) return g_arena.allocate(size, page);
  void* p = real.valloc(size);
  after_alloc(p, size, page);
  return p;
}

ALLOCLAB_EXPORT void* pvalloc(std::size_t size) {
  ensure_ready();
  const std::size_t page = 4096;
  if (!real.pvalloc) return g_arena.allocate(size, page);
  void* p = real.pvalloc(size);
  // pvalloc rounds the size up to whole pages: that is what the program got.
  after_alloc(p, (size + page - 1) & ~(page - 1), page);
  return p;
}

ALLOCLAB_EXPORT void* mmap(void* addr, std::size_t length, int prot, int flags, int fd,
                           off_t offset) {
  ensure_ready();
  if (!real.mmap) {
    // Before the real mmap is known (dlsym at work): the system call itself.
    return reinterpret_cast<void*>(kernel_call(SYS_mmap, addr, length, prot, flags, fd, offset));
  }
  void* p = real.mmap(addr, length, prot, flags, fd, offset);
  // Any mapping, anonymous or not, replaces what was mapped there (MAP_FIXED).
  if (p != MAP_FAILED && tracing() && !ALLOCLAB_FROM_RUNTIME()) {
    const Mapping what = !(flags & MAP_ANONYMOUS) || length < g.min_size ? Mapping::untracked
                         : prot == PROT_NONE                             ? Mapping::reservation
                                                                         : Mapping::recorded;
    mappings_mapped(reinterpret_cast<std::uintptr_t>(p), length, what, length);
  }
  return p;
}

ALLOCLAB_EXPORT void* mmap64(void* addr, std::size_t length, int prot, int flags, int fd,
                             off_t offset) {
  return mmap(addr, length, prot, flags, fd, offset);
}

ALLOCLAB_EXPORT int munmap(void* addr, std::size_t length) {
  ensure_ready();
  // Recorded before the pages go: a mapping another thread then gets there comes later.
  if (tracing() && !ALLOCLAB_FROM_RUNTIME())
    mappings_forget(reinterpret_cast<std::uintptr_t>(addr), length);
  if (!real.munmap) return static_cast<int>(kernel_call(SYS_munmap, addr, length));
  return real.munmap(addr, length);
}

// A recorded mapping that mremap moves or resizes is freed, and allocated again where it ends
// up, with its new size; one it copies (old size 0) or leaves mapped (MREMAP_DONTUNMAP) is not
// freed. If mremap fails, the freed one is allocated again where it was. A reservation stays one
// where it ends up, so that pages committed there later are allocations (a runtime that grows
// its reserved heap with mremap, then commits it with mprotect).
ALLOCLAB_EXPORT void* mremap(void* old, std::size_t old_size, std::size_t new_size, int flags,
                             ...) {
  void* new_address = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list rest;
    va_start(rest, flags);
    new_address = va_arg(rest, void*);
    va_end(rest);
  }
  ensure_ready();
  const bool traced = tracing() && !ALLOCLAB_FROM_RUNTIME();
  const auto old_start = reinterpret_cast<std::uintptr_t>(old);
  const bool stays = old_size == 0 || (flags & MREMAP_DONTUNMAP);
  const Mapping was = traced ? mappings_kind(old_start, old_size) : Mapping::untracked;
  if (traced && !stays) mappings_forget(old_start, old_size);
  void* p = real.mremap ? real.mremap(old, old_size, new_size, flags, new_address)
                        : reinterpret_cast<void*>(
                              kernel_call(SYS_mremap, old, old_size, new_size, flags, new_address));
  // What the mapping is at `size`: a reservation stays one, a recorded one only above --min-size.
  const auto as = [was](std::size_t size) {
    if (was == Mapping::recorded && size < g.min_size) return Mapping::untracked;
    return was;
  };
  if (traced) {
    if (p != MAP_FAILED)
      mappings_mapped(reinterpret_cast<std::uintptr_t>(p), new_size, as(new_size), new_size);
    else if (!stays && was != Mapping::untracked)
      mappings_mapped(old_start, old_size, as(old_size), old_size);
  }
  return p;
}

// Pages of a PROT_NONE reservation made accessible are allocations from then on; recorded pages
// made PROT_NONE are freed (mappings.hpp).
ALLOCLAB_EXPORT int mprotect(void* addr, std::size_t length, int prot) {
  ensure_ready();
  const int result = real.mprotect
                         ? real.mprotect(addr, length, prot)
                         : static_cast<int>(kernel_call(SYS_mprotect, addr, length, prot));
  if (result == 0 && tracing() && !ALLOCLAB_FROM_RUNTIME())
    mappings_protected(reinterpret_cast<std::uintptr_t>(addr), length, prot != PROT_NONE);
  return result;
}

// The tracer's own writer thread takes no sequence numbers: only the program's threads count.
ALLOCLAB_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                   void* (*routine)(void*), void* arg) {
  if (t_guard == 0) expect_many_threads();
  static const auto next = next_symbol<PthreadCreateFn>("pthread_create");
#ifdef ALLOCLAB_TSAN_BUILD
  ensure_ready();
  auto* start = static_cast<ThreadStart*>(real.malloc(sizeof(ThreadStart)));
  if (!start) return EAGAIN;
  *start = ThreadStart{routine, arg};
  const int status = next(thread, attr, start_unguarded, start);
  if (status != 0) real.free(start);
  return status;
#else
  return next(thread, attr, routine, arg);
#endif
}

#ifdef ALLOCLAB_TSAN_BUILD
// The main thread is let go once the runtime is ready: the library constructor has run.
__attribute__((constructor(65535))) static void alloclab_unguard_main_thread() {
  g_runtime = code_range_of(dlsym(RTLD_DEFAULT, "__tsan_init"));
  t_guard = 0;
}
#endif
