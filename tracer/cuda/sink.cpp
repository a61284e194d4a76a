#include "sink.hpp"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>

#include "host_stacks.hpp"
#include "saved_maps.hpp"

namespace alloclab::cuda {
namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex word is used as a plain 32-bit integer");

std::uint32_t* futex_word(std::atomic<std::uint32_t>& word) {
  return reinterpret_cast<std::uint32_t*>(&word);
}

long current_tid() {
  return ::syscall(SYS_gettid);
}

// The program's signal mask, restored when the writer thread has been created with all blocked.
class BlockAllSignals {
 public:
  BlockAllSignals() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old_);
  }
  ~BlockAllSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockAllSignals(const BlockAllSignals&) = delete;
  BlockAllSignals& operator=(const BlockAllSignals&) = delete;

 private:
  sigset_t old_;
};

std::string read_own_maps() {
  std::ifstream maps("/proc/self/maps");
  std::ostringstream text;
  text << maps.rdbuf();
  return text.str();
}

// Appends `line` with one write(2): a killed program leaves whole lines behind.
bool append_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return done == line.size();
}

}  // namespace

std::size_t EventSink::StackHash::operator()(
    const std::vector<std::uint64_t>& stack) const noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ stack.size();
  for (std::uint64_t v : stack) h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
  return static_cast<std::size_t>(h ^ (h >> 31));
}

EventSink::EventSink(const std::string& path, const nlohmann::json& metadata,
                     std::chrono::milliseconds period, void (*writer_setup)())
    : path_(path) {
  AltWriteOptions options;
  options.zstd_level = 3;
  writer_ = std::make_unique<AltStreamWriter>(path, metadata, options);
  // The trace was just created (O_EXCL): maps beside it are from an older recording of that
  // name, and would name this one's frames wrongly.
  ::unlink(saved_maps_path(path).c_str());
  writer_running_.store(true);
  // The writer thread never runs the program's signal handlers: a signal sent to the process
  // goes to one of its threads, and a fatal one handled on the writer could not be written.
  BlockAllSignals block;
  try {
    thread_ = std::thread([this, period, writer_setup] {
      writer_tid_.store(current_tid());
      if (writer_setup) writer_setup();
      writer_loop(period);
    });
  } catch (...) {
    writer_running_.store(false);
    throw;
  }
}

EventSink::~EventSink() {
  close();
}

void EventSink::add(const Event& event, std::span<const std::uint64_t> stack) {
  stack = stack.first(std::min(stack.size(), max_stack_depth));
  std::lock_guard lock(queue_lock_);
  if (closed_) {
    ++dropped_;
    return;
  }
  queue_.events.push_back({event, static_cast<std::uint32_t>(queue_.frames.size()),
                           static_cast<std::uint32_t>(stack.size())});
  queue_.frames.insert(queue_.frames.end(), stack.begin(), stack.end());
}

std::uint32_t EventSink::intern_stack(std::span<const std::uint64_t> stack) {
  if (stack.empty()) return 0;
  std::vector<std::uint64_t> key(stack.begin(), stack.end());
  if (const auto it = stack_ids_.find(key); it != stack_ids_.end()) return it->second;
  std::vector<std::uint32_t> indices;
  indices.reserve(key.size());
  for (const std::uint64_t address : key) {
    auto [it, added] =
        frame_indices_.try_emplace(address, static_cast<std::uint32_t>(trace_.frames().size()));
    if (added) trace_.add_frame(StackFrame{address, {}, {}});
    indices.push_back(it->second);
  }
  const std::uint32_t id = trace_.add_stack(std::move(indices));
  stack_ids_.emplace(std::move(key), id);
  return id;
}

// Maps saved at the current loader generation cover every object a new frame can be in (it
// was loaded when the frame was captured, at most a period ago), so they are read again only
// when objects were loaded or unloaded since.
void EventSink::save_maps(std::size_t first_frame) {
  const std::uint64_t generation = loader_generation();
  if (generation == maps_generation_) return;
  if (append_line(saved_maps_path(path_), saved_maps_line({first_frame, read_own_maps()})))
    maps_generation_ = generation;
  else
    std::fprintf(stderr, "alloclab: warning: cannot save %s: frames stay unnamed\n",
                 saved_maps_path(path_).c_str());
}

