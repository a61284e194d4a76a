// liballoclab_cuda.so: the CUDA tracer behind `alloclab record --cuda`. The CUDA driver loads it
// (CUDA_INJECTION64_PATH) into any program that initialises CUDA and calls InitializeInjection,
// which subscribes to CUPTI callbacks of the memory APIs (docs/cuda-tracer.md says why callbacks
// and not activity records). Each callback becomes an ApiCall, the Translator decides the event,
// the EventSink writes it.
//
// Environment (set by `alloclab record`): ALLOCLAB_CUDA_OUTPUT (the .alt to create; without it
// nothing is traced), ALLOCLAB_RUN_RANGE (an NVTX range name glob; needs NVTX_INJECTION64_PATH
// to name this library, see InitializeInjectionNvtx2), ALLOCLAB_TRACE_PID (the process that
// writes ALLOCLAB_CUDA_OUTPUT), ALLOCLAB_FOLLOW_FORK / ALLOCLAB_FOLLOW_EXEC (other processes
// that initialise CUDA write traces of their own, listed in ALLOCLAB_FILE_LIST: processes.hpp),
// ALLOCLAB_STACKS (--stacks N: each allocation's host call stack, N frames; host_stacks.hpp).
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "alloclab/protocol/environment.hpp"
#include "cupti_decode.hpp"
#include "fatal_signal.hpp"
#include "host_stacks.hpp"
#include "processes.hpp"
#include "run_ranges.hpp"
#include "sink.hpp"
#include "translate.hpp"

namespace alloclab::cuda {
namespace {

struct Tracer {
  std::mutex lock;  // the ordering rule of translate.hpp: translation and queueing in one step
  Translator translator;
  std::unique_ptr<RunRanges> runs;
  std::unique_ptr<EventSink> sink;
  std::unique_ptr<HostStacks> stacks;  // --stacks; null without
  std::vector<Event> scratch;
};

Tracer* g_tracer = nullptr;
std::atomic<bool> g_active{false};
CUpti_SubscriberHandle g_subscriber = nullptr;
int g_pid = 0;

thread_local CallNesting t_nesting;

// With `record --cpu` the preload tracer shares the process: the CUDA tracer's own allocations
// (queue growth, the writer thread's encoding) are not the program's, so they are hidden from
// it when it offers the switch. Only memory our code both allocates and frees is hidden: CUPTI
// and the driver free what they allocate in our calls later, outside any guard of ours (at a
// context's or the process's end), and those frees would name blocks the trace never saw. So
// no CUPTI or driver call is made under the guard; their memory is recorded as the program's.
using GuardFunction = void (*)(int);
GuardFunction g_preload_guard = nullptr;

struct PreloadGuard {
  PreloadGuard() {
    if (g_preload_guard) g_preload_guard(1);
  }
  ~PreloadGuard() {
    if (g_preload_guard) g_preload_guard(-1);
  }
  PreloadGuard(const PreloadGuard&) = delete;
  PreloadGuard& operator=(const PreloadGuard&) = delete;
};

// A CUPTI call made while the guard is held runs with it lifted (see above).
template <class Call>
auto unguarded(Call call) {
  struct Restore {
    Restore() {
      if (g_preload_guard) g_preload_guard(-1);
    }
    ~Restore() {
      if (g_preload_guard) g_preload_guard(1);
    }
  } restore;
  return call();
}

// The sink's writer thread works for the tracer only, for its whole life.
void hide_writer_thread() {
  if (g_preload_guard) g_preload_guard(1);
}

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t thread_id() {
  thread_local const std::uint64_t tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return tid;
}

DeviceId device_of(CUcontext context) {
  std::uint32_t id = 0;
  if (cuptiGetDeviceId(context, &id) != CUPTI_SUCCESS) return 0;
  return static_cast<DeviceId>(id);
}

void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& data) {
  const Site site = data.callbackSite == CUPTI_API_ENTER ? Site::enter : Site::exit;
  if (!t_nesting.admit(domain == CUPTI_CB_DOMAIN_RUNTIME_API, site)) return;

  ApiCall call;
  if (!decode_api_call(domain, cbid, data, call)) return;
  call.thread = thread_id();
  call.device = device_of(data.context);
  PreloadGuard guard;
  // Unwound before the lock, which other threads' calls wait for (and under the guard: what
  // the unwinder allocates is the tracer's).
  std::uint64_t frames[max_host_stack_depth];
  int depth = 0;
  if (g_tracer->stacks && site == Site::exit && may_allocate(call.api))
    depth = g_tracer->stacks->capture(frames);
  const std::span<const std::uint64_t> stack(frames, static_cast<std::size_t>(depth));
  std::lock_guard lock(g_tracer->lock);
  call.time_ns = now_ns();  // under the lock: times follow the order of the trace
  g_tracer->scratch.clear();
  g_tracer->translator.translate(call, g_tracer->scratch);
  // Frees carry no stack (as in the preload tracer): the allocation's says where a block came
  // from.
  for (const Event& event : g_tracer->scratch)
    g_tracer->sink->add(event, event.op == Op::alloc ? stack : std::span<const std::uint64_t>());
}

void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data) {
  if (!g_tracer->runs) return;
  PreloadGuard guard;
  const std::optional<NvtxCall> call = decode_nvtx_call(cbid, data);
  if (!call) return;
  const std::uint64_t thread = thread_id();
  std::lock_guard lock(g_tracer->lock);
  const std::uint64_t time = now_ns();
  RunRanges& runs = *g_tracer->runs;
  std::optional<Event> event;
  switch (call->kind) {
    case NvtxCall::Kind::push:
      event = runs.push(thread, time, call->name);
      break;
    case NvtxCall::Kind::pop:
      event = runs.pop(thread, time);
      break;
    case NvtxCall::Kind::start:
      event = runs.start(call->id, thread, time, call->name);
      break;
    case NvtxCall::Kind::end:
      event = runs.end(call->id, thread, time);
      break;
  }
  if (event) g_tracer->sink->add(*event);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  if (!g_active.load(std::memory_order_acquire) || !data) return;
  if (domain == CUPTI_CB_DOMAIN_NVTX)
    on_nvtx(cbid, *static_cast<const CUpti_NvtxData*>(data));
  else
    on_api(domain, cbid, *static_cast<const CUpti_CallbackData*>(data));
}

