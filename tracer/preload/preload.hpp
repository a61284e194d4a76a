#pragma once
// Life cycle of the preload tracer (writer.cpp): initialisation on the first event or in the
// library constructor, the writer thread, flushes at exit, on fatal signals and on demand.
namespace alloclab::preload {

// Finds the real allocation functions and decides, from the environment, whether this process
// is traced. Safe to call from the first malloc of the process; idempotent.
void initialize();
void resolve_real_functions();

// Before exec replaces this image, or _exit ends it without exit handlers: every event so far
// goes to the file (lifecycle.cpp's hooks).
void flush_before_image_ends();

// Asks the writer thread for a flush soon, without waiting for it; false when there is no
// writer thread (not started, or already stopped at exit) or when called from it.
bool request_flush_soon();
// Has the writer thread look at the buffers now rather than at the end of its nap (a buffer
// filled). A system call; safe anywhere, also in a signal handler.
void wake_writer();
// Whether the writer process has ended while the program runs on (someone killed it): then
// tracing stops, once, with a message, and the program is not held up waiting for room. False
// for a writer thread. Reads /proc; called while a thread waits for the writer.
bool writer_was_lost();

}  // namespace alloclab::preload
