#pragma once
// BootstrapArena: memory for the calls an interposing library (the recorder, alloclab run's
// library) must serve before it knows the real allocator: dlsym itself may call calloc while
// the library looks the real functions up. Static storage, so zero from the start; handed out
// by one atomic bump and never freed (the library's free ignores its blocks). Header-only and
// allocation-free.
#include <atomic>
#include <cstddef>

namespace alloclab::protocol {

template <std::size_t Bytes>
class BootstrapArena {
 public:
  bool contains(const void* p) const {
    return p >= static_cast<const void*>(storage_) &&
           p < static_cast<const void*>(storage_ + Bytes);
  }

  // `size` bytes aligned to `alignment` (a power of two; 16 at least), or nullptr when the
  // arena is used up.
  void* allocate(std::size_t size, std::size_t alignment = 16) {
    if (alignment < 16) alignment = 16;
    std::size_t used = used_.load();
    for (;;) {
      const std::size_t start = (used + alignment - 1) & ~(alignment - 1);
      if (start + size > Bytes || start + size < start) return nullptr;
      if (used_.compare_exchange_weak(used, start + size)) return storage_ + start;
    }
  }

  // The bytes from `p`, a block of the arena, to its end: at most what a realloc of `p` copies.
  std::size_t room_after(const void* p) const {
    return static_cast<std::size_t>(storage_ + Bytes - static_cast<const char*>(p));
  }

 private:
  alignas(64) char storage_[Bytes];
  std::atomic<std::size_t> used_{0};
};

}  // namespace alloclab::protocol