const char* cupti_error_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || !text) text = "unknown error";
  return text;
}

void say_cupti_error(const char* what, CUptiResult result) {
  std::fprintf(stderr, "alloclab: CUDA tracing off: %s: %s\n", what, cupti_error_text(result));
}

// Enables what it can: a callback this driver does not offer costs that API, not the trace.
// Returns how many were enabled.
std::size_t enable(CUpti_CallbackDomain domain, CallbackIds ids, const char* what) {
  std::size_t enabled = 0;
  for (std::size_t i = 0; i < ids.count; ++i) {
    const CUptiResult result = cuptiEnableCallback(1, g_subscriber, domain, ids.ids[i]);
    if (result == CUPTI_SUCCESS) {
      ++enabled;
      continue;
    }
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, ids.ids[i], &name) != CUPTI_SUCCESS || !name) name = "?";
    std::fprintf(stderr, "alloclab: warning: %s %s not traced: %s\n", what, name,
                 cupti_error_text(result));
  }
  return enabled;
}

std::string command_line() {
  std::string text;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char chunk[4096];
    std::size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) text.append(chunk, n);
    std::fclose(f);
  }
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

nlohmann::json metadata(const char* run_range, const ProcessDecision& process,
                        const HostStacks* stacks) {
  nlohmann::json m = nlohmann::json::object();
  m["tool_version"] = ALLOCLAB_VERSION;
  m["command_line"] = command_line();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m["host"] = host;
  m["pid"] = getpid();
  m["parent_pid"] = getppid();
  m["image"] = image_label(process, false);
  m["clock"] = "CLOCK_MONOTONIC";
  m["recorder"] = "alloclab record --cuda (liballoclab_cuda.so, CUPTI callbacks)";
  if (run_range) m["run_range"] = run_range;
  if (stacks) {  // as the preload tracer's metadata says it
    m["stack_depth"] = stacks->depth();
    m["unwinder"] = stacks->unwinder();
  }
  return m;
}

