// The program's side of its writer process. The writer is a program of its own
// (alloclab-writer), started with exec, so that nothing it needs (the C++ runtime, the
// compressor, the symbol reader) is loaded into the traced program, and a process rather than a
// thread of the program: a second thread turns on glibc's arena locks in the program for good,
// and each lock then waits for the program's pending stores, which the writer's memory traffic
// on the other core slows (docs/recording.md has the measurements).
//
// It is the program's grandchild, through a middle process that exits at once: the program's
// wait() never sees it, and `record` (a child subreaper) or init reaps it. Both forks are raw
// system calls after which only system calls run until exec, so this is safe in a program with
// threads and needs none of the C library's fork bookkeeping.
#include "writer_link.hpp"
#include "alloclab/protocol/environment.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernel_call.hpp"
#include "life_cycle.hpp"
#include "processes.hpp"
#include "recorder.hpp"

namespace alloclab::preload {
namespace {

WriterControl& control() {
  return g_shared.writer;
}

// Returns at once when `word` no longer holds `seen`, else within `ms` or when woken. Not
// private futexes: the words are in memory shared with the writer process.
void nap_on(std::atomic<std::uint32_t>& word, std::uint32_t seen, long ms) {
  const timespec timeout{ms / 1000, (ms % 1000) * 1'000'000};
  kernel_call(SYS_futex, &word, FUTEX_WAIT, seen, &timeout);
}

// Waits until the writer leaves `from`, at most `ms` milliseconds; returns its state.
std::uint32_t wait_for_state(std::uint32_t from, long ms) {
  std::atomic<std::uint32_t>& state = control().state;
  for (long waited = 0; state.load() == from && waited < ms; waited += 10) nap_on(state, from, 10);
  return state.load();
}

// A process's state letter, from /proc/PID/stat; false when there is no such process. Allocates
// nothing: it also runs while a thread waits for room.
bool process_state(int pid, char& state) {
  char path[32] = "/proc/";
  char digits[16];
  std::size_t count = 0;
  for (unsigned value = static_cast<unsigned>(pid); count == 0 || value != 0; value /= 10)
    digits[count++] = static_cast<char>('0' + value % 10);
  std::size_t n = 6;
  while (count > 0) path[n++] = digits[--count];
  std::memcpy(path + n, "/stat", 6);
  char text[512];
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return false;
  text[got] = '\0';
  // "pid (comm) state ...", where comm may hold spaces and parentheses.
  const char* p = std::strrchr(text, ')');
  if (!p || p[1] != ' ') return false;
  state = p[2];
  return true;
}

// Whether process `pid` has ended: gone, or a zombie (`record` reaps a writer only after the
// program).
bool process_has_ended(int pid) {
  char state = 0;
  return pid <= 0 || !process_state(pid, state) || state == 'Z' || state == 'X';
}

std::atomic<bool> g_writer_lost{false};

// The program's side once its writer is gone: nothing would empty the buffers any more.
void stop_tracing_without_writer() {
  if (g_writer_lost.exchange(true)) return;
  g.state.store(static_cast<int>(State::disabled));
  g.final_flush_done.store(true);  // threads waiting for room stop waiting
  control().running.store(false);
  say("alloclab: the writer process ended before the program: tracing stopped; the trace holds "
      "what it had written\n");
}

// The writer program: ALLOCLAB_WRITER_PROGRAM, or alloclab-writer next to this library.
char g_writer_program[PATH_MAX];

bool find_writer_program() {
  if (const char* chosen = env_value(protocol::env_writer_program); chosen && *chosen) {
    std::snprintf(g_writer_program, sizeof g_writer_program, "%s", chosen);
    return true;
  }
  Dl_info self{};
  if (dladdr(reinterpret_cast<const void*>(&find_writer_program), &self) == 0 || !self.dli_fname)
    return false;
  const char* slash = std::strrchr(self.dli_fname, '/');
  const int folder = slash ? static_cast<int>(slash - self.dli_fname) : 1;
  const char* base = slash ? self.dli_fname : ".";
  return std::snprintf(g_writer_program, sizeof g_writer_program, "%.*s/alloclab-writer", folder,
                       base) < static_cast<int>(sizeof g_writer_program);
}

// In the writer-to-be, between fork and exec: only system calls. Standard input and output
// become /dev/null (a pipe the program writes to must not stay open in the writer), standard
// error stays (the writer's messages), and nothing else of the program's is inherited.
[[noreturn]] void become_writer(char* const argv[]) {
  const long null = kernel_call(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
  if (null >= 0) {
    kernel_call(SYS_dup2, null, 0);
    kernel_call(SYS_dup2, null, 1);
  }
  kernel_call(SYS_close_range, 3, ~0u, 0);
  char* const no_environment[] = {nullptr};
  kernel_call(SYS_execve, g_writer_program, argv, no_environment);
  control().exec_errno.store(errno);
  control().state.store(writer_failed);
  kernel_call(SYS_futex, &control().state, FUTEX_WAKE, INT_MAX);
  for (;;) kernel_call(SYS_exit_group, 127);
}

long raw_fork() {
  return kernel_call(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

// Forks the writer through a middle process; the middle's SIGCHLD is taken off again unless one
// was pending already. False when a fork failed.
bool spawn_writer(char* const argv[]) {
  sigset_t child_signal, old, pending;
  sigemptyset(&child_signal);
  sigaddset(&child_signal, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &child_signal, &old);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGCHLD) == 1;
  const long middle = raw_fork();
  if (middle == 0) {
    const long writer = raw_fork();
    if (writer == 0) become_writer(argv);
    for (;;) kernel_call(SYS_exit_group, writer > 0 ? 0 : 1);
  }
  int status = 0;
  if (middle > 0) {
    pid_t waited;
    do waited = waitpid(static_cast<pid_t>(middle), &status, __WALL);
    while (waited < 0 && errno == EINTR);
    if (waited < 0) status = 0;  // SIGCHLD ignored: reaped by the kernel; the handshake tells
  }
  if (middle > 0 && !was_pending) {
    const timespec now{};
    sigtimedwait(&child_signal, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return middle > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void wake_all(std::atomic<std::uint32_t>& word) {
  word.fetch_add(1);
  kernel_call(SYS_futex, &word, FUTEX_WAKE, INT_MAX);
}

}  // namespace

bool start_writer() {
  const SharedMemoryIds ids = shared_memory_ids();
  if (ids.shared < 0) return false;
  if (!find_writer_program()) {
    say("alloclab: cannot tell where the trace writer is (alloclab-writer): not tracing\n");
    return false;
  }
  char memory_flag[] = "--memory";
  char memory[32];
  std::snprintf(memory, sizeof memory, "%d:%d", ids.shared, ids.pool);
  char output_flag[] = "--output";
  char list_flag[] = "--file-list";
  char* argv[] = {g_writer_program,
                  memory_flag,
                  memory,
                  output_flag,
                  const_cast<char*>(env_value(protocol::env_output)),
                  list_flag,
                  const_cast<char*>(env_value(protocol::env_file_list)),
                  nullptr};
  if (!argv[4]) return false;
  if (!argv[6]) argv[5] = nullptr;
  control().state.store(writer_starting);
  if (!spawn_writer(argv)) {
    say("alloclab: cannot start the trace writer process: not tracing\n");
    return false;
  }
  // The writer has created the trace when it is ready; it says itself why it could not.
  const std::uint32_t state = wait_for_state(writer_starting, 10'000);
  if (state == writer_ready) {
    control().running.store(true);
    return true;
  }
  if (state == writer_starting) {
    control().stop.store(true);  // should it get ready after all, it stops at once
    say("alloclab: the trace writer did not start within 10 s: not tracing\n");
  } else if (const int error = control().exec_errno.load()) {
    char text[PATH_MAX + 128];
    std::snprintf(text, sizeof text, "alloclab: cannot run the trace writer %s: %s: not tracing\n",
                  g_writer_program, std::strerror(error));
    say(text);
  }
  return false;
}

void stop_writer() {
  if (!control().running.load()) return;
  control().stop.store(true);
  wake_writer();
  // At most a minute (a writer far behind encodes ~30M events a second); sooner when it died.
  for (int waited = 0; waited < 60000; waited += 10) {
    if (wait_for_state(writer_ready, 10) == writer_finished) break;
    if (process_has_ended(control().pid.load())) {
      if (control().state.load() != writer_finished) stop_tracing_without_writer();
      break;
    }
  }
  control().running.store(false);
}

bool writer_running() {
  return control().running.load();
}

void forget_writer() {
  WriterControl& writer = control();
  writer.running.store(false);
  writer.stop.store(false);
  writer.flush_requests.store(0);
  writer.flush_done.store(0);
  writer.state.store(writer_starting);
  writer.pid.store(0);
  writer.exec_errno.store(0);
  g_writer_lost.store(false);
}

bool request_flush_soon() {
  if (!control().running.load()) return false;
  control().flush_requests.fetch_add(1);
  wake_writer();
  return true;
}

void request_flush_and_wait() {
  WriterControl& writer = control();
  if (!writer.running.load()) return;
  const std::uint64_t ticket = writer.flush_requests.fetch_add(1) + 1;
  wake_writer();
  for (int i = 0; i < 3000 && writer.running.load(); ++i) {
    const std::uint32_t seen = writer.flushes.load();
    if (writer.flush_done.load() >= ticket) break;
    if (i % 100 == 99 && writer_was_lost()) return;
    nap_on(writer.flushes, seen, 1);
  }
  if (writer.flush_done.load() < ticket && writer.running.load())
    say("alloclab: the writer did not flush in time\n");
}

void wake_writer() {
  wake_all(control().wake);
}

bool writer_was_lost() {
  if (!control().running.load()) return false;
  if (!process_has_ended(control().pid.load())) return false;
  stop_tracing_without_writer();
  return true;
}

}  // namespace alloclab::preload
