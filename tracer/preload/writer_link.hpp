#pragma once
// The program's side of its writer process (alloclab-writer, a program of its own next to this
// library): starting it, asking it for flushes, stopping it at the end, and noticing when
// someone killed it. Everything here is a system call or an atomic on the shared memory: safe
// in a fork child, in a signal handler, and where the C runtime is not up.
namespace alloclab::preload {

// Starts this image's writer process (once the shared memory is made) and waits until it has
// created the trace; false (and the reason said) when it could not: then nothing is traced.
bool start_writer();
// The end of the image: the writer writes the rest and closes the file, and this waits for it
// (at most a minute), so the file is complete when the program has exited.
void stop_writer();
// Whether a writer is running for this image.
bool writer_running();
// In a fork child: the parent's writer is not the child's.
void forget_writer();

// Asks the writer for a flush soon, without waiting for it; false when there is no writer.
bool request_flush_soon();
// Asks the writer for a flush and waits for it (at most ~3 s).
void request_flush_and_wait();
// Has the writer look at the buffers now rather than at the end of its nap (a buffer filled).
void wake_writer();
// Whether the writer process has ended while the program runs on (someone killed it): then
// tracing stops, once, with a message, and the program is not held up waiting for room. Reads
// /proc; called while a thread waits for the writer.
bool writer_was_lost();

}  // namespace alloclab::preload
