// The CUDA tracer's fatal-signal handlers: a program that dies of SIGSEGV, abort()... still has
// every event its EventSink had queued on disk, and dies of that signal. Each case runs in a
// forked child whose sink has a period far too long for the timer to write anything.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "alloclab/format/alt/alt.hpp"
#include "tracer/cuda/fatal_signal.hpp"
#include "tracer/cuda/sink.hpp"

namespace alloclab::cuda {
namespace {

constexpr std::uint64_t queued_events = 1000;
constexpr auto never = std::chrono::hours(1);  // the timer never writes in these tests

std::string scratch_file(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("alloclab-cuda-fatal-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

void fill(EventSink& sink) {
  for (std::uint64_t i = 0; i < queued_events; ++i) {
    Event e;
    e.op = i % 2 == 0 ? Op::alloc : Op::free;
    e.time_ns = i;
    e.address = 0x1000 + (i / 2) * 64;
    e.size = i % 2 == 0 ? 64 : 0;
    e.kind = MemoryKind::device;
    sink.add(e);
  }
}

struct Death {
  int status = 0;
  std::string stderr_text;
  std::chrono::milliseconds took{0};
};

// Runs `body` in a forked child (no core file; stderr to a file) and waits for it.
Death run_child(const std::string& name, const std::function<void()>& body) {
  const std::string err = scratch_file(name + ".stderr");
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) ::dup2(fd, STDERR_FILENO);
    // A sanitizer build (scripts/test-asan) has handlers of its own for SIGSEGV, SIGBUS and
    // SIGFPE, which the tracer rightly leaves alone: the child starts as a plain program does.
    for (const int sig : {SIGSEGV, SIGBUS, SIGFPE}) ::signal(sig, SIG_DFL);
    body();
    ::_exit(99);  // the body was meant to die
  }
  Death d;
  ::waitpid(child, &d.status, 0);
  d.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  d.stderr_text = text.str();
  return d;
}

std::string describe(const Death& d) {
  if (WIFSIGNALED(d.status)) return "killed by signal " + std::to_string(WTERMSIG(d.status));
  return "exited " + std::to_string(WEXITSTATUS(d.status)) + ": " + d.stderr_text;
}

std::size_t events_in(const std::string& path) {
  return read_alt(path).size();
}

class CudaFatalSignal : public ::testing::TestWithParam<int> {};

TEST_P(CudaFatalSignal, queued_events_are_written_and_the_process_dies_of_the_signal) {
  const int sig = GetParam();
  const std::string path = scratch_file("signal" + std::to_string(sig) + ".alt");
  const Death d = run_child("signal" + std::to_string(sig), [&] {
    auto* sink = new EventSink(path, nlohmann::json::object(), never);
    fill(*sink);
    install_fatal_flush(sink, nullptr);
    if (sig == SIGABRT)
      std::abort();
    else
      ::raise(sig);
  });
  ASSERT_TRUE(WIFSIGNALED(d.status)) << describe(d);
  EXPECT_EQ(WTERMSIG(d.status), sig);
  EXPECT_EQ(events_in(path), queued_events);
}

INSTANTIATE_TEST_SUITE_P(Signals, CudaFatalSignal,
                         ::testing::Values(SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string(sigabbrev_np(param.param));
                         });

TEST(CudaFatalSignalHandlers, a_real_fault_on_another_thread_is_written_too) {
  const std::string path = scratch_file("fault.alt");
  const Death d = run_child("fault", [&] {
    auto* sink = new EventSink(path, nlohmann::json::object(), never);
    install_fatal_flush(sink, nullptr);
    std::thread([sink] {
      fill(*sink);
      // SIGSEGV from the hardware, not raise(): a page nobody may touch.
      void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      *static_cast<volatile int*>(page) = 1;
    }).join();
  });
  ASSERT_TRUE(WIFSIGNALED(d.status)) << describe(d);
  EXPECT_EQ(WTERMSIG(d.status), SIGSEGV);
  EXPECT_EQ(events_in(path), queued_events);
}

void program_handler(int) {
  ::_exit(42);
}

TEST(CudaFatalSignalHandlers, a_program_s_own_handler_stays_and_the_other_signals_are_covered) {
  const std::string path = scratch_file("own.alt");
  const Death d = run_child("own", [&] {
    struct sigaction mine {};
    mine.sa_handler = program_handler;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGFPE, &mine, nullptr);
    auto* sink = new EventSink(path, nlohmann::json::object(), never);
    fill(*sink);
    install_fatal_flush(sink, nullptr);
    struct sigaction now {};
    sigaction(SIGFPE, nullptr, &now);
    if (now.sa_handler != program_handler) ::_exit(3);  // ours replaced the program's
    ::raise(SIGSEGV);
  });
  ASSERT_TRUE(WIFSIGNALED(d.status)) << describe(d);
  EXPECT_EQ(WTERMSIG(d.status), SIGSEGV);
  EXPECT_EQ(events_in(path), queued_events);
}

// Stands for the preload tracer's handler (record --cuda --cpu): SA_RESETHAND, then re-raise.
void tracer_like_handler(int sig, siginfo_t*, void*) {
  const char text[] = "preload tracer's handler ran\n";
  const ssize_t ignored = ::write(STDERR_FILENO, text, sizeof text - 1);
  (void)ignored;
  ::raise(sig);
}

TEST(CudaFatalSignalHandlers, the_preload_tracer_s_handler_is_chained_not_kept_alone) {
  const std::string path = scratch_file("chained.alt");
  const Death d = run_child("chained", [&] {
    struct sigaction theirs {};
    theirs.sa_sigaction = tracer_like_handler;
    theirs.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&theirs.sa_mask);
    sigaction(SIGABRT, &theirs, nullptr);
    auto* sink = new EventSink(path, nlohmann::json::object(), never);
    fill(*sink);
    // The address stands for alloclab_preload_guard: a symbol of the object holding the handler.
    install_fatal_flush(sink, reinterpret_cast<const void*>(&tracer_like_handler));
    std::abort();
  });
  ASSERT_TRUE(WIFSIGNALED(d.status)) << describe(d);
  EXPECT_EQ(WTERMSIG(d.status), SIGABRT);
  EXPECT_NE(d.stderr_text.find("preload tracer's handler ran"), std::string::npos);
  EXPECT_EQ(events_in(path), queued_events);
}

