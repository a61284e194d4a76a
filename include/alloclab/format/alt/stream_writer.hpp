#pragma once
// Appends to an .alt file while a program runs: the header first, then one chunk per call, each
// written with write(2) straight to the file (no stdio buffer), so whatever was appended
// survives the process being killed. Used by the preload tracer's writer thread.
//
// The file is created, never overwritten (O_EXCL, O_NOFOLLOW). A program that closes every
// descriptor (daemons, sandboxes) closes ours too: before each chunk the writer checks that its
// descriptor still names the file it created and otherwise reopens the path for appending.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/trace.hpp"

namespace alloclab {
namespace detail {
struct ChunkScratch;
}

class AltStreamWriter {
 public:
  // Creates `path` (failing if it exists) and writes the header with `metadata`. Throws
  // std::system_error (errno kept, e.g. EEXIST) when the file cannot be created or written.
  AltStreamWriter(const std::string& path, const nlohmann::json& metadata,
                  const AltWriteOptions& options = {});
  ~AltStreamWriter();
  AltStreamWriter(const AltStreamWriter&) = delete;
  AltStreamWriter& operator=(const AltStreamWriter&) = delete;

  // Appends events [begin, end) of `trace` as one chunk (at most 2^24 events). Throws
  // std::system_error on I/O failure.
  void append_chunk(const Trace& trace, std::size_t begin, std::size_t end);
  // Appends every event of `trace`, options.events_per_chunk per chunk.
  void append(const Trace& trace);
  // For the chunks appended from now on (a writer that falls behind trades size for speed).
  void set_zstd_level(int level) { options_.zstd_level = level; }
  void close();

  const std::string& path() const { return path_; }
  std::uint64_t bytes_written() const { return bytes_written_; }
  std::uint64_t chunks_written() const { return chunks_written_; }
  // How often the descriptor had been closed behind our back and the file was reopened.
  std::uint64_t reopens() const { return reopens_; }

 private:
  void write_all(const std::uint8_t* data, std::size_t size);
  bool descriptor_is_ours() const;
  void reopen();

  std::string path_;
  AltWriteOptions options_;
  int fd_ = -1;
  bool moved_high_ = false;  // fd_ still has the number it was created at until the first append
  std::uint64_t device_ = 0;
  std::uint64_t inode_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t chunks_written_ = 0;
  std::uint64_t reopens_ = 0;
  // Encoding buffers, and how many frames and stacks of the traces passed in the file already
  // defines: a caller appends batches of one growing table (Trace::clear_events keeps it), each
  // definition written once.
  std::unique_ptr<detail::ChunkScratch> scratch_;
  std::vector<std::uint8_t> chunk_;
};

}  // namespace alloclab
