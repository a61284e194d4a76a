#include "alloclab/live/process_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace alloclab::live {

bool write_text_file(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return close(fd) == 0 && done == text.size();
}

void die(const char* what, const char* detail) {
  char line[1024];
  const int n = std::snprintf(line, sizeof line, "alloclab run: %s%s\n", what, detail);
  if (n > 0) {
    const ssize_t ignored = write(
        2, line,
        static_cast<std::size_t>(n) < sizeof line ? static_cast<std::size_t>(n) : sizeof line - 1);
    (void)ignored;
  }
  _exit(2);
}

}  // namespace alloclab::live
