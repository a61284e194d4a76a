#pragma once
// Where the CUDA tracer's events go: a queue that a writer thread appends to the .alt file
// (the format's AltStreamWriter) every `period`, so a killed program loses at most the last
// period or two. CUDA allocation calls cost microseconds, so one mutex around a vector is
// cheap next to them; events keep the order of add() calls. A fatal signal handler
// (fatal_signal.hpp) has the writer thread write the queue at once: request_write/wait_written.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/alt/stream_writer.hpp"
#include "alloclab/format/event.hpp"

namespace alloclab::cuda {

class EventSink {
 public:
  // Creates `path` (never overwriting: O_EXCL) and writes the header. Throws std::system_error
  // when the file cannot be created.
  // `writer_setup` (if any) runs first on the writer thread.
  EventSink(const std::string& path, const nlohmann::json& metadata,
            std::chrono::milliseconds period = std::chrono::milliseconds(50),
            void (*writer_setup)() = nullptr);
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  void add(const Event& event);
  // Writes what is queued now, from the calling thread.
  void flush();
  // For a signal handler: async-signal-safe (atomics, a futex wake-up, nanosleep; no lock, no
  // allocation), because the interrupted thread may hold this sink's locks or malloc's.
  // request_write asks the writer thread to write everything queued so far at once and returns
  // a ticket; 0 when there is nobody to ask (the writer has stopped, or this is the writer
  // thread, which cannot wait for itself). wait_written waits (nanosleep, 1 ms steps) until
  // the writer has written past `ticket`, for at most `timeout` and not after the writer has
  // stopped; true when it did.
  std::uint64_t request_write() noexcept;
  bool wait_written(std::uint64_t ticket, std::chrono::milliseconds timeout) const noexcept;
  // Stops the writer thread, writes what is left and closes the file. Later events are counted
  // as dropped. Idempotent.
  void close();

  std::uint64_t events_written() const;
  std::uint64_t dropped() const;
  // False once a write failed (the message went to stderr once; tracing stopped).
  bool healthy() const;
  const std::string& path() const { return path_; }

 private:
  void writer_loop(std::chrono::milliseconds period);
  void write_locked(std::vector<Event>& events);

  std::string path_;
  mutable std::mutex queue_lock_;  // queue_, closed_, dropped_
  std::vector<Event> queue_;
  bool closed_ = false;
  std::uint64_t dropped_ = 0;

  mutable std::mutex file_lock_;  // writer_, written_, failed_
  std::unique_ptr<AltStreamWriter> writer_;
  std::uint64_t written_ = 0;
  bool failed_ = false;

  // The writer thread sleeps on `wake_` (a futex word: waking it takes no lock, so a signal
  // handler can), until the period is over, a write is requested or it is told to stop.
  void wake_writer() noexcept;
  std::atomic<std::uint32_t> wake_{0};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> write_requests_{0};
  std::atomic<std::uint64_t> writes_done_{0};  // the requests seen before the writer's last write
  std::atomic<bool> writer_running_{false};
  std::atomic<long> writer_tid_{0};
  std::thread thread_;
};

}  // namespace alloclab::cuda
