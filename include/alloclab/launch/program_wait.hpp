#pragma once
// Waiting for the program `record` or `run` started: the signals meant for it, and what its end
// means as alloclab's exit status.
#include <sys/resource.h>
#include <sys/types.h>

#include <csignal>
#include <string>

namespace alloclab::launch {

// Waits for `program` (EINTR retried) and returns its wait status; `usage` gets its resource
// usage. Meanwhile ^C and ^\ (which the terminal sends to the whole process group) are the
// program's to handle, and a SIGTERM sent to alloclab alone (kill, a batch system stopping the
// job) is passed on to it, so that alloclab still reports. SIGINT and SIGQUIT stay ignored until
// restore_signals(): a caller that goes on collecting the program's files keeps them so.
int wait_for_program(pid_t program, struct rusage& usage);
void restore_signals();

// alloclab's exit status for the program's wait status `raw`: its own, or 128 + N when signal N
// killed it (said on stderr, naming `command`).
int program_exit_status(int raw, const std::string& command);

// In the child, before exec: what the parent ignores while it waits is the program's again.
void default_signals_for_program();

}  // namespace alloclab::launch
