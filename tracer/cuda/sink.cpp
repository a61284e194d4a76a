#include "sink.hpp"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <exception>

#include "alloclab/format/trace.hpp"

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

}  // namespace

EventSink::EventSink(const std::string& path, const nlohmann::json& metadata,
                     std::chrono::milliseconds period, void (*writer_setup)())
    : path_(path) {
  AltWriteOptions options;
  options.zstd_level = 3;
  writer_ = std::make_unique<AltStreamWriter>(path, metadata, options);
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

void EventSink::add(const Event& event) {
  std::lock_guard lock(queue_lock_);
  if (closed_) {
    ++dropped_;
    return;
  }
  queue_.push_back(event);
}

void EventSink::write_locked(std::vector<Event>& events) {
  if (events.empty() || failed_ || !writer_) return;
  try {
    Trace trace;
    trace.reserve(events.size());
    for (const Event& event : events) trace.push_back(event);
    writer_->append(trace);
    written_ += events.size();
  } catch (const std::exception& e) {
    failed_ = true;
    std::fprintf(stderr, "alloclab: CUDA tracing stopped, cannot write %s: %s\n", path_.c_str(),
                 e.what());
  }
  events.clear();
}

void EventSink::flush() {
  // The file lock is taken first so that two flushes cannot write their batches out of order.
  std::lock_guard file(file_lock_);
  std::vector<Event> batch;
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
