// liballoclab_live.so: `alloclab run`'s library inside the program. The malloc family goes
// through one strategy (a LiveCache), with the real allocator as its upstream; requests below
// the minimum size, or asking an alignment above the 16 bytes every block of the real allocator
// has, go to the real allocator directly. At exit the process writes its LiveReport.
//
// One lock serialises the cache. The cache's own containers, and everything the strategy
// allocates, reach the real allocator directly: a thread inside the cache is marked
// (t_inside), and every entry point sends a marked thread's calls straight through.
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "alloclab/format/resolve.hpp"
#include "alloclab/live/live_cache.hpp"
#include "alloclab/live/process_output.hpp"
#include "alloclab/protocol/bootstrap_arena.hpp"
#include "alloclab/protocol/environment.hpp"
#include "alloclab/protocol/ticks.hpp"
#define ALLOCLAB_LIVE_HOST_GUARD  // this library is the host live guard (inside.hpp)
#include "inside.hpp"

#define ALLOCLAB_LIVE_EXPORT extern "C" __attribute__((visibility("default")))

namespace alloclab::live {
namespace {

using MallocFn = void* (*)(std::size_t);
using CallocFn = void* (*)(std::size_t, std::size_t);
using ReallocFn = void* (*)(void*, std::size_t);
using FreeFn = void (*)(void*);
using PosixMemalignFn = int (*)(void**, std::size_t, std::size_t);
using AlignedFn = void* (*)(std::size_t, std::size_t);
using UsableSizeFn = std::size_t (*)(void*);

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
  UsableSizeFn malloc_usable_size;
};
RealFunctions real;

// dlsym may call calloc before the real one is known: served from a static arena.
protocol::BootstrapArena<16 * 1024> g_arena;

template <typename Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// What every block the strategy hands out is aligned to: its upstream's blocks are, and the
// strategies hand out whole blocks or pieces at multiples of 512 bytes of one (the pytorch
// model). 64 covers what programs ask of aligned allocation most: PyTorch's CPU tensors, and
// SIMD loads of a cache line. A replay with --min-size leaves out what this leaves out.
constexpr std::size_t kBlockAlignment = run_block_alignment;

// The real allocator as the strategy's upstream.
class RealUpstream final : public Upstream {
 public:
  std::optional<Block> allocate(std::uint64_t bytes) override {
    void* p = nullptr;
    if (real.posix_memalign(&p, kBlockAlignment,
                            static_cast<std::size_t>(bytes == 0 ? 1 : bytes)) != 0)
      return std::nullopt;
    return Block{reinterpret_cast<std::uintptr_t>(p), bytes};
  }
  void deallocate(const Block& block) override {
    real.free(reinterpret_cast<void*>(static_cast<std::uintptr_t>(block.address)));
  }
};

enum class State : int { uninitialized, initializing, ready, off };
std::atomic<int> g_state{static_cast<int>(State::uninitialized)};
// A spin lock: taken for tens of nanoseconds, where a mutex's own two atomic operations and
// call overhead would be a good part of the cost. A waiter that spins long yields.
// On a cache line of its own: every call of every thread reads g_state and g_cache, and a lock
// beside them would take their line from the readers at each lock and unlock.
struct alignas(64) SpinLock {
  std::atomic<bool> locked{false};
};
SpinLock g_lock;
void lock() {
  unsigned spins = 0;
  while (g_lock.locked.exchange(true, std::memory_order_acquire)) {
    while (g_lock.locked.load(std::memory_order_relaxed)) {
      if (++spins < 64) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      } else {
        sched_yield();
      }
    }
  }
}
void unlock() {
  g_lock.locked.store(false, std::memory_order_release);
}
alignas(RealUpstream) unsigned char g_upstream_storage[sizeof(RealUpstream)];
alignas(LiveCache) unsigned char g_cache_storage[sizeof(LiveCache)];
LiveCache* g_cache = nullptr;
std::uint64_t g_min_size = 0;
char g_report_dir[4096];
std::string* g_spec = nullptr;

// Until the program starts a second thread (pthread_create below) nothing can race, and the
// lock, whose atomic exchange is a good part of a cached pair, is not taken: glibc's malloc
// skips its own locks the same way. It is taken by every call from the first thread start on.
std::atomic<bool> g_many_threads{false};

struct Locked {
  Locked() : held_(g_many_threads.load(std::memory_order_acquire)) {
    if (held_) lock();
  }
  ~Locked() {
    if (held_) unlock();
  }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  bool held_;
};

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
  real.malloc_usable_size = next_symbol<UsableSizeFn>("malloc_usable_size");
}

void ensure_real() {
  static std::atomic<bool> resolving{false};
  if (real.free == nullptr && !resolving.exchange(true)) resolve_real_functions();
}

// The lock is held across fork, so that the child's copy of the cache is whole.
void before_fork() {
  lock();
}
void after_fork_in_parent() {
  unlock();
}
void after_fork_in_child() {
  unlock();
}

// Durations are read from the time-stamp counter: a few nanoseconds, where clock_gettime costs
// tens, twice per call of the strategy.
std::uint64_t read_ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return protocol::monotonic_ns();
#endif
}

