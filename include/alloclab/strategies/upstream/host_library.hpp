#pragma once
// HostLibraryUpstream: another malloc implementation loaded at run time with dlopen, so alloclab
// has no link-time dependency on it: `host-jemalloc` (Debian's libjemalloc2, soname
// libjemalloc.so.2) and `host-mimalloc` (libmimalloc2.0, soname libmimalloc.so.2).
//
// The library is opened with RTLD_LOCAL | RTLD_NOW and its functions are taken from that handle
// (dlsym on the handle, never RTLD_DEFAULT), so its `malloc`/`free` never replace the process's.
// jemalloc: `mallocx`/`dallocx` when exported (Debian's build), else `je_malloc`/`je_free`, else
// the handle's own `malloc`/`free`. mimalloc: `mi_malloc`/`mi_free`.
//
// Promises: as HostMallocUpstream (exact capacity, zero-byte requests get an address, null is a
// failed allocation). Construction throws UpstreamError when the library or a symbol is missing,
// naming the package to install. Debian's jemalloc needs static TLS, which a library opened after
// start-up gets only with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384 (the error says so).
#include <optional>
#include <string>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

class HostLibraryUpstream final : public Upstream {
 public:
  enum class Library { jemalloc, mimalloc };
  explicit HostLibraryUpstream(Library library);
  ~HostLibraryUpstream() override;
  HostLibraryUpstream(const HostLibraryUpstream&) = delete;
  HostLibraryUpstream& operator=(const HostLibraryUpstream&) = delete;

  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;
  // Which functions were found, e.g. "mallocx/dallocx from libjemalloc.so.2".
  const std::string& description() const { return description_; }

  // nullopt when the library can be opened here, else the error construction would throw (for
  // tests and benchmarks that skip without it).
  static std::optional<std::string> unavailable(Library library);

 private:
  using AllocFn = void* (*)(std::size_t);
  using AllocFlagsFn = void* (*)(std::size_t, int);
  using FreeFn = void (*)(void*);
  using FreeFlagsFn = void (*)(void*, int);
  static std::string open_error(Library library, const char* dlerror_text);
  void* handle_ = nullptr;
  AllocFn alloc_ = nullptr;
  AllocFlagsFn alloc_flags_ = nullptr;  // jemalloc's mallocx
  FreeFn free_ = nullptr;
  FreeFlagsFn free_flags_ = nullptr;  // jemalloc's dallocx
  std::string description_;
};

}  // namespace alloclab
