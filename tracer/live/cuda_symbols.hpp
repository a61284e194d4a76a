#pragma once
// Finding a CUDA library's own definition of a function, for the libraries that put its calls
// through a strategy (liballoclab_live_cuda.so, liballoclab_torch.so).
#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstring>

namespace alloclab::live {

struct SymbolSearch {
  const char* library;  // a file name's start, e.g. "libcudart.so"
  const char* name;
  void* found;
};

inline int search_loaded_object(struct dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<SymbolSearch*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || *path == '\0') return 0;
  const char* slash = std::strrchr(path, '/');
  const char* file = slash != nullptr ? slash + 1 : path;
  if (std::strncmp(file, search->library, std::strlen(search->library)) != 0) return 0;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  search->found = dlsym(handle, search->name);
  dlclose(handle);
  return search->found != nullptr ? 1 : 0;
}

// `name` as the loaded library whose file name starts with `library` defines it, or nullptr.
// Unlike dlsym(RTLD_NEXT), finds a library opened in a local scope (Python's extension modules
// open theirs so), and never an interposer's definition.
inline void* find_in_library(const char* library, const char* name) {
  SymbolSearch search{library, name, nullptr};
  dl_iterate_phdr(search_loaded_object, &search);
  return search.found;
}

// `name` as the object holding `caller` (a return address) finds it among its own
// dependencies, never `self` (the interposer's own definition); nullptr for the main program
// (whose scope is the global one, where the interposer comes first) or when it does not reach
// one. The CUDA runtime a library was linked with, even where another one (alloclab's own, or
// another version) was loaded before it.
inline void* find_for_caller(const void* caller, const char* name, const void* self) {
  Dl_info info;
  if (dladdr(caller, &info) == 0 || info.dli_fname == nullptr || *info.dli_fname == '\0')
    return nullptr;
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* found = dlsym(handle, name);
  dlclose(handle);
  return found == self ? nullptr : found;
}

// `name` from the object that defines `beside` (another function of the same library).
inline void* find_beside(const void* beside, const char* name) {
  Dl_info info;
  if (dladdr(beside, &info) == 0 || info.dli_fname == nullptr) return nullptr;
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* found = dlsym(handle, name);
  dlclose(handle);
  return found;
}

}  // namespace alloclab::live
