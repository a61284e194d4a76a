// The preload tracer's life cycle in the traced program: initialisation, the start of the
// writer process, the flushes the program must wait for (exit, exec, fatal signals), fork
// children, the end of the trace, and the marker entry points. What is written and how is the
// writer's (tracer/writer); this side only records into the shared buffers and tells the
// writer when to look.
#include "life_cycle.hpp"
#include "alloclab/protocol/environment.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clock.hpp"
#include "export.hpp"
#include "mappings.hpp"
#include "processes.hpp"
#include "recorder.hpp"
#include "stacks.hpp"
#include "writer_link.hpp"

namespace alloclab::preload {
namespace {

// What descriptor 2 was when tracing started (say()).
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool open = false;
};
FileIdentity g_stderr;

FileIdentity identity_of_stderr() {
  struct stat st {};
  if (::fstat(2, &st) != 0) return {};
  return {st.st_dev, st.st_ino, true};
}

std::uint64_t parse_u64(const char* text) {
  if (!text || !*text) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  return *end == '\0' ? v : 0;
}

constexpr int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

void on_fatal_signal(int sig, siginfo_t*, void*) {
  const int saved_errno = errno;
  ++t_guard;
  if (g.pid == getpid()) request_flush_and_wait();
  --t_guard;
  errno = saved_errno;
  // SA_RESETHAND restored the default action: re-raise so the process dies as it would have.
  raise(sig);
}

void install_fatal_handlers() {
  for (int sig : fatal_signals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // keep theirs
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

void at_exit_flush() {
  if (g.pid != getpid()) return;
  request_flush_and_wait();
}

// At the end, when some events could not be recorded (no buffer could be had): the trace says
// how many, in a marker the writer's last flush takes.
void record_dropped_marker() {
  if (const std::uint64_t dropped = g.dropped.load()) {
    char label[label_bytes];
    std::snprintf(label, sizeof label, "%.*s%llu",
                  static_cast<int>(protocol::dropped_marker.size()),
                  protocol::dropped_marker.data(), static_cast<unsigned long long>(dropped));
    record_marker(op_mark, label);
  }
}

void disable_tracing() {
  g.state.store(static_cast<int>(State::disabled));
}

// fork: the child has only the forking thread, and every buffer holds the parent's events,
// which the parent's writer writes. The shared memory is the parent's too: the child takes a
// private copy of the globals and lets go of the rest (the writer never sees the child's
// events there). Without --follow-fork the child is not traced; with it, it starts afresh with
// shared memory and a writer of its own. The parent is not held up at all: no lock is taken
// across fork.
void fork_child() {
  const bool was_tracing = writer_running() && g.pid == getppid();
  leave_shared_memory();
  forget_writer();
  if (!was_tracing || !follow_fork()) {
    disable_tracing();
    if (was_tracing) list_untraced_fork(getpid());
    return;
  }
  GuardScope guard;
  forget_thread_buffer();
  g.new_buffers.store(0);
  g.full_buffers.store(0);
  g.dropped.store(0);
  g.final_flush_done.store(false);
  g.pid = getpid();
  g_shared.settings.image = Image::forked;
  g_shared.settings.parent_pid = getppid();
  g_stderr = identity_of_stderr();
  if (!make_shared_memory() || !start_writer()) disable_tracing();
}

// Runs once the C runtime is fully up (library constructor): the writer, then the hooks that
// need the runtime.
void start_tracing() {
  GuardScope guard;
  g_stderr = identity_of_stderr();
  stacks_warm_up();  // first: the writer's metadata names the unwinder it picks
  if (g_stack_depth)
    std::snprintf(g_shared.settings.unwinder, sizeof g_shared.settings.unwinder, "%s",
                  stacks_unwinder());
  if (!start_writer()) {
    disable_tracing();
    return;
  }
  init_thread_key();
  init_mappings();
  pthread_atfork(nullptr, nullptr, fork_child);
  install_fatal_handlers();
  std::atexit(at_exit_flush);
  // quick_exit runs neither atexit handlers nor destructors, and ends with glibc's own _exit,
  // which is not interposed: registered first, this runs after the program's handlers.
  at_quick_exit(flush_before_image_ends);
}

}  // namespace

void say(const char* text) {
  const FileIdentity now = identity_of_stderr();
  if (!now.open || !g_stderr.open || now.device != g_stderr.device || now.inode != g_stderr.inode)
    return;
  const ssize_t ignored = ::write(2, text, std::strlen(text));
  (void)ignored;
}

void initialize() {
  int expected = static_cast<int>(State::uninitialized);
  if (!g.state.compare_exchange_strong(expected, static_cast<int>(State::initializing))) return;
  GuardScope guard;
  resolve_real_functions();
  resolve_exec_functions();
  g.pid = getpid();
  g.min_size = parse_u64(env_value(protocol::env_min_size));
  RecorderSettings& settings = g_shared.settings;
  if (const std::uint64_t period_ms = parse_u64(env_value(protocol::env_flush_period_ms)))
    settings.flush_period_ms = period_ms;
  clock_init(env_value(protocol::env_time_resolution), settings);
  stacks_configure(env_value(protocol::env_stacks));
  settings.stack_depth = g_stack_depth;
  const ImageDecision decision = decide_image(g.pid);
  settings.image = decision.image;
  settings.parent_pid = getppid();
  // Secure execution (setuid, setgid, capabilities): a tracer has no business there.
  bool traced = decision.traced && getauxval(AT_SECURE) == 0;
  if (decision.image == Image::execed && !decision.traced) list_untraced_exec(g.pid);
  // Before anything is recorded: the buffers must be in memory the writer can see.
  if (traced && !make_shared_memory()) {
    say("alloclab: cannot make memory to share with the trace writer: not tracing\n");
    traced = false;
  }
  g.state.store(static_cast<int>(traced ? State::enabled : State::disabled),
                std::memory_order_release);
}

void flush_before_image_ends() {
  if (g.pid != getpid()) return;  // a vfork child: the parent's tracer is not ours to drive
  const int saved_errno = errno;
  request_flush_and_wait();
  errno = saved_errno;
}

}  // namespace alloclab::preload

using namespace alloclab::preload;

__attribute__((constructor)) static void alloclab_preload_constructor() {
  initialize();
  if (g_shared.settings.image == Image::root && env_value(alloclab::protocol::env_output)) {
    GuardScope guard;
    mark_first_image_started(getpid());
  }
  if (g.state.load() == static_cast<int>(State::enabled)) {
    start_tracing();
  }
}

__attribute__((destructor(101))) static void alloclab_preload_destructor() {
  if (g.pid != getpid() || !writer_running()) return;
  ++t_guard;
  record_dropped_marker();  // before the writer's last flush, which then takes it
  stop_writer();
  --t_guard;
}

// `alloclab run --record` preloads its strategy's library after this one, and that library
// takes the markers too: each marker is passed on to it. Looked up only then: a dlsym that finds
// nothing allocates an error string, freed later where the program's frees are recorded.
namespace {
template <typename Fn>
Fn next_marker(std::atomic<void*>& cache, const char* name) {
  void* fn = cache.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<void*>(1);
    if (std::getenv(alloclab::protocol::env_live_spec) != nullptr) {
      GuardScope guard;
      if (void* next = dlsym(RTLD_NEXT, name)) fn = next;
    }
    cache.store(fn, std::memory_order_release);
  }
  return fn == reinterpret_cast<void*>(1) ? nullptr : reinterpret_cast<Fn>(fn);
}
std::atomic<void*> g_next_run_begin{nullptr};
std::atomic<void*> g_next_run_end{nullptr};
}  // namespace

ALLOCLAB_EXPORT void alloclab_preload_run_begin(const char* label) {
  if (tracing()) record_marker(op_run_begin, label);
  if (auto next =
          next_marker<void (*)(const char*)>(g_next_run_begin, "alloclab_preload_run_begin"))
    next(label);
}
ALLOCLAB_EXPORT void alloclab_preload_run_end(void) {
  if (tracing()) record_marker(op_run_end, nullptr);
  if (auto next = next_marker<void (*)()>(g_next_run_end, "alloclab_preload_run_end")) next();
}
ALLOCLAB_EXPORT void alloclab_preload_mark(const char* label) {
  if (tracing()) record_marker(op_mark, label);
}
// The CUDA tracer (liballoclab_cuda.so, `record --cuda --cpu`) hides its own allocations from
// this one: +1 before its work on a thread, -1 after.
ALLOCLAB_EXPORT void alloclab_preload_guard(int delta) {
  t_guard += delta;
}