// Reads the settings `alloclab run` left in the environment and builds the cache. Without
// them (the library preloaded by hand, or by a process that removed them) everything goes to
// the real allocator.
void initialize() {
  int expected = static_cast<int>(State::uninitialized);
  if (!g_state.compare_exchange_strong(expected, static_cast<int>(State::initializing))) return;
  ensure_real();
  // Before the first Inside: from here on, what the cache allocates is hidden from a recorder.
  find_guards();
  Inside inside;
  const char* spec = std::getenv(protocol::env_live_spec);
  const char* dir = std::getenv(protocol::env_live_report_dir);
  if (spec == nullptr || dir == nullptr || std::strlen(dir) >= sizeof g_report_dir) {
    g_state.store(static_cast<int>(State::off));
    return;
  }
  std::strcpy(g_report_dir, dir);
  if (const char* min = std::getenv(protocol::env_live_min_size))
    g_min_size = std::strtoull(min, nullptr, 10);
  const char* markers = std::getenv(protocol::env_live_markers);
  const bool implicit_run = markers == nullptr || std::strcmp(markers, "1") != 0;
  try {
    g_spec = new std::string(spec);
    auto* upstream = new (g_upstream_storage) RealUpstream();
    g_cache = new (g_cache_storage)
        LiveCache(spec, *upstream, Clock{read_ticks, protocol::monotonic_ns}, implicit_run);
  } catch (const std::exception& e) {
    die("cannot start the strategy: ", e.what());
  }
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  g_state.store(static_cast<int>(State::ready), std::memory_order_release);
}

bool ready() {
  return g_state.load(std::memory_order_acquire) == static_cast<int>(State::ready);
}

// Whether this call goes through the strategy.
bool through_cache(std::size_t size) {
  return t_inside == 0 && size >= g_min_size && size != 0 && ready();
}

void* cache_allocate(std::size_t size) {
  void* p;
  {
    Inside inside;
    Locked locked;
    p = g_cache->allocate(size);
  }
  if (p == nullptr) {
    errno = ENOMEM;
  } else if (reinterpret_cast<std::uintptr_t>(p) % kBlockAlignment != 0) [[unlikely]] {
    // A plug-in that splits its blocks elsewhere: the program may rely on the alignment.
    die("the strategy handed out a block not aligned to 64 bytes: ", g_spec->c_str());
  }
  return p;
}

// Frees `p` if the cache handed it out; false if it did not.
bool cache_free(void* p) {
  if (t_inside != 0 || !ready() || !g_cache->may_own(p)) return false;
  Inside inside;
  Locked locked;
  return g_cache->deallocate_if_owned(p);
}

void write_report() {
  LiveReport report;
  {
    Locked locked;
    report = g_cache->report();
    report.spec = *g_spec;
    report.pid = static_cast<std::uint64_t>(getpid());
    report.min_size = g_min_size;
    // The program is done with what the strategy caches: it goes back.
    g_cache->release();
  }
  char path[sizeof g_report_dir + 64];
  std::snprintf(path, sizeof path, "%s/live.%ld.txt", g_report_dir, static_cast<long>(getpid()));
  write_text_file(path, to_text(report));
}

}  // namespace
}  // namespace alloclab::live

using namespace alloclab::live;

__attribute__((constructor(101))) static void alloclab_live_constructor() {
  initialize();
}

// Destructors run after the program's own exit handlers: what it frees there is counted.
__attribute__((destructor(101))) static void alloclab_live_destructor() {
  if (!ready()) return;
  Inside inside;
  write_report();
}

ALLOCLAB_LIVE_EXPORT void* malloc(std::size_t size) {
  ensure_real();
  if (real.malloc == nullptr) return g_arena.allocate(size);
  if (!through_cache(size)) return real.malloc(size);
  return cache_allocate(size);
}

