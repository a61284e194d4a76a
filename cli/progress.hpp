#pragma once
// A progress bar on stderr for long work, and Ctrl-C handling that lets work stop cleanly.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace alloclab::cli {

// Shows "label [#####     ] 52%" on stderr, redrawn a few times a second, only when stderr is a
// terminal and only once the work has taken more than a second. Erased when stopped.
class ProgressBar {
 public:
  ProgressBar(std::string label, std::uint64_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  std::atomic<std::uint64_t>& counter() { return done_; }

 private:
  void draw() const;
  std::string label_;
  std::uint64_t total_;
  std::atomic<std::uint64_t> done_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// While alive, SIGINT sets the returned flag instead of killing the process; a second SIGINT
// kills it as usual.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  const std::atomic<bool>& flag() const;
  bool interrupted() const { return flag().load(); }
};

}  // namespace alloclab::cli
