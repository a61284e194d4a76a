#pragma once
// Watchdog: ends the test program, with a message, when a scope is not left within a deadline.
// Code that never ends (a probe loop over a full table, a replay stuck in one) must fail its
// test, not hold the suite until ctest's timeout.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace alloclab::test {

class Watchdog {
 public:
  // `what` names the work in the message; a string literal (it is read on the watchdog thread).
  Watchdog(int seconds, const char* what)
      : thread_([this, seconds, what] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
            std::fprintf(stderr, "%s did not finish within %d s\n", what, seconds);
            std::_Exit(1);
          }
        }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace alloclab::test
