// Following fork and exec: which image is traced, the lines of the list of files for
// `alloclab record` that an image left untraced writes, and the hooks that flush the current
// image before exec replaces it or _exit ends it (neither runs a destructor or an atexit handler:
// without them the last ~100 ms would be lost).
#include "processes.hpp"
#include "alloclab/protocol/environment.hpp"

#include <alloca.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "export.hpp"
#include "kernel_call.hpp"
#include "life_cycle.hpp"

namespace alloclab::preload {
namespace {

std::uint64_t env_u64(const char* name) {
  const char* text = env_value(name);
  if (!text || !*text) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  return *end == '\0' ? v : 0;
}

bool env_flag(const char* name) {
  const char* text = env_value(name);
  return text && text[0] == '1' && text[1] == '\0';
}

void append_to_list(std::string_view line) {
  const char* list = env_value(protocol::env_file_list);
  if (!list || !*list) return;
  // Never created here: only the list `record` made (and still keeps) is written to.
  const int fd = ::open(list, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  FileSizeSignalBlock block;
  const ssize_t ignored = ::write(fd, line.data(), line.size());  // one write: one whole line
  (void)ignored;
  ::close(fd);
}

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvpeFn = int (*)(const char*, char* const[], char* const[]);
using ExecvFn = int (*)(const char*, char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);
using ExecveatFn = int (*)(int, const char*, char* const[], char* const[], int);
ExecveFn real_execve;
ExecvpeFn real_execvpe;
ExecvFn real_execv;
ExecvFn real_execvp;
FexecveFn real_fexecve;
ExecveatFn real_execveat;  // glibc 2.34 and later
using ExitFn = void (*)(int);
ExitFn real_exit_now;  // _exit
ExitFn real_Exit;      // _Exit

}  // namespace

const char* env_value(const char* name) {
  const std::string_view wanted(name);
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    if (text.size() > wanted.size() && text.starts_with(wanted) && text[wanted.size()] == '=')
      return *entry + wanted.size() + 1;
  }
  return nullptr;
}

ImageDecision decide_image(int pid) {
  const char* output = env_value(protocol::env_output);
  const std::uint64_t started = env_u64(protocol::env_started_pid);
  const std::uint64_t owner = env_u64(protocol::env_trace_pid);
  const bool first = started == 0 && (owner == 0 || owner == static_cast<std::uint64_t>(pid));
  const Image image = first ? Image::root : Image::execed;
  const bool wanted = output && *output && (first || env_flag(protocol::env_follow_exec));
  return ImageDecision{image, wanted};
}

bool follow_fork() {
  return env_flag(protocol::env_follow_fork);
}

void mark_first_image_started(int pid) {
  const std::string_view name = protocol::env_started_pid;
  // The tracer's own string: it lives as long as the library, and no allocation is needed.
  static char entry[sizeof protocol::env_started_pid + 24];
  std::snprintf(entry, sizeof entry, "%s=%d", protocol::env_started_pid, pid);
  for (char** slot = environ; slot && *slot; ++slot)
    if (std::string_view(*slot).starts_with(name) && (*slot)[name.size()] == '=') {
      *slot = entry;
      return;
    }
  // Not seeded (LD_PRELOAD set by hand): libc's setenv, not one the program may define.
  using SetenvFn = int (*)(const char*, const char*, int);
  if (const auto libc_setenv = reinterpret_cast<SetenvFn>(dlsym(RTLD_NEXT, "setenv")))
    libc_setenv(protocol::env_started_pid, entry + name.size() + 1, 1);
}

namespace {

// A line built without allocating: the untraced-image lines are written in a fork child (maybe
// forked from a signal handler) and before the C runtime of an exec'd image is up.
class ListLine {
 public:
  ListLine& add(std::string_view text) {
    for (const char c : text)
      if (size_ < sizeof data_ - 1) data_[size_++] = c == '\n' ? ' ' : c;
    return *this;
  }
  ListLine& add(unsigned long number) {
    char digits[24];
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + number % 10);
      number /= 10;
    } while (number != 0);
    while (n > 0) add(std::string_view(&digits[--n], 1));
    return *this;
  }
  std::string_view finish() {
    data_[size_++] = '\n';
    return {data_, size_};
  }

 private:
  char data_[PATH_MAX + 64];
  std::size_t size_ = 0;
};

}  // namespace

void list_untraced_exec(int pid) {
  char exe[PATH_MAX];
  const ssize_t length = ::readlink("/proc/self/exe", exe, sizeof exe);
  ListLine line;
  line.add(protocol::list_untraced_exec).add(static_cast<unsigned long>(pid)).add(" ");
  line.add(length > 0 ? std::string_view(exe, static_cast<std::size_t>(length)) : "?");
  append_to_list(line.finish());
}

void list_untraced_fork(int pid) {
  ListLine line;
  append_to_list(
      line.add(protocol::list_untraced_fork).add(static_cast<unsigned long>(pid)).finish());
}

