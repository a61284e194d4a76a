// alloclab-writer: the writer process of a traced program (liballoclab_preload.so starts it, one
// per traced image). It attaches the memory the program's recorder fills, creates the trace, and
// flushes: every flush period, when a buffer fills, or when the program asks and waits (exit, exec,
// a fatal signal). It ends once the program asked it to stop or has ended, after the last flush.
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "alloclab/protocol/recorder_memory.hpp"
#include "collector.hpp"
#include "frame_namer.hpp"
#include "stack_table.hpp"
#include "trace_file.hpp"

namespace alloclab::writer {
namespace {

using namespace alloclab::protocol;

// zstd level 1 compresses in half the time of level 3, at about the same size on malloc-heavy
// traces and 3-5% larger on PyTorch's: used while events arrive fast (Collector's "busy"), when
// the writer's time is what the program waits for at exit.
constexpr int zstd_level_at_ease = 3;
constexpr int zstd_level_busy = 1;

void nap_on(std::atomic<std::uint32_t>& word, std::uint32_t seen, long ms) {
  const timespec timeout{ms / 1000, (ms % 1000) * 1'000'000};
  syscall(SYS_futex, &word, FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

void wake_all(std::atomic<std::uint32_t>& word) {
  word.fetch_add(1);
  syscall(SYS_futex, &word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void set_state(WriterControl& control, std::uint32_t state) {
  control.state.store(state);
  syscall(SYS_futex, &control.state, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

struct Options {
  int shared_id = -1;
  int pool_id = -1;
  std::string output;
  std::string file_list;
};

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--memory") {
      if (std::sscanf(argv[i + 1], "%d:%d", &options.shared_id, &options.pool_id) != 2)
        return std::nullopt;
    } else if (flag == "--output") {
      options.output = argv[i + 1];
    } else if (flag == "--file-list") {
      options.file_list = argv[i + 1];
    } else {
      return std::nullopt;
    }
  }
  if (options.output.empty() || options.shared_id < 0 || options.pool_id < 0) return std::nullopt;
  return options;
}

// A segment of `id` attached, and its size; nullptr when there is none.
void* attach(int id, std::size_t& bytes) {
  shmid_ds info{};
  if (shmctl(id, IPC_STAT, &info) != 0) return nullptr;
  void* at = shmat(id, nullptr, 0);
  if (at == reinterpret_cast<void*>(-1)) return nullptr;
  bytes = info.shm_segsz;
  return at;
}

// The recorder's shared memory; nullptr when the ids are not a recorder's.
Shared* attach_shared_memory(const Options& options, char*& pool_base) {
  std::size_t shared_bytes = 0, pool_bytes = 0;
  auto* shared = static_cast<Shared*>(attach(options.shared_id, shared_bytes));
  pool_base = static_cast<char*>(attach(options.pool_id, pool_bytes));
  if (!shared || !pool_base || shared_bytes != sizeof(Shared)) return nullptr;
  const PoolLayout& pool = shared->pool;
  if (pool_bytes < pool.slot_bytes * pool.slots) return nullptr;
  return shared;
}

class Writer {
 public:
  Writer(Shared& shared, char* pool_base, const Options& options)
      : shared_(shared),
        control_(shared.writer),
        list_(options.file_list),
        namer_(shared.settings.stack_depth ? std::make_unique<FrameNamer>(shared.globals.pid)
                                           : nullptr),
        stacks_(namer_ ? std::make_unique<StackTable>(*namer_) : nullptr),
        collector_(shared, pool_base, stacks_.get()) {}

  bool start(const std::string& output, int program_pidfd) {
    program_pidfd_ = program_pidfd;
    file_ = create_trace(output, shared_, list_, path_);
    if (!file_) return false;
    file_->set_zstd_level(zstd_level_at_ease);
    return true;
  }

  void run() {
    const std::uint64_t period_steps =
        std::max<std::uint64_t>(1, shared_.settings.flush_period_ms / 5);
    std::uint64_t filled_seen = 0;
    while (goes_on()) {
      for (std::uint64_t i = 0; i < period_steps; ++i) {
        // Read before the checks: a wake after them changes it, and the nap returns at once.
        const std::uint32_t seen = control_.wake.load();
        if (!goes_on()) break;
        if (control_.flush_requests.load() > control_.flush_done.load()) break;
        if (shared_.globals.buffers_filled.load(std::memory_order_relaxed) != filled_seen) break;
        nap_on(control_.wake, seen, 5);
      }
      filled_seen = shared_.globals.buffers_filled.load(std::memory_order_relaxed);
      const std::uint64_t requested = control_.flush_requests.load();
      flush(requested > control_.flush_done.load() ? Collector::Kind::requested
                                                   : Collector::Kind::periodic);
      control_.flush_done.store(requested);
      wake_all(control_.flushes);
    }
  }

  // The last flush, and the file closed.
  void finish() {
    flush(Collector::Kind::last);
    if (!failed_) {
      try {
        file_->close();
      } catch (const std::exception& e) {
        stop_writing(e.what());
      }
    }
    if (failed_)
      std::fprintf(stderr, "alloclab: the trace %s is incomplete: %s\n", path_.c_str(),
                   why_.c_str());
    if (const std::size_t missing = collector_.overdue())
      std::fprintf(stderr,
                   "alloclab: %zu %s still in progress at exit %s left out of the trace (a thread "
                   "stopped inside an allocation call)\n",
                   missing, missing == 1 ? "event" : "events", missing == 1 ? "was" : "were");
    shared_.globals.final_flush_done.store(true);
    control_.flush_done.store(control_.flush_requests.load());
    wake_all(control_.flushes);
  }

 private:
  // Until the program asks the writer to stop, or has ended.
  bool goes_on() const {
    if (control_.stop.load()) return false;
    pollfd program{program_pidfd_, POLLIN, 0};
    return poll(&program, 1, 0) <= 0;
  }

  void flush(Collector::Kind kind) {
    if (namer_) namer_->allow_refresh();
    try {
      collector_.flush(kind, [this](const Trace& batch, bool busy) {
        file_->set_zstd_level(busy ? zstd_level_busy : zstd_level_at_ease);
        file_->append(batch);
      });
    } catch (const std::exception& e) {
      stop_writing(e.what());
    }
  }

  // A write failed (disk full, file size limit, I/O error): recording stops, so the program runs
  // on unhindered and its threads never wait for buffers; the file keeps every complete chunk
  // (AltStreamWriter cuts a failed one off again).
  void stop_writing(const std::string& why) {
    if (failed_) return;
    failed_ = true;
    why_ = why;
    collector_.stop_writing();
    shared_.globals.state.store(static_cast<int>(State::disabled));
    std::fprintf(stderr, "alloclab: tracing stopped, cannot write the trace: %s\n", why.c_str());
    list_.incomplete(path_, why);
  }

  Shared& shared_;
  WriterControl& control_;
  FileList list_;
  std::unique_ptr<FrameNamer> namer_;
  std::unique_ptr<StackTable> stacks_;
  Collector collector_;
  std::unique_ptr<AltStreamWriter> file_;
  std::string path_;
  int program_pidfd_ = -1;
  bool failed_ = false;
  std::string why_;
};

int writer_main(int argc, char** argv) {
  // The program's signals (^C to its process group too) are not for the writer, and a write
  // past RLIMIT_FSIZE fails with EFBIG rather than killing it.
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  const std::optional<Options> options = parse_options(argc, argv);
  char* pool_base = nullptr;
  Shared* shared = options ? attach_shared_memory(*options, pool_base) : nullptr;
  if (!shared) {
    std::fprintf(stderr,
                 "alloclab-writer: the writer of a program traced by liballoclab_preload.so, "
                 "which starts it; not a command of its own\n");
    return 2;
  }
  WriterControl& control = shared->writer;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, shared->globals.pid, 0));
  if (pidfd < 0) {
    std::fprintf(stderr, "alloclab: not tracing pid %d: cannot watch it: %s\n", shared->globals.pid,
                 std::strerror(errno));
    set_state(control, writer_failed);
    return 1;
  }
  try {
    Writer writer(*shared, pool_base, *options);
    if (!writer.start(options->output, pidfd)) {
      set_state(control, writer_failed);
      return 1;
    }
    control.pid.store(getpid());
    FileList(options->file_list).writer(getpid());
    set_state(control, writer_ready);
    writer.run();
    writer.finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alloclab: the trace writer failed: %s\n", e.what());
    shared->globals.state.store(static_cast<int>(State::disabled));
    shared->globals.final_flush_done.store(true);
    set_state(control, writer_failed);
    return 1;
  }
  set_state(control, writer_finished);
  return 0;
}

}  // namespace
}  // namespace alloclab::writer

int main(int argc, char** argv) {
  return alloclab::writer::writer_main(argc, argv);
}