void EventSink::write_locked(Batch& batch) {
  if (batch.events.empty() || failed_ || !writer_) return;
  try {
    // Without stacks nothing need outlive a write, the origin table included (a long run's
    // threads and streams would fill it).
    if (trace_.frames().empty())
      trace_ = Trace();
    else
      trace_.clear_events();
    trace_.reserve(batch.events.size());
    const std::size_t known_frames = trace_.frames().size();
    for (const Queued& queued : batch.events) {
      trace_.push_back(queued.event);
      const std::uint32_t id =
          intern_stack(std::span(batch.frames).subspan(queued.first_frame, queued.depth));
      trace_.set_stack_id(trace_.size() - 1, id);
    }
    if (trace_.frames().size() > known_frames) save_maps(known_frames);
    writer_->append(trace_);
    written_ += batch.events.size();
  } catch (const std::exception& e) {
    failed_ = true;
    std::fprintf(stderr, "alloclab: CUDA tracing stopped, cannot write %s: %s\n", path_.c_str(),
                 e.what());
  }
  batch.events.clear();
  batch.frames.clear();
}

void EventSink::flush() {
  // The file lock is taken first so that two flushes cannot write their batches out of order.
  std::lock_guard file(file_lock_);
  Batch batch;
  {
    std::lock_guard lock(queue_lock_);
    batch.swap(queue_);
  }
  write_locked(batch);
}

void EventSink::wake_writer() noexcept {
  wake_.fetch_add(1);
  ::syscall(SYS_futex, futex_word(wake_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void EventSink::writer_loop(std::chrono::milliseconds period) {
  using Clock = std::chrono::steady_clock;
  auto due = Clock::now() + period;
  while (!stop_.load()) {
    // The word is read before the conditions: a request or stop after them changes it, and the
    // futex then does not sleep.
    const std::uint32_t seen = wake_.load();
    const std::uint64_t requested = write_requests_.load();
    if (requested == writes_done_.load() && !stop_.load()) {
      const auto now = Clock::now();
      if (now < due) {
        const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(due - now);
        timespec timeout{};
        timeout.tv_sec = static_cast<time_t>(left.count() / 1'000'000'000);
        timeout.tv_nsec = static_cast<long>(left.count() % 1'000'000'000);
        ::syscall(SYS_futex, futex_word(wake_), FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
        continue;
      }
    }
    flush();
    writes_done_.store(requested);
    due = Clock::now() + period;
  }
  writer_running_.store(false);
}

std::uint64_t EventSink::request_write() noexcept {
  if (!writer_running_.load() || writer_tid_.load() == current_tid()) return 0;
  const std::uint64_t ticket = write_requests_.fetch_add(1) + 1;
  wake_writer();
  return ticket;
}

bool EventSink::wait_written(std::uint64_t ticket,
                             std::chrono::milliseconds timeout) const noexcept {
  if (ticket == 0) return false;
  const timespec step{0, 1'000'000};
  for (std::int64_t waited = 0; writes_done_.load() < ticket && writer_running_.load() &&
                                waited < static_cast<std::int64_t>(timeout.count());
       ++waited)
    ::nanosleep(&step, nullptr);
  return writes_done_.load() >= ticket;
}

void EventSink::close() {
  stop_.store(true);
  wake_writer();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(queue_lock_);
    if (closed_) return;
    closed_ = true;
  }
  flush();
  std::lock_guard file(file_lock_);
  if (writer_) {
    try {
      writer_->close();
    } catch (const std::exception&) {
    }
  }
}

std::uint64_t EventSink::events_written() const {
  std::lock_guard file(file_lock_);
  return written_;
}

std::uint64_t EventSink::dropped() const {
  std::lock_guard lock(queue_lock_);
  return dropped_;
}

bool EventSink::healthy() const {
  std::lock_guard file(file_lock_);
  return !failed_;
}

}  // namespace alloclab::cuda
