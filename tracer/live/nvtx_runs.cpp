// `alloclab run --cuda --run-range GLOB`: NVTX ranges as run markers. This library is then the
// program's NVTX injection (`run` points NVTX_INJECTION64_PATH at it), so the program's range
// calls come here; the same RunRanges that makes `record --cuda --run-range` runs decides which
// ranges are runs, and each run's begin and end go to the first marker entry point of the
// process, as a marker of the program's own would: the recorder's under `run --record` (which
// records it and passes it on), else liballoclab_live.so's, which passes it to this library's;
// and to the PyTorch allocator library, when the program loaded it.
//
#include <dlfcn.h>
// The types only, as NVTX asks of a tool: the implementation (its loader) is the program's.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>

#include "alloclab/protocol/environment.hpp"
#include "alloclab/protocol/ticks.hpp"
#include "inside.hpp"
#include "tracer/cuda/run_ranges.hpp"

namespace alloclab::live {
namespace {

std::mutex g_mutex;
cuda::RunRanges* g_ranges = nullptr;  // never destroyed: ranges may end in exit handlers
std::atomic<std::uint64_t> g_next_range_id{1};
// The thread's open push ranges, for the levels NVTX returns; all domains share it, as they
// share RunRanges' stack (CUPTI reports them the same way to `record`).
thread_local int t_push_depth = 0;

using LabelFn = void (*)(const char*);
using EndFn = void (*)();
LabelFn g_run_begin = nullptr;
EndFn g_run_end = nullptr;

std::uint64_t thread_id() {
  return static_cast<std::uint64_t>(syscall(SYS_gettid));
}

std::string_view ascii_message(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr || attributes->messageType != NVTX_MESSAGE_TYPE_ASCII ||
      attributes->message.ascii == nullptr)
    return {};
  return attributes->message.ascii;
}

// PyTorch opens liballoclab_torch.so (python/alloclab_torch.py's allocator) in a local scope,
// out of the marker chain's reach: a run goes to it directly when the program loaded it. It is
// found by its soname, whatever file it was opened from.
void pass_to_torch_allocator(bool begins, const char* label) {
  void* library = dlopen("liballoclab_torch.so", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return;
  if (begins) {
    if (auto begin = reinterpret_cast<LabelFn>(dlsym(library, "alloclab_torch_run_begin")))
      begin(label);
  } else if (auto end = reinterpret_cast<EndFn>(dlsym(library, "alloclab_torch_run_end"))) {
    end();
  }
  dlclose(library);  // the reference RTLD_NOLOAD took
}

// Runs `decide` on the ranges, then passes a run's begin or end on, outside the guard: the
// recorder must see that call as the program's. What RunRanges allocates is alloclab's, so it
// is made and freed inside the guard.
template <typename Decide>
void follow(Decide decide) {
  std::optional<Event> run;
  {
    Inside inside;
    const std::lock_guard<std::mutex> lock(g_mutex);
    run = decide(*g_ranges, thread_id(), protocol::monotonic_ns());
  }
  if (!run) return;
  const bool begins = run->op == Op::run_begin;
  if (begins && g_run_begin != nullptr) g_run_begin(run->label.c_str());
  if (!begins && g_run_end != nullptr) g_run_end();
  Inside inside;
  pass_to_torch_allocator(begins, run->label.c_str());
  run.reset();
}

int push(std::string_view name) {
  follow([&](cuda::RunRanges& r, std::uint64_t thread, std::uint64_t now) {
    return r.push(thread, now, name);
  });
  return t_push_depth++;
}

int pop() {
  follow([](cuda::RunRanges& r, std::uint64_t thread, std::uint64_t now) {
    return r.pop(thread, now);
  });
  return t_push_depth > 0 ? --t_push_depth : -1;  // NVTX: negative for a pop without a push
}

nvtxRangeId_t start(std::string_view name) {
  const std::uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  follow([&](cuda::RunRanges& r, std::uint64_t thread, std::uint64_t now) {
    return r.start(id, thread, now, name);
  });
  return id;
}

void end(nvtxRangeId_t id) {
  follow([&](cuda::RunRanges& r, std::uint64_t thread, std::uint64_t now) {
    return r.end(id, thread, now);
  });
}

int NVTX_API range_push_a(const char* message) {
  return push(message != nullptr ? message : "");
}
int NVTX_API range_push_ex(const nvtxEventAttributes_t* attributes) {
  return push(ascii_message(attributes));
}
int NVTX_API range_pop() {
  return pop();
}
nvtxRangeId_t NVTX_API range_start_a(const char* message) {
  return start(message != nullptr ? message : "");
}
nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t* attributes) {
  return start(ascii_message(attributes));
}
void NVTX_API range_end(nvtxRangeId_t id) {
  end(id);
}
int NVTX_API domain_range_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* attributes) {
  return push(ascii_message(attributes));
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t) {
  return pop();
}
nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t,
                                             const nvtxEventAttributes_t* attributes) {
  return start(ascii_message(attributes));
}
void NVTX_API domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t id) {
  end(id);
}

template <typename Fn>
void install(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace alloclab::live

using namespace alloclab::live;

// NVTX's entry point for an injection library: 1 to take the calls, 0 to leave NVTX's no-ops.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* pattern = std::getenv(alloclab::protocol::env_run_range);
  if (pattern == nullptr || *pattern == '\0' || get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr)
    return 0;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 ||
      core == nullptr)
    return 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0)
    core2 = nullptr;
  {
    find_guards();
    Inside inside;
    g_run_begin = reinterpret_cast<LabelFn>(dlsym(RTLD_DEFAULT, "alloclab_preload_run_begin"));
    g_run_end = reinterpret_cast<EndFn>(dlsym(RTLD_DEFAULT, "alloclab_preload_run_end"));
    g_ranges = new alloclab::cuda::RunRanges(pattern);
  }
  install(core, core_size, NVTX_CBID_CORE_RangePushA, range_push_a);
  install(core, core_size, NVTX_CBID_CORE_RangePushEx, range_push_ex);
  install(core, core_size, NVTX_CBID_CORE_RangePop, range_pop);
  install(core, core_size, NVTX_CBID_CORE_RangeStartA, range_start_a);
  install(core, core_size, NVTX_CBID_CORE_RangeStartEx, range_start_ex);
  install(core, core_size, NVTX_CBID_CORE_RangeEnd, range_end);
  if (core2 != nullptr) {
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_range_pop);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domain_range_start_ex);
    install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end);
  }
  return 1;
}