void stuck_writer() {
  std::this_thread::sleep_for(std::chrono::seconds(30));
}

TEST(CudaFatalSignalHandlers, a_stuck_writer_delays_death_by_the_bounded_wait_only) {
  const std::string path = scratch_file("stuck.alt");
  const Death d = run_child("stuck", [&] {
    // The writer thread never gets to its loop (as if blocked on a lock the crash holds).
    auto* sink = new EventSink(path, nlohmann::json::object(), never, stuck_writer);
    fill(*sink);
    install_fatal_flush(sink, nullptr);
    ::raise(SIGSEGV);
  });
  ASSERT_TRUE(WIFSIGNALED(d.status)) << describe(d);
  EXPECT_EQ(WTERMSIG(d.status), SIGSEGV);
  EXPECT_NE(d.stderr_text.find("did not write in time"), std::string::npos) << d.stderr_text;
  EXPECT_GE(d.took, std::chrono::milliseconds(2900));
  EXPECT_LT(d.took, std::chrono::seconds(20));
}

TEST(CudaFatalSignalHandlers, request_write_works_without_a_signal_and_not_after_close) {
  const std::string path = scratch_file("ticket.alt");
  EventSink sink(path, nlohmann::json::object(), never);
  fill(sink);
  const std::uint64_t ticket = sink.request_write();
  ASSERT_NE(ticket, 0u);
  EXPECT_TRUE(sink.wait_written(ticket, std::chrono::milliseconds(10000)));
  EXPECT_EQ(sink.events_written(), queued_events);
  sink.close();
  EXPECT_EQ(sink.request_write(), 0u);  // nobody left to ask
  EXPECT_FALSE(sink.wait_written(ticket + 1, std::chrono::milliseconds(10000)));
}

}  // namespace
}  // namespace alloclab::cuda
