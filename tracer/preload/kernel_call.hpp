#pragma once
// System calls the tracer itself makes. The library exports its own syscall() (lifecycle.cpp:
// syscall(SYS_execve, ...) must flush the trace first), so its internal calls go straight to
// the kernel rather than through that export; they also run before the real functions are
// known (mmap while dlsym is at work).
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>

namespace alloclab::preload {

template <typename T>
long syscall_argument(T value) {
  if constexpr (std::is_null_pointer_v<T>)
    return 0;
  else if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<long>(value);
  else
    return static_cast<long>(value);
}

// Up to six arguments, as the kernel takes them; -1 with errno set on failure, like syscall().
inline long raw_syscall(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0,
                        long a5 = 0, long a6 = 0) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  if (result < 0 && result > -4096) {
    errno = static_cast<int>(-result);
    return -1;
  }
  return result;
#else
  return ::syscall(number, a1, a2, a3, a4, a5, a6);  // no export of our own there
#endif
}

template <typename... Args>
long kernel_call(long number, Args... args) {
  static_assert(sizeof...(Args) <= 6);
  return raw_syscall(number, syscall_argument(args)...);
}

}  // namespace alloclab::preload
