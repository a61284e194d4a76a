#include "alloclab/launch/program_wait.hpp"

#include <string.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>

namespace alloclab::launch {
namespace {

volatile sig_atomic_t g_program = 0;
struct sigaction g_old_int, g_old_quit, g_old_term;
bool g_saved = false;

void pass_signal_on(int signal) {
  if (g_program > 0) kill(static_cast<pid_t>(g_program), signal);
}

}  // namespace

int wait_for_program(pid_t program, struct rusage& usage) {
  struct sigaction ignore {
  }, pass_on{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &g_old_int);
  sigaction(SIGQUIT, &ignore, &g_old_quit);
  g_program = program;
  pass_on.sa_handler = pass_signal_on;
  sigemptyset(&pass_on.sa_mask);
  sigaction(SIGTERM, &pass_on, &g_old_term);
  g_saved = true;
  int raw = 0;
  while (wait4(program, &raw, 0, &usage) < 0 && errno == EINTR) {
  }
  g_program = 0;  // at once: its pid may be reused once reaped
  return raw;
}

void restore_signals() {
  if (!g_saved) return;
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGQUIT, &g_old_quit, nullptr);
  g_saved = false;
}

int program_exit_status(int raw, const std::string& command) {
  if (!WIFSIGNALED(raw)) return WEXITSTATUS(raw);
  std::fprintf(stderr, "alloclab: %s killed by signal %d (%s)\n", command.c_str(), WTERMSIG(raw),
               strsignal(WTERMSIG(raw)));
  return 128 + WTERMSIG(raw);
}

void default_signals_for_program() {
  signal(SIGINT, SIG_DFL);
  signal(SIGQUIT, SIG_DFL);
}

}  // namespace alloclab::launch
