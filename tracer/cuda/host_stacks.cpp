#include "host_stacks.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <algorithm>

namespace alloclab::cuda {
namespace {

// Spare frames for those dropped: the callback, CUPTI's dispatch, the driver and the runtime.
constexpr int spare_frames = 48;

ModuleRange range_of(const dl_phdr_info& info) {
  std::uint64_t low = ~std::uint64_t{0}, high = 0;
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const std::uint64_t begin = info.dlpi_addr + ph.p_vaddr;
    low = std::min(low, begin);
    high = std::max(high, begin + ph.p_memsz);
  }
  return low < high ? ModuleRange{low, high} : ModuleRange{};
}

struct ModuleQuery {
  std::uint64_t self;
  std::vector<ModuleRange>* ranges;
};

int add_cuda_module(dl_phdr_info* info, std::size_t, void* data) {
  auto* query = static_cast<ModuleQuery*>(data);
  const ModuleRange range = range_of(*info);
  if (range.begin == range.end) return 0;
  if (range.contains(query->self) || (info->dlpi_name && is_cuda_library(info->dlpi_name)))
    query->ranges->push_back(range);
  return 0;
}

// The loader's count of objects loaded and unloaded so far (the first object reports them).
int read_generation(dl_phdr_info* info, std::size_t size, void* data) {
  auto* generation = static_cast<std::uint64_t*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *generation = info->dlpi_adds * 0x9E3779B97F4A7C15ull + info->dlpi_subs;
  return 1;
}

}  // namespace

std::size_t frames_to_drop(std::span<const ModuleRange> modules,
                           std::span<const std::uint64_t> frames) {
  std::size_t drop = 0;
  while (drop < frames.size() &&
         std::any_of(modules.begin(), modules.end(),
                     [&](const ModuleRange& m) { return m.contains(frames[drop]); }))
    ++drop;
  return drop;
}

bool is_cuda_library(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (const std::string_view prefix : {"libcuda.so", "libcudart.so", "libcupti.so"})
    if (name.starts_with(prefix)) return true;
  return false;
}

std::vector<ModuleRange> loaded_cuda_modules(const void* self) {
  std::vector<ModuleRange> ranges;
  ModuleQuery query{reinterpret_cast<std::uint64_t>(self), &ranges};
  dl_iterate_phdr(add_cuda_module, &query);
  return ranges;
}

HostStacks::HostStacks(int depth, bool libunwind)
    : depth_(std::clamp(depth, 1, max_host_stack_depth)) {
#ifdef ALLOCLAB_LIBUNWIND_SONAME
  // Opened, not linked, for the preload tracer's reason (preload/stacks.cpp): its _Unwind_*
  // functions must not replace libgcc_s's for the program's exceptions.
  if (libunwind)
    if (void* lib = dlopen(ALLOCLAB_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL))
      unw_backtrace_ = reinterpret_cast<Backtrace>(dlsym(lib, "unw_backtrace"));
#else
  (void)libunwind;
#endif
  // The first unwind does the unwinder's lazy setup (backtrace() loads libgcc_s) now, not in
  // the program's first allocation.
  void* first[8];
  if (unw_backtrace_)
    unw_backtrace_(first, 8);
  else
    backtrace(first, 8);
}

const char* HostStacks::unwinder() const {
  return unw_backtrace_ ? "libunwind" : "backtrace";
}

std::uint64_t loader_generation() {
  std::uint64_t generation = 0;
  dl_iterate_phdr(read_generation, &generation);
  return generation;
}

std::span<const ModuleRange> HostStacks::modules_now() {
  const std::uint64_t generation = loader_generation();
  if (generation != loader_generation_) {
    modules_ = loaded_cuda_modules(reinterpret_cast<const void*>(&frames_to_drop));
    loader_generation_ = generation;
  }
  return modules_;
}

int HostStacks::capture(std::uint64_t* out) {
  void* raw[max_host_stack_depth + spare_frames];
  const int got = unw_backtrace_ ? unw_backtrace_(raw, depth_ + spare_frames)
                                 : backtrace(raw, depth_ + spare_frames);
  if (got <= 0) return 0;
  std::uint64_t frames[max_host_stack_depth + spare_frames];
  for (int i = 0; i < got; ++i) frames[i] = reinterpret_cast<std::uint64_t>(raw[i]);
  std::size_t first;
  {
    std::lock_guard lock(modules_lock_);
    first = frames_to_drop(modules_now(), std::span(frames, static_cast<std::size_t>(got)));
  }
  int n = 0;
  for (std::size_t i = first; i < static_cast<std::size_t>(got) && n < depth_; ++i)
    out[n++] = frames[i];
  return n;
}

}  // namespace alloclab::cuda
