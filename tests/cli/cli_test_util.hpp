#pragma once
// Running the `alloclab` binary from tests: exit status and everything it printed.
#include <array>
#include <cstdio>
#include <string>

#include <sys/wait.h>

namespace alloclab::test {

struct CliResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line, stderr merged into stdout.
inline CliResult run_shell(const std::string& command_line) {
  CliResult r;
  const std::string command = command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

inline CliResult run_cli(const std::string& args) {
  return run_shell(std::string(ALLOCLAB_CLI) + " " + args);
}

}  // namespace alloclab::test
