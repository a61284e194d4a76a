#include "alloclab/strategies/upstream/host_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <limits>

#include "alloclab/strategies/upstream/registry.hpp"

namespace alloclab {
namespace {

struct LibraryInfo {
  const char* upstream;  // the upstream's name, for messages
  const char* soname;
  const char* package;  // the Debian package that ships it
};

LibraryInfo info_of(HostLibraryUpstream::Library library) {
  if (library == HostLibraryUpstream::Library::jemalloc)
    return {"host-jemalloc", "libjemalloc.so.2", "libjemalloc2"};
  return {"host-mimalloc", "libmimalloc.so.2", "libmimalloc2.0"};
}

template <class F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(::dlsym(handle, name));
}

}  // namespace

// Why dlopen failed, as one line that says what to do.
std::string HostLibraryUpstream::open_error(Library library, const char* dlerror_text) {
  const LibraryInfo info = info_of(library);
  const std::string why = dlerror_text ? dlerror_text : "";
  if (why.find("static TLS") != std::string::npos)
    // Debian's jemalloc uses initial-exec thread-local storage, which a library opened after
    // start-up can only get from the small surplus glibc reserves; the tunable enlarges it.
    return std::string(info.upstream) + ": " + info.soname +
           " is installed but cannot be loaded after start-up (it needs static TLS): run "
           "alloclab with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384";
  return std::string(info.upstream) + ": " + info.soname + " not found (apt-get install " +
         info.package + ")" + (why.empty() ? std::string() : "; dlopen: " + why);
}

HostLibraryUpstream::HostLibraryUpstream(Library library) {
  const LibraryInfo info = info_of(library);
  handle_ = ::dlopen(info.soname, RTLD_LOCAL | RTLD_NOW);
  if (handle_ == nullptr) throw UpstreamError(open_error(library, ::dlerror()));
  if (library == Library::jemalloc) {
    alloc_flags_ = symbol<AllocFlagsFn>(handle_, "mallocx");
    free_flags_ = symbol<FreeFlagsFn>(handle_, "dallocx");
    if (alloc_flags_ && free_flags_) {
      description_ = "mallocx/dallocx";
    } else {
      alloc_flags_ = nullptr;
      free_flags_ = nullptr;
      alloc_ = symbol<AllocFn>(handle_, "je_malloc");
      free_ = symbol<FreeFn>(handle_, "je_free");
      description_ = "je_malloc/je_free";
      if (!alloc_ || !free_) {
        // dlsym on the handle finds the library's own malloc/free, not the process's.
        alloc_ = symbol<AllocFn>(handle_, "malloc");
        free_ = symbol<FreeFn>(handle_, "free");
        description_ = "malloc/free";
      }
    }
  } else {
    alloc_ = symbol<AllocFn>(handle_, "mi_malloc");
    free_ = symbol<FreeFn>(handle_, "mi_free");
    description_ = "mi_malloc/mi_free";
  }
  if (!(alloc_flags_ && free_flags_) && !(alloc_ && free_)) {
    ::dlclose(handle_);
    handle_ = nullptr;
    throw UpstreamError(std::string(info.upstream) + ": " + info.soname +
                        " has no usable allocation functions (tried " +
                        (library == Library::jemalloc
                             ? "mallocx/dallocx, je_malloc/je_free, malloc/free"
                             : "mi_malloc/mi_free") +
                        ")");
  }
  description_ += std::string(" from ") + info.soname;
}

HostLibraryUpstream::~HostLibraryUpstream() {
  // Never dlclose: blocks from the library may outlive this object elsewhere in the process (and
  // unloading an allocator with live thread caches is unsafe). The handle is reference counted,
  // so opening it again later is cheap.
}

std::optional<std::string> HostLibraryUpstream::unavailable(Library library) {
  void* handle = ::dlopen(info_of(library).soname, RTLD_LOCAL | RTLD_NOW);
  if (handle == nullptr) return open_error(library, ::dlerror());
  return std::nullopt;  // the handle stays open on purpose, as above
}

std::optional<Block> HostLibraryUpstream::allocate(std::uint64_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  const auto n = static_cast<std::size_t>(std::max<std::uint64_t>(bytes, 1));
  void* p = alloc_flags_ ? alloc_flags_(n, 0) : alloc_(n);
  if (p == nullptr) return std::nullopt;
  return Block{reinterpret_cast<std::uintptr_t>(p), bytes};
}

void HostLibraryUpstream::deallocate(const Block& block) {
  void* p = reinterpret_cast<void*>(static_cast<std::uintptr_t>(block.address));
  if (free_flags_)
    free_flags_(p, 0);
  else
    free_(p);
}

}  // namespace alloclab
