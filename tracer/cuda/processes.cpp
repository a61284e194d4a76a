#include "processes.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <string_view>

namespace alloclab::cuda {

ProcessDecision decide_process(std::uint64_t owner, std::uint64_t pid, bool follow) {
  if (owner == 0 || owner == pid) return {true, true, follow};
  return {follow, false, follow};
}

const char* image_label(const ProcessDecision& process, bool took_follower_name) {
  if (!process.root) return "follower";
  return took_follower_name ? "exec" : "root";
}

std::string follower_trace_path(const std::string& output, std::uint64_t pid, int attempt) {
  std::string stem = output;
  const auto drop = [&stem](std::string_view ending) {
    if (stem.size() > ending.size() && stem.ends_with(ending))
      stem.resize(stem.size() - ending.size());
  };
  drop(".cuda.part");  // with --cpu: the root's part file, <output>.cuda.part
  drop(".alt");
  stem += "." + std::to_string(pid);
  if (attempt > 0) stem += "." + std::to_string(attempt + 1);
  return stem + ".cuda.alt";
}

void list_trace_file(const char* list, const std::string& path) {
  if (!list || !*list) return;
  const int fd = ::open(list, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  const std::string line = "trace " + path + "\n";
  const ssize_t ignored = ::write(fd, line.data(), line.size());
  (void)ignored;
  ::close(fd);
}

}  // namespace alloclab::cuda
