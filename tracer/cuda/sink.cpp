#include "sink.hpp"

#include <cstdio>
#include <exception>

#include "alloclab/trace/trace.hpp"

namespace alloclab::cuda_tracer {

EventSink::EventSink(const std::string& path, const nlohmann::json& metadata,
                     std::chrono::milliseconds period, void (*writer_setup)())
    : path_(path) {
  AltWriteOptions options;
  options.zstd_level = 3;
  writer_ = std::make_unique<AltStreamWriter>(path, metadata, options);
  thread_ = std::thread([this, period, writer_setup] {
    if (writer_setup) writer_setup();
    writer_loop(period);
  });
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

void EventSink::writer_loop(std::chrono::milliseconds period) {
  std::unique_lock lock(stop_lock_);
  while (!stop_) {
    stop_signal_.wait_for(lock, period, [this] { return stop_; });
    lock.unlock();
    flush();
    lock.lock();
  }
}

void EventSink::close() {
  {
    std::lock_guard lock(stop_lock_);
    stop_ = true;
  }
  stop_signal_.notify_all();
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

}  // namespace alloclab::cuda_tracer