ALLOCLAB_LIVE_EXPORT void* calloc(std::size_t n, std::size_t size) {
  ensure_real();
  if (size != 0 && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  if (real.calloc == nullptr) return g_arena.allocate(n * size);  // static storage: already zero
  if (!through_cache(n * size)) return real.calloc(n, size);
  void* p = cache_allocate(n * size);
  // A cached block holds what it held before.
  if (p != nullptr) std::memset(p, 0, n * size);
  return p;
}

ALLOCLAB_LIVE_EXPORT void free(void* p) {
  if (p == nullptr || g_arena.contains(p)) return;
  ensure_real();
  if (real.free == nullptr) return;  // only while dlsym itself runs: leak rather than crash
  if (!cache_free(p)) real.free(p);
}

ALLOCLAB_LIVE_EXPORT void* realloc(void* old, std::size_t size) {
  ensure_real();
  if (old == nullptr) return malloc(size);
  if (g_arena.contains(old)) {
    void* p = malloc(size);
    if (p != nullptr) {
      const auto room = g_arena.room_after(old);
      std::memcpy(p, old, size < room ? size : room);
    }
    return p;
  }
  if (t_inside == 0 && ready() && g_cache->may_own(old)) {
    void* p = nullptr;
    bool owned = false;
    {
      Inside inside;
      Locked locked;
      if (g_cache->owns(old)) {
        owned = true;
        if (size == 0)
          g_cache->deallocate(old);  // as glibc: realloc(p, 0) frees p
        else
          p = g_cache->reallocate(old, size);
      }
    }
    if (owned) {
      if (p == nullptr && size != 0) errno = ENOMEM;
      return p;
    }
  }
  // A block of the real allocator that grows to the minimum size moves into the strategy.
  if (through_cache(size)) {
    void* p = cache_allocate(size);
    if (p == nullptr) return nullptr;
    const std::size_t had = real.malloc_usable_size(old);
    std::memcpy(p, old, had < size ? had : size);
    real.free(old);
    return p;
  }
  return real.realloc(old, size);
}

// glibc's reallocarray calls realloc through the PLT, i.e. the realloc above.
ALLOCLAB_LIVE_EXPORT void* reallocarray(void* old, std::size_t n, std::size_t size) {
  if (size != 0 && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(old, n * size);
}

ALLOCLAB_LIVE_EXPORT int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  ensure_real();
  if (alignment > kBlockAlignment || !through_cache(size))
    return real.posix_memalign(out, alignment, size);
  // posix_memalign's own check, which the real function would have made.
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = cache_allocate(size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

ALLOCLAB_LIVE_EXPORT void* aligned_alloc(std::size_t alignment, std::size_t size) {
  ensure_real();
  if (alignment > kBlockAlignment || !through_cache(size) || alignment == 0 ||
      (alignment & (alignment - 1)) != 0)
    return real.aligned_alloc(alignment, size);
  return cache_allocate(size);
}

ALLOCLAB_LIVE_EXPORT void* memalign(std::size_t alignment, std::size_t size) {
  ensure_real();
  if (alignment > kBlockAlignment || !through_cache(size)) return real.memalign(alignment, size);
  return cache_allocate(size);
}

// Page-aligned: always the real allocator's.
ALLOCLAB_LIVE_EXPORT void* valloc(std::size_t size) {
  ensure_real();
  return real.valloc(size);
}

ALLOCLAB_LIVE_EXPORT void* pvalloc(std::size_t size) {
  ensure_real();
  return real.pvalloc(size);
}

ALLOCLAB_LIVE_EXPORT std::size_t malloc_usable_size(void* p) {
  if (p == nullptr) return 0;
  ensure_real();
  if (t_inside == 0 && ready() && g_cache->may_own(p)) {
    Inside inside;
    Locked locked;
    if (g_cache->owns(p)) return g_cache->capacity(p);
  }
  return real.malloc_usable_size(p);
}

// The run markers (alloclab/markers.h, the Python markers): the strategy's runs. Under
// `run --record` the recorder, preloaded first, records each and passes it on to these.
// Each is passed on to the next library that has it: `run --cuda`'s, preloaded after this one.
namespace {
template <typename Fn>
Fn next_marker(std::atomic<void*>& cache, const char* name) {
  void* fn = cache.load(std::memory_order_acquire);
  if (fn == nullptr) {
    Inside inside;
    void* next = dlsym(RTLD_NEXT, name);
    fn = next != nullptr ? next : reinterpret_cast<void*>(1);
    cache.store(fn, std::memory_order_release);
  }
  return fn == reinterpret_cast<void*>(1) ? nullptr : reinterpret_cast<Fn>(fn);
}
std::atomic<void*> g_next_run_begin{nullptr};
std::atomic<void*> g_next_run_end{nullptr};
}  // namespace

ALLOCLAB_LIVE_EXPORT void alloclab_preload_run_begin(const char* label) {
  if (auto next =
          next_marker<void (*)(const char*)>(g_next_run_begin, "alloclab_preload_run_begin"))
    next(label);
  if (!ready()) return;
  Inside inside;
  Locked locked;
  g_cache->begin_run(label);
}

ALLOCLAB_LIVE_EXPORT void alloclab_preload_run_end(void) {
  if (auto next = next_marker<void (*)()>(g_next_run_end, "alloclab_preload_run_end")) next();
  if (!ready()) return;
  Inside inside;
  Locked locked;
  g_cache->end_run();
}

ALLOCLAB_LIVE_EXPORT void alloclab_preload_mark(const char*) {}

// The other live libraries' guard (inside.hpp): `delta` +1 as one of them starts its own work on
// this thread, -1 as it ends. Inside it, this thread's malloc family goes to the real allocator,
// so what they allocate for themselves is never a request of the program's.
ALLOCLAB_LIVE_EXPORT void alloclab_live_guard(int delta) {
  t_inside += delta;
}

using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

ALLOCLAB_LIVE_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                        void* (*routine)(void*), void* arg) {
  // Before the thread exists, and by the only thread that could be inside the cache.
  g_many_threads.store(true, std::memory_order_seq_cst);
  static const auto next = next_symbol<PthreadCreateFn>("pthread_create");
  return next(thread, attr, routine, arg);
}