void resolve_exec_functions() {
  real_execve = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execve"));
  real_execvpe = reinterpret_cast<ExecvpeFn>(dlsym(RTLD_NEXT, "execvpe"));
  real_execv = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execv"));
  real_execvp = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execvp"));
  real_fexecve = reinterpret_cast<FexecveFn>(dlsym(RTLD_NEXT, "fexecve"));
  real_execveat = reinterpret_cast<ExecveatFn>(dlsym(RTLD_NEXT, "execveat"));
  real_exit_now = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  real_Exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
}

FileSizeSignalBlock::FileSizeSignalBlock() {
  sigset_t xfsz;
  sigemptyset(&xfsz);
  sigaddset(&xfsz, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &xfsz, &old_);
  sigset_t pending;
  was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1;
}

FileSizeSignalBlock::~FileSizeSignalBlock() {
  sigset_t pending;
  if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1) {
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    const timespec now{0, 0};
    const int saved_errno = errno;
    sigtimedwait(&xfsz, nullptr, &now);
    errno = saved_errno;
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace alloclab::preload

using namespace alloclab::preload;

namespace {

int no_function() {
  errno = ENOSYS;
  return -1;
}

// execl, execle and execlp: their arguments as an argv array on the stack (no malloc: exec may
// be called where malloc is not safe, after fork in a threaded program say).
#define ALLOCLAB_COLLECT_ARGS(first, argv, after)                         \
  std::size_t count = 1;                                                  \
  {                                                                       \
    va_list probe;                                                        \
    va_start(probe, first);                                               \
    while (va_arg(probe, char*)) ++count;                                 \
    va_end(probe);                                                        \
  }                                                                       \
  char** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*))); \
  va_list args;                                                           \
  va_start(args, first);                                                  \
  argv[0] = const_cast<char*>(first);                                     \
  for (std::size_t i = 1; i <= count; ++i) argv[i] = va_arg(args, char*); \
  after;                                                                  \
  va_end(args)

// _exit and _Exit end the process at once: no atexit handler, no destructor (Python's os._exit,
// the usual end of a forked child, multiprocessing's workers).
[[noreturn]] void exit_now(ExitFn real, int status) {
  flush_before_image_ends();
  if (real) real(status);
  for (;;) kernel_call(SYS_exit_group, status);
}

}  // namespace

ALLOCLAB_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  flush_before_image_ends();
  return real_execve ? real_execve(path, argv, envp) : no_function();
}

ALLOCLAB_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  flush_before_image_ends();
  return real_execvpe ? real_execvpe(file, argv, envp) : no_function();
}

ALLOCLAB_EXPORT int execv(const char* path, char* const argv[]) {
  flush_before_image_ends();
  return real_execv ? real_execv(path, argv) : no_function();
}

ALLOCLAB_EXPORT int execvp(const char* file, char* const argv[]) {
  flush_before_image_ends();
  return real_execvp ? real_execvp(file, argv) : no_function();
}

ALLOCLAB_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  flush_before_image_ends();
  return real_fexecve ? real_fexecve(fd, argv, envp) : no_function();
}

ALLOCLAB_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                             int flags) {
  flush_before_image_ends();
  return real_execveat ? real_execveat(dirfd, path, argv, envp, flags) : no_function();
}

#if defined(__x86_64__)
// syscall(SYS_execve, ...) and syscall(SYS_execveat, ...), which some runtimes and sandboxes use,
// replace the image as the functions above do, and syscall(SYS_exit_group, ...) ends it as
// _exit does, so they flush first too. Like glibc's syscall(),
// this passes six arguments on whatever the caller gave: those it did not give are whatever
// their registers and stack slots hold, and the kernel ignores them. (Not instrumented: that
// read of the caller's stack is deliberate.)
ALLOCLAB_EXPORT __attribute__((no_sanitize("address"))) long syscall(long number, ...) {
  va_list args;
  va_start(args, number);
  long a[6];
  for (long& value : a) value = va_arg(args, long);
  va_end(args);
  if (number == SYS_execve || number == SYS_execveat || number == SYS_exit_group)
    flush_before_image_ends();
  return raw_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
#endif

ALLOCLAB_EXPORT void _exit(int status) {
  exit_now(real_exit_now, status);
}

ALLOCLAB_EXPORT void _Exit(int status) {
  exit_now(real_Exit, status);
}

ALLOCLAB_EXPORT int execl(const char* path, const char* arg, ...) {
  ALLOCLAB_COLLECT_ARGS(arg, argv, (void)0);
  return execv(path, argv);
}

ALLOCLAB_EXPORT int execlp(const char* file, const char* arg, ...) {
  ALLOCLAB_COLLECT_ARGS(arg, argv, (void)0);
  return execvp(file, argv);
}

ALLOCLAB_EXPORT int execle(const char* path, const char* arg, ...) {
  char* const* envp = nullptr;
  ALLOCLAB_COLLECT_ARGS(arg, argv, envp = va_arg(args, char* const*));
  return execve(path, argv, envp);
}
