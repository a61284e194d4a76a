#include "stacks.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "recorder.hpp"

namespace alloclab::preload {

int g_stack_depth = 0;

namespace {

std::atomic<bool> g_stacks_ready{false};
std::uintptr_t g_self_begin = 0;  // the tracer's own code: frames to skip
std::uintptr_t g_self_end = 0;

int find_self(dl_phdr_info* info, std::size_t, void* data) {
  const auto target = reinterpret_cast<std::uintptr_t>(data);
  std::uintptr_t low = ~std::uintptr_t{0}, high = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    low = begin < low ? begin : low;
    high = begin + ph.p_memsz > high ? begin + ph.p_memsz : high;
  }
  if (target < low || target >= high) return 0;
  g_self_begin = low;
  g_self_end = high;
  return 1;
}

bool is_self(std::uintptr_t address) {
  return address >= g_self_begin && address < g_self_end;
}

std::string demangled(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !text) return name;
  std::string result = text;
  std::free(text);
  return result;
}

}  // namespace

void stacks_configure(const char* depth_text) {
  if (!depth_text) return;
  int depth = 0;
  for (const char* p = depth_text; *p >= '0' && *p <= '9' && depth <= max_stack_depth; ++p)
    depth = depth * 10 + (*p - '0');
  g_stack_depth = depth > max_stack_depth ? max_stack_depth : depth;
}

void stacks_warm_up() {
  if (g_stack_depth == 0) return;
  void* first[4];
  backtrace(first, 4);  // loads libgcc_s's unwinder now, not inside a traced malloc
  dl_iterate_phdr(find_self, reinterpret_cast<void*>(&capture_stack));
  g_stacks_ready.store(true, std::memory_order_release);
}

std::size_t buffer_bytes() {
  return sizeof(Buffer) + static_cast<std::size_t>(buffer_records) *
                              static_cast<std::size_t>(g_stack_depth) * sizeof(std::uint64_t);
}

std::uint64_t* frame_slots(Buffer* b, std::uint32_t slot) {
  return reinterpret_cast<std::uint64_t*>(b + 1) +
         static_cast<std::size_t>(slot) * static_cast<std::size_t>(g_stack_depth);
}

int capture_stack(std::uint64_t* frames) {
  if (!g_stacks_ready.load(std::memory_order_acquire)) return 0;
  // The tracer's own frames (the hook, the recorder) come first; a few spare slots cover them.
  constexpr int spare = 8;
  void* raw[max_stack_depth + spare];
  ++t_guard;  // the unwinder may allocate (rarely, e.g. on a new object): pass it through
  const int got = backtrace(raw, g_stack_depth + spare);
  --t_guard;
  int first = 0;
  while (first < got && is_self(reinterpret_cast<std::uintptr_t>(raw[first]))) ++first;
  int n = 0;
  for (int i = first; i < got && n < g_stack_depth; ++i)
    frames[n++] = reinterpret_cast<std::uintptr_t>(raw[i]);
  return n;
}

std::size_t StackInterner::KeyHash::operator()(
    const std::vector<std::uint64_t>& key) const noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ key.size();
  for (std::uint64_t v : key) h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
  return static_cast<std::size_t>(h ^ (h >> 31));
}

std::uint32_t StackInterner::frame_index(std::uint64_t address, Trace& trace) {
  auto it = frames_.find(address);
  if (it != frames_.end()) return it->second;
  StackFrame frame;
  frame.address = address;
  Dl_info info{};
  // A return address points just past its call: look up the call itself, which is inside
  // the calling function even when the call is the function's last instruction.
  if (dladdr(reinterpret_cast<void*>(address - 1), &info) != 0) {
    if (info.dli_sname) frame.function = demangled(info.dli_sname);
    if (info.dli_fname) frame.module = info.dli_fname;
  }
  const std::uint32_t index = trace.add_frame(std::move(frame));
  frames_.emplace(address, index);
  return index;
}

std::uint32_t StackInterner::intern(const std::uint64_t* frames, int depth, Trace& trace) {
  if (depth <= 0) return 0;
  key_.assign(frames, frames + depth);
  auto it = stacks_.find(key_);
  if (it != stacks_.end()) return it->second;
  std::vector<std::uint32_t> indices;
  indices.reserve(key_.size());
  for (std::uint64_t address : key_) indices.push_back(frame_index(address, trace));
  const std::uint32_t id = trace.add_stack(std::move(indices));
  stacks_.emplace(key_, id);
  return id;
}

}  // namespace alloclab::preload
