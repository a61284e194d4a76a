#pragma once
// How the tracer follows a program's processes (fork, exec) and tells `alloclab record` which
// files it wrote. Decisions travel from image to image in the environment:
//   ALLOCLAB_OUTPUT       the first image's trace; every other image derives its name from it
//   ALLOCLAB_STARTED_PID  set by the first image (`record` seeds it with 0 so that the first
//                         image can change it in place, where even a saved envp sees it): an
//                         image that finds it non-zero was started by exec
//   ALLOCLAB_FOLLOW_FORK, ALLOCLAB_FOLLOW_EXEC  "1": forked children / exec'd images are traced
//   ALLOCLAB_FILE_LIST    a file `record` created: each traced image's writer appends its
//                         trace's name ("trace PATH"), and "incomplete PATH<TAB>WHY" when it
//                         stopped writing; an image left untraced says so ("untraced-exec PID
//                         EXE", "untraced-fork PID"), so that `record` can point to the flag; a
//                         writer process lists itself ("writer PID"): `record` waits for it
#include <signal.h>

#include "alloclab/protocol/recorder_memory.hpp"

namespace alloclab::preload {

using protocol::Image;

struct ImageDecision {
  Image image;
  bool traced;
};
// The value of environment variable `name`, or nullptr. The tracer never calls getenv or
// setenv: a program may define its own, and bash does (they read and write its shell
// variables; one setenv before its main() hid the whole environment from every getenv after
// it, so `record -- bash -c ...` lost its trace).
const char* env_value(const char* name);

// Reads the environment only (no allocation): safe from the first malloc of the process.
ImageDecision decide_image(int pid);
bool follow_fork();
// Tells images exec'd from this one (in place or in children) that they are not the first: the
// variable's slot in `environ` is pointed at the new value, so a program that hands its saved
// envp (or, like bash, an environment imported at its start) to exec passes it on.
void mark_first_image_started(int pid);

// Neither allocates (a fork child, an image whose C runtime is not up yet).
void list_untraced_exec(int pid);
void list_untraced_fork(int pid);

// Finds the real exec functions; called once, where dlsym may allocate.
void resolve_exec_functions();

// RLIMIT_FSIZE makes a write past the limit raise SIGXFSZ, whose default action kills the
// program. A thread that appends to the file list holds one of these: SIGXFSZ stays blocked,
// and one raised meanwhile is taken off again, so the write just fails with EFBIG.
class FileSizeSignalBlock {
 public:
  FileSizeSignalBlock();
  ~FileSizeSignalBlock();
  FileSizeSignalBlock(const FileSizeSignalBlock&) = delete;
  FileSizeSignalBlock& operator=(const FileSizeSignalBlock&) = delete;

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace alloclab::preload
