#include "alloclab/format/output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "alloclab/format/error.hpp"

namespace alloclab {
namespace {

namespace fs = std::filesystem;

// What a path names: the file it reaches (following links) when there is one, and its canonical
// path for files that do not exist yet.
struct Identity {
  std::optional<std::pair<dev_t, ino_t>> file;
  std::string canonical;
};

Identity identify(const std::string& path) {
  Identity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) id.file = std::pair{st.st_dev, st.st_ino};
  std::error_code error;
  const fs::path canonical = fs::weakly_canonical(path, error);
  id.canonical = error ? fs::absolute(path).lexically_normal().string()
                       : canonical.lexically_normal().string();
  return id;
}

// Two names of one file: a hard link has another path and the same inode; a symbolic link
// reaches the same inode; a file that does not exist yet can only be named twice by its path.
bool same_file(const Identity& a, const Identity& b) {
  if (a.file || b.file) return a.file == b.file;
  return a.canonical == b.canonical;
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Why a new file cannot be created in `directory`, in words (errno alone misleads: /proc
// answers ENOENT for a directory that plainly exists).
std::string creation_refused(const std::string& directory, int error) {
  switch (error) {
    case EACCES:
    case EPERM:
      return "no permission to create files in " + directory;
    case EROFS:
      return directory + " is on a read-only file system";
    case ENOENT:
      return directory + " does not accept new files (a virtual file system)";
    case ENOSPC:
    case EDQUOT:
      return "no space (or quota) left for a new file in " + directory;
    default:
      return "cannot create a file in " + directory + ": " + std::strerror(error);
  }
}

// Throws unless `directory` exists, is a directory and accepts a new file. Only an attempt tells
// (root passes every permission check, yet cannot create a file in /proc or /sys): an unnamed
// file where the file system supports one, else a named one removed at once.
// `prefix` names the output the directory is for ("out.json: "), or nothing.
void check_directory(const std::string& prefix, const std::string& directory) {
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT) throw InputError(prefix + "directory " + directory + " does not exist");
    if (error == ENOTDIR) throw InputError(prefix + directory + " is not a directory");
    throw InputError(prefix + directory + ": " + std::strerror(error));
  }
  if (!S_ISDIR(st.st_mode)) throw InputError(prefix + directory + " is not a directory");
  int fd = ::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  const std::string probe =
      (fs::path(directory) / (".alloclab-" + std::to_string(::getpid()) + "-probe")).string();
  fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw InputError(prefix + creation_refused(directory, errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::absolute(path).lexically_normal().parent_path();
  return parent.empty() ? std::string("/") : parent.string();
}

}  // namespace

OutputPlan& OutputPlan::input(const std::string& path) {
  if (!path.empty()) inputs_.push_back(path);
  return *this;
}

OutputPlan& OutputPlan::output(const std::string& option, const std::string& path) {
  if (!path.empty()) outputs_.push_back({option, path});
  return *this;
}

OutputPlan& OutputPlan::directory(const std::string& path) {
  fs::path absolute = fs::absolute(path.empty() ? "." : path).lexically_normal();
  if (!absolute.has_filename() && absolute != absolute.root_path())
    absolute = absolute.parent_path();  // "/proc/" (from "."): named without the separator
  directories_.push_back(absolute.string());
  return *this;
}

void OutputPlan::check() const {
  std::vector<Identity> inputs;
  for (const std::string& path : inputs_) inputs.push_back(identify(path));
  std::vector<Identity> outputs;
  for (std::size_t o = 0; o < outputs_.size(); ++o) {
    const auto& [option, path] = outputs_[o];
    const Identity id = identify(path);
    for (std::size_t i = 0; i < inputs_.size(); ++i)
      if (same_file(id, inputs[i]))
        throw InputError(path + ": " + option + " would replace the input " + inputs_[i] +
                         (inputs_[i] == path ? "" : " (the same file)") + "; write it elsewhere");
    for (std::size_t earlier = 0; earlier < o; ++earlier)
      if (same_file(id, outputs[earlier]))
        throw InputError(path + ": " + outputs_[earlier].option + " and " + option +
                         " name the same file; give each output its own");
    outputs.push_back(id);
  }
  for (const auto& [option, path] : outputs_) {
    const fs::path name = fs::path(path).filename();
    if (name.empty() || name == "." || name == "..")
      throw InputError(path + ": names a directory, not a file (" + option + ")");
    struct stat link {};
    const bool exists = ::lstat(path.c_str(), &link) == 0;
    struct stat target {};
    // The file a link reaches decides: writing replaces the link, and a link to a device (as
    // /dev/stdout is) must not be replaced by a regular file.
    if (exists && ::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode))
      throw InputError(path + ": is " + std::string(kind_of(target.st_mode)) + "; " + option +
                       " writes a regular file");
    check_directory(path + ": ", directory_of(path));
    if (exists && !force_)
      throw InputError(path + (S_ISLNK(link.st_mode)
                                   ? ": already exists (a symbolic link); pass --force to replace "
                                     "the link (never the file it points to)"
                                   : ": already exists; pass --force to replace it"));
  }
  for (const std::string& directory : directories_) check_directory("", directory);
}

namespace {

// The temporary file being written, for the signal handler (a fixed buffer: no allocation there).
char g_temporary[4096];
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

// C linkage, as a signal handler has; static, so that it is this file's alone.
extern "C" {
static void remove_temporary_and_die(int sig) {
  ::unlink(g_temporary);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
}

// While alive, the signals that end a process by default remove the temporary file first.
class TemporaryFileGuard {
 public:
  explicit TemporaryFileGuard(const std::string& temporary) {
    if (temporary.size() >= sizeof g_temporary)
      throw std::runtime_error("output path too long: " + temporary);
    std::memcpy(g_temporary, temporary.c_str(), temporary.size() + 1);
    struct sigaction action = {};
    action.sa_handler = remove_temporary_and_die;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i)
      ::sigaction(kCleanupSignals[i], &action, &previous_[i]);
  }
  ~TemporaryFileGuard() {
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i)
      ::sigaction(kCleanupSignals[i], &previous_[i], nullptr);
    ::unlink(g_temporary);  // gone already after a successful rename
  }
  TemporaryFileGuard(const TemporaryFileGuard&) = delete;
  TemporaryFileGuard& operator=(const TemporaryFileGuard&) = delete;

 private:
  struct sigaction previous_[std::size(kCleanupSignals)] = {};
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

void write_atomically(const std::string& path,
                      const std::function<void(const std::string& temporary)>& write) {
  const fs::path target(path);
  const std::string temporary = (target.parent_path() / (".alloclab-" + std::to_string(::getpid()) +
                                                         "-" + target.filename().string()))
                                    .string();
  TemporaryFileGuard guard(temporary);
  try {
    write(temporary);
  } catch (const std::runtime_error& e) {
    // Writers name the file they were given, the hidden temporary; the user knows `path`.
    throw std::runtime_error(replace_all(replace_all(e.what(), temporary, path),
                                         fs::path(temporary).filename().string(), path));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  write_atomically(path, [&](const std::string& temporary) {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    write(out);
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  });
}

}  // namespace alloclab
