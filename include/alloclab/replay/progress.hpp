#pragma once
// A long replay on a terminal: a progress bar fed by ReplayOptions::progress (or
// AdviseOptions::progress), and Ctrl-C turned into ReplayOptions::cancel so that the work stops
// cleanly and says so instead of dying half-way.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace alloclab {

// "label [#####     ]  52%": a 40-character bar of `done` out of `total` (done is capped at
// total; total must not be 0).
std::string progress_line(const std::string& label, std::uint64_t done, std::uint64_t total);

// Shows progress_line on stderr, redrawn a few times a second, only when stderr is a terminal
// and only once the work has taken more than a second. Erased when stopped.
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
// kills it as usual. One at a time: the flag is the process's.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  const std::atomic<bool>& flag() const;
  bool interrupted() const { return flag().load(); }
};

}  // namespace alloclab
