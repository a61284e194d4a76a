#include "fatal_signal.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>

namespace alloclab::cuda {
namespace {

constexpr int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
constexpr std::size_t signal_count = std::size(fatal_signals);

// The preload tracer's bound on its own wait, and ours: a writer stuck behind a lock that the
// interrupted thread holds (malloc's, the sink's queue) must not keep a dying process alive.
constexpr std::chrono::milliseconds max_wait(3000);

std::atomic<EventSink*> g_sink{nullptr};
std::atomic<int> g_pid{0};

// The preload tracer's handler for each signal, when ours took its place. Written before ours
// is installed (sigaction orders it before any run of ours), read-only afterwards.
struct sigaction g_chained[signal_count];
bool g_has_chained[signal_count] = {};

void say(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

std::size_t index_of(int sig) {
  for (std::size_t i = 0; i < signal_count; ++i)
    if (fatal_signals[i] == sig) return i;
  return signal_count;
}

// Only atomics, write, nanosleep, getpid, raise and the chained handler (itself written for
// this place): the interrupted thread may hold any lock, malloc's and the sink's included.
void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  EventSink* sink = g_sink.load();
  // The request first and the wait last: the writer works while the chained handler waits for
  // the preload tracer's writer, so both traces are written within one bounded wait.
  const std::uint64_t ticket = sink && g_pid.load() == ::getpid() ? sink->request_write() : 0;
  const std::size_t i = index_of(sig);
  if (i < signal_count && g_has_chained[i]) {
    const struct sigaction& before = g_chained[i];
    if (before.sa_flags & SA_SIGINFO)
      before.sa_sigaction(sig, info, context);
    else
      before.sa_handler(sig);
  }
  if (ticket != 0 && !sink->wait_written(ticket, max_wait))
    say("alloclab: the CUDA trace's writer did not write in time\n");
  errno = saved_errno;
  // SA_RESETHAND restored the default action: re-raised (pending until this handler returns),
  // the signal kills the process as it would have.
  ::raise(sig);
}

void* handler_address(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(action.sa_sigaction)
                                        : reinterpret_cast<void*>(action.sa_handler);
}

bool in_same_object(const void* a, const void* b) {
  if (!a || !b) return false;
  Dl_info info_a{}, info_b{};
  return dladdr(a, &info_a) != 0 && dladdr(b, &info_b) != 0 && info_a.dli_fbase != nullptr &&
         info_a.dli_fbase == info_b.dli_fbase;
}

}  // namespace

// Both tracers install only over SIG_DFL, and the preload tracer always installs first (its
// constructor runs at program start, the CUDA driver loads this library at cuInit). So under
// `record --cuda --cpu` ours would find the preload tracer's handler and, by that rule alone,
// leave the CUDA trace unwritten. Installing ours next to theirs is impossible (one handler
// per signal), and the preload tracer cannot call ours (it does not know about us). So ours
// takes its place and calls it: one handler that has both writers write, then re-raises.
// Their handler is recognised by the object it lives in (dladdr), the one exporting
// alloclab_preload_guard; any other handler is the program's and stays.
void install_fatal_flush(EventSink* sink, const void* chain_object) {
  g_pid.store(::getpid());
  g_sink.store(sink);
  for (std::size_t i = 0; i < signal_count; ++i) {
    const int sig = fatal_signals[i];
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    const bool ours = (old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_fatal_signal;
    if (ours) continue;  // installed already
    const bool preload_tracer = old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN &&
                                in_same_object(handler_address(old), chain_object);
    if (old.sa_handler != SIG_DFL && !preload_tracer) continue;  // the program's: keep it
    g_chained[i] = old;
    g_has_chained[i] = preload_tracer;
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

void clear_fatal_flush() {
  g_sink.store(nullptr);
}

}  // namespace alloclab::cuda
