#pragma once
// What the CUDA tracer's tests build their inputs from: device events as the callbacks make them,
// and this process's own maps and addresses for naming frames after the fact.
#include <dlfcn.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "alloclab/format/trace.hpp"

namespace alloclab::test {

// An event on device 0's memory, from thread 3.
inline Event device_event(Op op, std::uint64_t time, std::uint64_t address,
                          std::uint64_t size = 0) {
  Event e;
  e.op = op;
  e.time_ns = time;
  e.address = address;
  e.size = size;
  e.device = 0;
  e.kind = MemoryKind::device;
  e.thread = 3;
  return e;
}

inline std::string own_maps() {
  std::ifstream maps("/proc/self/maps");
  std::ostringstream text;
  text << maps.rdbuf();
  return text.str();
}

// A return address inside `function`, as a caller's frame holds.
inline std::uint64_t return_address_in(const void* function) {
  return reinterpret_cast<std::uint64_t>(function) + 1;
}

// The C library's own malloc (not a PLT stub of this program, nor a sanitizer's).
inline const void* libc_malloc() {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return libc ? dlsym(libc, "malloc") : nullptr;
}

}  // namespace alloclab::test
