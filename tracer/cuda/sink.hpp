#pragma once
// Where the CUDA tracer's events go: a queue that a writer thread appends to the .alt file
// (the format's AltStreamWriter) every `period`, so a killed program loses at most the last
// period or two. CUDA allocation calls cost microseconds, so one mutex around a vector is
// cheap next to them; events keep the order of add() calls.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/trace/alt_stream_writer.hpp"
#include "alloclab/trace/event.hpp"

namespace alloclab::cuda_tracer {

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

  std::mutex stop_lock_;
  std::condition_variable stop_signal_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace alloclab::cuda_tracer
