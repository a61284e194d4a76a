#pragma once
// A CUDA program that dies of a fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) would
// lose the events its EventSink had queued since the writer thread's last write (up to a period
// or two). These handlers have the writer thread write them first, then re-raise the signal so
// that the process dies as it would have. Like the preload tracer's (tracer/preload/writer.cpp),
// they are installed only where the disposition is SIG_DFL: a program's own handler is left
// alone. The one exception is the preload tracer's handler (`record --cuda --cpu`), which
// fatal_signal.cpp chains: see there why.
#include "sink.hpp"

namespace alloclab::cuda {

// Installs the handlers (once per signal; a second call only changes the sink) and has them
// write `sink`'s queue in this process (not in a forked child). `chain_object`: an address in
// the preload tracer's library (its alloclab_preload_guard), or null; a handler found in that
// object is called from ours instead of being left in place. `sink` must outlive the handlers
// or be taken back with clear_fatal_flush first.
void install_fatal_flush(EventSink* sink, const void* chain_object);
// The handlers stop touching the sink (they still chain and re-raise).
void clear_fatal_flush();

}  // namespace alloclab::cuda
