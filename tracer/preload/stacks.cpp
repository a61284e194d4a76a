#include "stacks.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <atomic>
#include <cstring>

#include "alloclab/protocol/environment.hpp"
#include "processes.hpp"
#include "recorder.hpp"

#ifdef ALLOCLAB_LIBUNWIND
#define UNW_LOCAL_ONLY  // the _UL (local-only) entry points: those of libunwind.so, not -generic
#include <libunwind.h>
#endif

namespace alloclab::preload {

int g_stack_depth = 0;
thread_local constinit bool t_collect_unwinder_blocks __attribute__((tls_model("initial-exec"))) =
    false;

namespace {

std::atomic<bool> g_stacks_ready{false};

CodeRange g_self;      // the tracer's own code: frames to skip
CodeRange g_unwinder;  // libunwind's, when it unwinds: unw_backtrace's own frame comes first

struct RangeQuery {
  std::uintptr_t target;
  CodeRange* range;
};

int find_range(dl_phdr_info* info, std::size_t, void* data) {
  auto* query = static_cast<RangeQuery*>(data);
  const std::uintptr_t target = query->target;
  std::uintptr_t low = ~std::uintptr_t{0}, high = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    low = begin < low ? begin : low;
    high = begin + ph.p_memsz > high ? begin + ph.p_memsz : high;
  }
  if (target < low || target >= high) return 0;
  *query->range = CodeRange{low, high};
  return 1;
}

bool is_own_frame(std::uintptr_t address) {
  return g_self.contains(address) || g_unwinder.contains(address);
}

// This thread's first unwind ran (libunwind: its thread-local storage exists); an unwind runs.
thread_local int t_unwound __attribute__((tls_model("initial-exec"))) = 0;
thread_local int t_unwinding __attribute__((tls_model("initial-exec"))) = 0;

// Blocks the unwinder allocated for itself, by address: a bucket of eight (one cache line) per
// hash, so that a free looks at one line. A block that finds its bucket full is recorded as an
// allocation instead (then its free is too, and the trace stays paired): only a program with
// thousands of threads that unwound and were not joined yet could see that.
constexpr std::size_t unwinder_buckets = 8192;
constexpr std::size_t unwinder_bucket_slots = 8;
struct alignas(64) UnwinderBucket {
  std::atomic<std::uintptr_t> blocks[unwinder_bucket_slots];
};
UnwinderBucket g_unwinder_blocks[unwinder_buckets];
std::atomic<int> g_unwinder_blocks_outstanding{0};

UnwinderBucket& unwinder_bucket(std::uintptr_t address) {
  return g_unwinder_blocks[(address * 0x9E3779B97F4A7C15ull) >> 51];  // the top 13 bits
}
static_assert(unwinder_buckets == std::size_t{1} << 13);

using BacktraceFn = int (*)(void**, int);
// libunwind's unw_backtrace once stacks_warm_up loaded it; null: glibc's backtrace().
BacktraceFn g_unw_backtrace = nullptr;

#ifdef ALLOCLAB_LIBUNWIND
#define ALLOCLAB_SYMBOL_NAME(name) ALLOCLAB_SYMBOL_NAME_(name)
#define ALLOCLAB_SYMBOL_NAME_(name) #name

// libunwind is opened here, only with --stacks, and RTLD_LOCAL: linked into the library it would
// load into every traced program, and its _Unwind_* functions (libunwind.so exports a
// libgcc-compatible set) would take the place of libgcc_s's for the program's own exceptions.
// Not found at run time: backtrace() it is.
void load_libunwind() {
  void* lib = dlopen(ALLOCLAB_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  auto backtrace_fn = reinterpret_cast<BacktraceFn>(dlsym(lib, "unw_backtrace"));
  if (!backtrace_fn) {
    dlclose(lib);
    return;
  }
  // The names behind libunwind.h's macros (_ULx86_64_... on x86-64).
  auto set_policy = reinterpret_cast<decltype(&unw_set_caching_policy)>(
      dlsym(lib, ALLOCLAB_SYMBOL_NAME(unw_set_caching_policy)));
  auto* local_space =
      static_cast<unw_addr_space_t*>(dlsym(lib, ALLOCLAB_SYMBOL_NAME(unw_local_addr_space)));
  // A per-thread DWARF cache needs no lock; a libunwind built without one keeps its global
  // cache, whose lock blocks signals while held. Both are safe in a signal handler. (The fast
  // path, unw_backtrace's per-thread cache of frame layouts by return address, is used either way.)
  if (set_policy && local_space) set_policy(*local_space, UNW_CACHE_PER_THREAD);
  g_unw_backtrace = backtrace_fn;
  g_unwinder = code_range_of(reinterpret_cast<const void*>(backtrace_fn));
}
#endif

}  // namespace

void stacks_configure(const char* depth_text) {
  if (!depth_text) return;
  int depth = 0;
  for (const char* p = depth_text; *p >= '0' && *p <= '9' && depth <= max_stack_depth; ++p)
    depth = depth * 10 + (*p - '0');
  g_stack_depth = depth > max_stack_depth ? max_stack_depth : depth;
}

void stacks_warm_up() {
  if (g_stack_depth == 0) return;
#ifdef ALLOCLAB_LIBUNWIND
  // ALLOCLAB_UNWINDER=backtrace: glibc's, in a build that has libunwind (to compare them).
  const char* wanted = env_value(protocol::env_unwinder);
  if (!wanted || std::strcmp(wanted, "backtrace") != 0) load_libunwind();
#endif
  // The first unwind does the unwinder's lazy work now, not inside a traced malloc: backtrace()
  // loads libgcc_s; unw_backtrace sets up libunwind and this thread's trace cache (and its
  // thread-local storage, which a dlopened library gets on first use).
  void* first[max_stack_depth];
  if (g_unw_backtrace)
    g_unw_backtrace(first, max_stack_depth);
  else
    backtrace(first, max_stack_depth);
  t_unwound = 1;
  g_self = code_range_of(reinterpret_cast<const void*>(&capture_stack));
  g_stacks_ready.store(true, std::memory_order_release);
}

CodeRange code_range_of(const void* address) {
  CodeRange range;
  RangeQuery query{reinterpret_cast<std::uintptr_t>(address), &range};
  dl_iterate_phdr(find_range, &query);
  return range;
}

const char* stacks_unwinder() {
  return g_unw_backtrace ? "libunwind" : "backtrace";
}

int capture_stack(std::uint64_t* frames) {
  if (!g_stacks_ready.load(std::memory_order_acquire)) return 0;
  if (t_unwinding) return 0;  // an allocation by the unwind below (its first on this thread)
  // The tracer's own frames (the hook, the recorder) come first; a few spare slots cover them.
  constexpr int spare = 8;
  void* raw[max_stack_depth + spare];
  // The unwinder may allocate (rarely, e.g. on a new object): pass that through unrecorded.
  // libunwind's first unwind on a thread also has glibc malloc its thread-local storage (it is a
  // dlopened library), which glibc frees through free() when the thread is joined: that block is
  // the tracer's, so its address is kept (collect_unwinder_blocks) and its free is not recorded
  // either. That first unwind is the one that is not async-signal-safe: a thread whose first
  // stack is taken in a signal handler that interrupted malloc would enter malloc again
  // (threads unwind on their first allocation, so that handler would have to interrupt the
  // thread's first one).
  const bool first_unwind = g_unw_backtrace && !t_unwound;
  t_unwinding = 1;
  ++t_guard;
  t_collect_unwinder_blocks = first_unwind;
  const int got = g_unw_backtrace ? g_unw_backtrace(raw, g_stack_depth + spare)
                                  : backtrace(raw, g_stack_depth + spare);
  t_collect_unwinder_blocks = false;
  --t_guard;
  t_unwinding = 0;
  t_unwound = 1;
  int first = 0;
  while (first < got && is_own_frame(reinterpret_cast<std::uintptr_t>(raw[first]))) ++first;
  int n = 0;
  for (int i = first; i < got && n < g_stack_depth; ++i)
    frames[n++] = reinterpret_cast<std::uintptr_t>(raw[i]);
  return n;
}

void note_unwinder_block(void* p, std::size_t size) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  for (std::atomic<std::uintptr_t>& slot : unwinder_bucket(address).blocks) {
    std::uintptr_t empty = 0;
    if (slot.compare_exchange_strong(empty, address)) {
      g_unwinder_blocks_outstanding.fetch_add(1);
      return;
    }
  }
  record_event(op_alloc, kind_host, address, size, 0);
}

bool unwinder_blocks_outstanding() {
  return g_unwinder_blocks_outstanding.load(std::memory_order_relaxed) != 0;
}

bool forget_unwinder_block(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  for (std::atomic<std::uintptr_t>& slot : unwinder_bucket(address).blocks) {
    std::uintptr_t held = address;
    if (slot.load(std::memory_order_relaxed) == address && slot.compare_exchange_strong(held, 0)) {
      g_unwinder_blocks_outstanding.fetch_sub(1);
      return true;
    }
  }
  return false;
}

}  // namespace alloclab::preload
