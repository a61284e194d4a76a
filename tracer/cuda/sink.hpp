#pragma once
// Where the CUDA tracer's events go: a queue that a writer thread appends to the .alt file
// (the format's AltStreamWriter) every `period`, so a killed program loses at most the last
// period or two. CUDA allocation calls cost microseconds, so one mutex around a vector is
// cheap next to them; events keep the order of add() calls. A fatal signal handler
// (fatal_signal.hpp) has the writer thread write the queue at once: request_write/wait_written.
//
// Call stacks (`--stacks N`): an event may come with the return addresses of its host stack.
// The writer thread gives each distinct stack an id in the file's stack table (frames with
// their address only: nothing is named inside the program) and saves the text of
// /proc/self/maps beside the trace, in saved_maps_path(path) (saved_maps.hpp), whenever frames
// appear that the last saved maps may not cover. `alloclab record` names the frames from those maps
// after the program ends and removes that file (launch/record_cuda.cpp).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/alt/stream_writer.hpp"
#include "alloclab/format/event.hpp"
#include "alloclab/format/trace.hpp"

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

  // `stack`: return addresses, innermost first (at most max_stack_depth); empty for none.
  void add(const Event& event, std::span<const std::uint64_t> stack = {});
  static constexpr std::size_t max_stack_depth = 64;
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
  struct Queued {
    Event event;
    std::uint32_t first_frame;  // its stack in the frames queue: [first_frame, +depth)
    std::uint32_t depth;
  };
  struct Batch {
    std::vector<Queued> events;
    std::vector<std::uint64_t> frames;
    void swap(Batch& other) {
      events.swap(other.events);
      frames.swap(other.frames);
    }
  };
  void writer_loop(std::chrono::milliseconds period);
  void write_locked(Batch& batch);
  std::uint32_t intern_stack(std::span<const std::uint64_t> stack);
  void save_maps(std::size_t first_frame);

  std::string path_;
  mutable std::mutex queue_lock_;  // queue_, closed_, dropped_
  Batch queue_;
  bool closed_ = false;
  std::uint64_t dropped_ = 0;

  mutable std::mutex file_lock_;  // writer_, written_, failed_, and the stack tables below
  std::unique_ptr<AltStreamWriter> writer_;
  std::uint64_t written_ = 0;
  bool failed_ = false;
  // The events of one write, with the file's frame and stack tables (kept across writes: stack
  // ids are file-wide, and the stream writer writes each definition once).
  Trace trace_;
  struct StackHash {
    std::size_t operator()(const std::vector<std::uint64_t>& stack) const noexcept;
  };
  std::unordered_map<std::vector<std::uint64_t>, std::uint32_t, StackHash> stack_ids_;
  std::unordered_map<std::uint64_t, std::uint32_t> frame_indices_;
  // The loader's generation (host_stacks.hpp) when the maps were last saved; none yet: ~0.
  std::uint64_t maps_generation_ = ~std::uint64_t{0};

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
