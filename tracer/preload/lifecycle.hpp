#pragma once
// How the tracer follows a program's processes (fork, exec) and tells `alloclab record` which
// files it wrote. Decisions travel from image to image in the environment:
//   ALLOCLAB_OUTPUT       the first image's trace; every other image derives its name from it
//   ALLOCLAB_STARTED_PID  set by the first image (`record` seeds it with 0 so that the first
//                         image can change it in place, where even a saved envp sees it): an
//                         image that finds it non-zero was started by exec
//   ALLOCLAB_FOLLOW_FORK, ALLOCLAB_FOLLOW_EXEC  "1": forked children / exec'd images are traced
//   ALLOCLAB_FILE_LIST    a file `record` created: each traced image appends its trace's name
//                         ("trace PATH"), and "incomplete PATH<TAB>WHY" when it stopped writing
#include <signal.h>

#include <string>

namespace alloclab::preload {

enum class Image { root, forked, execed };

struct ImageDecision {
  Image image;
  bool traced;
};
// Reads the environment only (no allocation): safe from the first malloc of the process.
ImageDecision decide_image(int pid);
bool follow_fork();
const char* image_name(Image image);
// Tells images exec'd from this one (in place or in children) that they are not the first.
void mark_first_image_started(int pid);

// The trace of this image: ALLOCLAB_OUTPUT for the root; <stem>.<pid>.alt for the others,
// then <stem>.<pid>.2.alt, ... when an earlier image of the same pid took that name.
std::string trace_path(Image image, int pid, int attempt);
void list_trace(const std::string& path);
void list_incomplete(const std::string& path, const std::string& why);

// Finds the real exec functions; called once, where dlsym may allocate.
void resolve_exec_functions();

// RLIMIT_FSIZE makes a write past the limit raise SIGXFSZ, whose default action kills the
// program. The writer thread blocks every signal; other threads that write a trace (the
// constructor, a forked child, the final flush) hold one of these: SIGXFSZ stays blocked, and
// one raised meanwhile is taken off again, so the write just fails with EFBIG.
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
