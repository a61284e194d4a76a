#include "stacks.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "lifecycle.hpp"
#include "recorder.hpp"

#ifdef ALLOCLAB_LIBUNWIND
#define UNW_LOCAL_ONLY  // the _UL (local-only) entry points: those of libunwind.so, not -generic
#include <libunwind.h>
#endif

namespace alloclab::preload {

int g_stack_depth = 0;

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

std::string demangled(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !text) return name;
  std::string result = text;
  std::free(text);
  return result;
}

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
  const char* wanted = env_value("ALLOCLAB_UNWINDER");
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

std::size_t buffer_bytes() {
  return sizeof(Buffer) + static_cast<std::size_t>(buffer_records) *
                              static_cast<std::size_t>(g_stack_depth) * sizeof(std::uint64_t);
}

std::uint64_t* frame_slots(Buffer* b, std::uint32_t slot) {
  return reinterpret_cast<std::uint64_t*>(b + 1) +
         static_cast<std::size_t>(slot) * static_cast<std::size_t>(g_stack_depth);
}

int capture_stack(std::uint64_t* frames) {
  if (!g_stacks_ready.load(std::memory_order_acquire)) return 0;
  if (t_unwinding) return 0;  // an allocation by the unwind below (its first on this thread)
  // The tracer's own frames (the hook, the recorder) come first; a few spare slots cover them.
  constexpr int spare = 8;
  void* raw[max_stack_depth + spare];
  // The unwinder may allocate (rarely, e.g. on a new object): pass that through unrecorded.
  // Except libunwind's first unwind on a thread: a dlopened library's thread-local storage is
  // malloc'ed then, and glibc frees it (recorded) when the thread is joined, so that block is
  // recorded too (without a stack) to keep the trace paired. That first unwind is the one that
  // is not async-signal-safe: a thread whose first stack is taken in a signal handler that
  // interrupted malloc would enter malloc again (threads unwind on their first allocation, so
  // that handler would have to interrupt the thread's first one).
  const bool guarded = !g_unw_backtrace || t_unwound;
  t_unwinding = 1;
  t_guard += guarded;
  const int got = g_unw_backtrace ? g_unw_backtrace(raw, g_stack_depth + spare)
                                  : backtrace(raw, g_stack_depth + spare);
  t_guard -= guarded;
  t_unwinding = 0;
  t_unwound = 1;
  int first = 0;
  while (first < got && is_own_frame(reinterpret_cast<std::uintptr_t>(raw[first]))) ++first;
  int n = 0;
  for (int i = first; i < got && n < g_stack_depth; ++i)
    frames[n++] = reinterpret_cast<std::uintptr_t>(raw[i]);
  return n;
}

std::size_t StackInterner::KeyHash::operator()(
    const std::vector<std::uint64_t>& key) const noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ key.size();
  for (std::uint64_t v : key) h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
  return static_cast<std::size_t>(h ^ (h >> 31));
}

std::uint32_t StackInterner::frame_index(std::uint64_t address, Trace& trace) {
  auto it = frames_.find(address);
  if (it != frames_.end()) return it->second;
  StackFrame frame;
  frame.address = address;
  Dl_info info{};
  // A return address points just past its call: look up the call itself, which is inside
  // the calling function even when the call is the function's last instruction.
  if (dladdr(reinterpret_cast<void*>(address - 1), &info) != 0) {
    if (info.dli_sname) frame.function = demangled(info.dli_sname);
    if (info.dli_fname) frame.module = info.dli_fname;
  }
  const std::uint32_t index = trace.add_frame(std::move(frame));
  frames_.emplace(address, index);
  return index;
}

std::uint32_t StackInterner::intern(const std::uint64_t* frames, int depth, Trace& trace) {
  if (depth <= 0) return 0;
  key_.assign(frames, frames + depth);
  auto it = stacks_.find(key_);
  if (it != stacks_.end()) return it->second;
  std::vector<std::uint32_t> indices;
  indices.reserve(key_.size());
  for (std::uint64_t address : key_) indices.push_back(frame_index(address, trace));
  const std::uint32_t id = trace.add_stack(std::move(indices));
  stacks_.emplace(key_, id);
  return id;
}

}  // namespace alloclab::preload
