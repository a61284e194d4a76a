#include "alloclab/format/alt/stream_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "chunk_writer.hpp"

namespace alloclab {
namespace {

// Descriptors far above the ones a program uses, so a program that closes 0..N or reuses low
// numbers does not stumble over ours (and we do not write into its files).
constexpr int high_fd_floor = 1000;

int move_high(int fd) {
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, high_fd_floor);
  if (high < 0) return fd;  // RLIMIT_NOFILE below the floor: keep the low one
  ::close(fd);
  return high;
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int error) {
  throw std::system_error(error, std::generic_category(), what + " " + path);
}

}  // namespace

AltStreamWriter::AltStreamWriter(const std::string& path, const nlohmann::json& metadata,
                                 const AltWriteOptions& options)
    : path_(path), options_(options), scratch_(std::make_unique<detail::ChunkScratch>()) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", path, errno);
  // Moved high by the first append, not here: a tracer creates its file on the program's
  // thread, and the move can take milliseconds (10-30 ms seen under gVisor) that the program
  // would wait for.
  fd_ = fd;
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail("cannot stat", path, errno);
  device_ = st.st_dev;
  inode_ = st.st_ino;
  const std::vector<std::uint8_t> header = detail::build_alt_header(metadata);
  try {
    write_all(header.data(), header.size());
  } catch (...) {
    // The file is ours (O_EXCL): a half header would only be a file no reader accepts.
    struct stat named {};
    if (::lstat(path.c_str(), &named) == 0 && named.st_dev == st.st_dev &&
        named.st_ino == st.st_ino)
      ::unlink(path.c_str());
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

AltStreamWriter::~AltStreamWriter() {
  if (fd_ >= 0 && descriptor_is_ours()) ::close(fd_);
}

void AltStreamWriter::close() {
  if (fd_ < 0) return;
  if (descriptor_is_ours()) ::close(fd_);
  fd_ = -1;
}

void AltStreamWriter::append_chunk(const Trace& trace, std::size_t begin, std::size_t end) {
  if (!moved_high_) {
    moved_high_ = true;
    if (descriptor_is_ours()) fd_ = move_high(fd_);  // else write_all reopens, high
  }
  if (begin >= end) return;
  detail::build_alt_chunk(trace, begin, end, options_.zstd_level, options_.events_per_group,
                          *scratch_, chunk_);
  const std::uint64_t before = bytes_written_;
  try {
    write_all(chunk_.data(), chunk_.size());
  } catch (...) {
    // Whatever comes next cannot build on a chunk that is not in the file.
    scratch_->group = {};
    // Disk full, file size limit, I/O error: cut the partial chunk off so that the file ends
    // with its last whole chunk (best effort; a reader would skip a partial one anyway), and
    // write the next one there, not after a hole where the partial one was.
    if (fd_ >= 0 && descriptor_is_ours() && ::ftruncate(fd_, static_cast<off_t>(before)) == 0 &&
        ::lseek(fd_, static_cast<off_t>(before), SEEK_SET) == static_cast<off_t>(before))
      bytes_written_ = before;
    throw;
  }
  ++chunks_written_;
}

void AltStreamWriter::append(const Trace& trace) {
  const std::size_t per_chunk = std::max<std::size_t>(1, options_.events_per_chunk);
  for (std::size_t begin = 0; begin < trace.size(); begin += per_chunk)
    append_chunk(trace, begin, std::min(trace.size(), begin + per_chunk));
}

bool AltStreamWriter::descriptor_is_ours() const {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && static_cast<std::uint64_t>(st.st_dev) == device_ &&
         static_cast<std::uint64_t>(st.st_ino) == inode_;
}

void AltStreamWriter::reopen() {
  // The old number may now belong to the program: never close it, just stop using it.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail("cannot reopen", path_, errno);
  fd_ = move_high(fd);
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != inode_ ||
      static_cast<std::uint64_t>(st.st_dev) != device_) {
    ::close(fd_);
    fd_ = -1;
    fail("trace file was replaced:", path_, ESTALE);
  }
  ++reopens_;
}

void AltStreamWriter::write_all(const std::uint8_t* data, std::size_t size) {
  if (fd_ < 0) fail("cannot write (closed)", path_, EBADF);
  // A chunk goes out in one write(2) call when it can; a short write continues where it
  // stopped, which is also where an O_APPEND reopen continues.
  if (!descriptor_is_ours()) reopen();
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      bytes_written_ += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EBADF) {
      reopen();
      continue;
    }
    fail("cannot write", path_, n < 0 ? errno : EIO);
  }
}

}  // namespace alloclab