// A forked child has no writer thread and must not write the parent's file: not traced.
void at_fork_child() {
  g_active.store(false, std::memory_order_relaxed);
}

bool env_flag(const char* name) {
  const char* text = std::getenv(name);
  return text && text[0] == '1' && text[1] == '\0';
}

ProcessDecision this_process() {
  const char* owner = std::getenv(protocol::env_trace_pid);
  return decide_process(owner ? std::strtoull(owner, nullptr, 10) : 0,
                        static_cast<std::uint64_t>(getpid()),
                        env_flag(protocol::env_follow_fork) || env_flag(protocol::env_follow_exec));
}

// --stacks N (ALLOCLAB_STACKS), at most max_host_stack_depth; 0: off.
int stack_depth() {
  const char* text = std::getenv(protocol::env_stacks);
  if (!text) return 0;
  const long depth = std::strtol(text, nullptr, 10);
  return depth <= 0                     ? 0
         : depth > max_host_stack_depth ? max_host_stack_depth
                                        : static_cast<int>(depth);
}

// libunwind, as the preload tracer, unless asked for backtrace() (ALLOCLAB_UNWINDER) or the
// preload tracer shares the process (--cpu): libunwind's per-thread storage is allocated by
// the C library on a thread's first unwind and freed through free() when the thread ends,
// where the preload tracer would record the free of a block it never saw allocated (it
// handles that for its own unwinds only). backtrace() keeps no such storage.
bool use_libunwind() {
  const char* wanted = std::getenv(protocol::env_unwinder);
  if (wanted && std::string_view(wanted) == "backtrace") return false;
  return g_preload_guard == nullptr;
}

// Creates this process's trace: the root's output, or a follower's own name (the next free one,
// also for a root image exec'd after an earlier image of the same process wrote the output).
std::unique_ptr<EventSink> open_sink(const std::string& output, const ProcessDecision& process,
                                     nlohmann::json metadata) {
  const auto create = [&](const std::string& path) {
    return std::make_unique<EventSink>(path, metadata, std::chrono::milliseconds(50),
                                       hide_writer_thread);
  };
  if (process.root) {
    try {
      return create(output);
    } catch (const std::system_error& e) {
      if (e.code() != std::errc::file_exists || !process.follow) throw;
    }
    metadata["image"] = image_label(process, true);
  }
  for (int attempt = 0;; ++attempt) {
    const std::string path =
        follower_trace_path(output, static_cast<std::uint64_t>(getpid()), attempt);
    try {
      std::unique_ptr<EventSink> sink = create(path);
      list_trace_file(std::getenv(protocol::env_file_list), path);
      return sink;
    } catch (const std::system_error& e) {
      if (e.code() != std::errc::file_exists || attempt >= 100) throw;
    }
  }
}

