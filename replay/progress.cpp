#include "alloclab/replay/progress.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>

#include <unistd.h>

namespace alloclab {
namespace {

std::atomic<bool> g_interrupted{false};
struct sigaction g_previous = {};

// C linkage, as a signal handler has; static, so that it is this file's alone.
extern "C" {
static void on_interrupt(int) {
  g_interrupted.store(true);
  ::sigaction(SIGINT, &g_previous, nullptr);  // a second Ctrl-C behaves as usual
}
}

}  // namespace

std::string progress_line(const std::string& label, std::uint64_t done, std::uint64_t total) {
  done = std::min(done, total);
  const int width = 40;
  const int filled = static_cast<int>(width * done / total);
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(100 * done / total));
  return label + " [" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(width - filled), ' ') + "] " + percent;
}

ProgressBar::ProgressBar(std::string label, std::uint64_t total)
    : label_(std::move(label)), total_(total) {
  if (!::isatty(STDERR_FILENO) || total_ == 0) return;
  thread_ = std::thread([this] {
    using namespace std::chrono;
    const auto start = steady_clock::now();
    bool shown = false;
    while (!stop_.load()) {
      std::this_thread::sleep_for(milliseconds(100));
      if (!shown && steady_clock::now() - start < seconds(1)) continue;
      shown = true;
      draw();
    }
    if (shown) std::fprintf(stderr, "\r\033[K");
  });
}

ProgressBar::~ProgressBar() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void ProgressBar::draw() const {
  std::fprintf(stderr, "\r%s", progress_line(label_, done_.load(), total_).c_str());
  std::fflush(stderr);
}

InterruptGuard::InterruptGuard() {
  g_interrupted.store(false);
  struct sigaction action = {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &g_previous);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &g_previous, nullptr);
}

const std::atomic<bool>& InterruptGuard::flag() const {
  return g_interrupted;
}

}  // namespace alloclab
