#pragma once
// The preload tracer's life cycle (life_cycle.cpp): initialisation on the first event or in the
// library constructor, the writer process started in the constructor (and in a traced fork
// child), flushes at exit, on fatal signals and before exec, and the end of the trace.
namespace alloclab::preload {

// Finds the real allocation functions and decides, from the environment, whether this process
// is traced. Safe to call from the first malloc of the process; idempotent.
void initialize();
// hooks.cpp: the real allocation functions behind the interposed ones.
void resolve_real_functions();

// Before exec replaces this image, or _exit ends it without exit handlers: every event so far
// goes to the file (processes.cpp's hooks).
void flush_before_image_ends();

// Writes `text` to standard error, if that is still the descriptor it was when tracing started:
// a program may close its stderr and open a file of its own that takes number 2, and the
// tracer's messages must not land in that file.
void say(const char* text);

}  // namespace alloclab::preload