int initialize() {
  const char* output = std::getenv(protocol::env_cuda_output);
  const ProcessDecision process = this_process();
  if (!output || !*output || g_tracer || !process.traced) return 0;
  g_preload_guard = reinterpret_cast<GuardFunction>(dlsym(RTLD_DEFAULT, "alloclab_preload_guard"));
  PreloadGuard guard;
  const char* run_range = std::getenv(protocol::env_run_range);
  if (run_range && !*run_range) run_range = nullptr;
  auto tracer = std::make_unique<Tracer>();
  if (run_range) tracer->runs = std::make_unique<RunRanges>(run_range);
  if (const int depth = stack_depth(); depth > 0)
    tracer->stacks = std::make_unique<HostStacks>(depth, use_libunwind());
  // Subscribed first, so that no file is left behind when CUPTI says no (no device, or another
  // tool, a profiler say, holds CUPTI's one subscriber slot). Callbacks before g_active are
  // ignored.
  const CUptiResult subscribed =
      unguarded([] { return cuptiSubscribe(&g_subscriber, on_callback, nullptr); });
  if (subscribed != CUPTI_SUCCESS) {
    say_cupti_error("cuptiSubscribe", subscribed);
    return 0;
  }
  try {
    tracer->sink = open_sink(output, process, metadata(run_range, process, tracer->stacks.get()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alloclab: CUDA tracing off: %s\n", e.what());
    unguarded([] { return cuptiUnsubscribe(g_subscriber); });
    g_subscriber = nullptr;
    return 0;
  }
  g_tracer = tracer.release();
  g_pid = getpid();
  pthread_atfork(nullptr, nullptr, at_fork_child);
  g_active.store(true, std::memory_order_release);
  const std::size_t apis = unguarded([] {
    return enable(CUPTI_CB_DOMAIN_RUNTIME_API, traced_runtime_cbids(), "API") +
           enable(CUPTI_CB_DOMAIN_DRIVER_API, traced_driver_cbids(), "API");
  });
  if (run_range &&
      unguarded([] { return enable(CUPTI_CB_DOMAIN_NVTX, traced_nvtx_cbids(), "NVTX"); }) == 0)
    std::fprintf(stderr, "alloclab: warning: no NVTX callbacks: --run-range finds no runs\n");
  if (apis == 0) {
    std::fprintf(stderr, "alloclab: CUDA tracing off: no memory API could be traced\n");
    g_active.store(false);
    g_tracer->sink->close();
    unguarded([] { return cuptiUnsubscribe(g_subscriber); });
    g_subscriber = nullptr;
    return 0;
  }
  // A crash (SIGSEGV, abort...) has the writer write what is queued before the process dies;
  // with `--cpu` the preload tracer's handler is chained (fatal_signal.cpp says why).
  install_fatal_flush(g_tracer->sink.get(), reinterpret_cast<const void*>(g_preload_guard));
  return 1;
}

}  // namespace
}  // namespace alloclab::cuda

using namespace alloclab::cuda;

// Called by the CUDA driver during cuInit. Default visibility, or the driver skips it silently.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    return initialize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alloclab: CUDA tracing off: %s\n", e.what());
    return 0;
  }
}

// NVTX's injection entry point: `record --run-range` names this library in NVTX_INJECTION64_PATH,
// and it hands NVTX to the CUPTI this library is bound to. Naming CUPTI's file there instead
// breaks in programs that carry a libcupti of their own (PyTorch does): that copy is loaded
// first and serves our callbacks, NVTX would load the named file as a second copy, and its NVTX
// callbacks would reach no subscriber.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    const void* (*get_export_table)(std::uint32_t)) {
  using CuptiNvtxEntry = int (*)(const void* (*)(std::uint32_t));
  Dl_info bound{};
  void* cupti = nullptr;
  if (dladdr(reinterpret_cast<const void*>(&cuptiSubscribe), &bound) && bound.dli_fname)
    cupti = dlopen(bound.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  const auto entry =
      cupti ? reinterpret_cast<CuptiNvtxEntry>(dlsym(cupti, "InitializeInjectionNvtx2")) : nullptr;
  if (!entry) {
    std::fprintf(stderr,
                 "alloclab: warning: CUPTI (%s) has no NVTX entry point: --run-range finds no "
                 "runs\n",
                 bound.dli_fname ? bound.dli_fname : "not found");
    return 0;
  }
  return entry(get_export_table);
}

// Runs after the program's atexit handlers and static destructors (their frees are recorded),
// in the process that started tracing only (a forked child must not write our file).
__attribute__((destructor)) static void alloclab_cuda_finish() {
  if (!g_tracer || g_pid != getpid()) return;
  PreloadGuard guard;
  {
    std::lock_guard lock(g_tracer->lock);
    g_active.store(false, std::memory_order_release);
  }
  g_tracer->sink->close();
}
