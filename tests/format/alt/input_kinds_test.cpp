// .alt input that is not a regular file: a directory is refused by name; a pipe (a FIFO, what
// `<(cat x.alt)` and `cat x.alt |` give) is read to its end, whole and streamed.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_load.hpp"
#include "alloclab/format/error.hpp"
#include "alloclab/format/synthetic.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

using test::TempFile;

template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// A FIFO at a fresh path, removed when the object dies; feed() writes bytes into it from a thread
// (the writer's open waits for a reader, as `cat x.alt > fifo` does).
class Fifo {
 public:
  explicit Fifo(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("alloclab-test-" + std::to_string(::getpid()) + "-" + name)) {
    std::filesystem::remove(path_);
    if (::mkfifo(path_.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
  }
  ~Fifo() {
    if (writer_.joinable()) writer_.join();
    std::filesystem::remove(path_);
  }
  std::string path() const { return path_.string(); }
  void feed(std::vector<char> bytes) {
    writer_ = std::thread([this, bytes = std::move(bytes)] {
      std::ofstream out(path_, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    });
  }

 private:
  std::filesystem::path path_;
  std::thread writer_;
};

// Several chunks and groups, anomalies and runs: what a pipe must deliver whole.
Trace sample_trace() {
  SyntheticOptions options;
  options.shape = SyntheticShape::transformer;
  options.min_events = 200'000;
  return generate_synthetic(options);
}

TEST(AltInputKinds, a_pipe_reads_as_the_file_it_carries) {
  TempFile file("piped.alt");
  write_alt(sample_trace(), file.path());
  const Trace expected = read_alt(file.path());
  Fifo fifo("piped.fifo");
  fifo.feed(file.bytes());
  AltLoadStats stats;
  const Trace piped = read_alt(fifo.path(), &stats);
  EXPECT_EQ(piped, expected);
  EXPECT_EQ(stats.file_bytes, file.bytes().size());
}

TEST(AltInputKinds, a_pipe_streams_as_the_file_it_carries) {
  TempFile file("streamed.alt");
  write_alt(sample_trace(), file.path());
  const ResolvedLoad expected = load_alt_resolved(file.path());
  Fifo fifo("streamed.fifo");
  fifo.feed(file.bytes());
  const ResolvedLoad piped = load_alt_resolved(fifo.path());
  EXPECT_EQ(to_json(piped.summary), to_json(expected.summary));
  EXPECT_EQ(piped.resolved.alloc_size, expected.resolved.alloc_size);
  EXPECT_EQ(piped.resolved.op_time_ns, expected.resolved.op_time_ns);
}

// A pipe that is no trace is read no further than its first bytes: an endless one ends there.
TEST(AltInputKinds, a_pipe_without_the_magic_is_refused_after_its_first_bytes) {
  for (const std::string& path : {std::string("/dev/zero"), std::string("/dev/urandom")}) {
    EXPECT_EQ(input_error([&] { read_alt(path); }),
              path + "@0, header: not an alloclab trace (bad magic)");
    EXPECT_EQ(input_error([&] { load_alt_resolved(path); }),
              path + "@0, header: not an alloclab trace (bad magic)");
  }
}

TEST(AltInputKinds, an_empty_pipe_is_an_empty_file) {
  Fifo fifo("empty.fifo");
  fifo.feed({});
  EXPECT_EQ(input_error([&] { read_alt(fifo.path()); }),
            fifo.path() + "@0, header: empty file, not an alloclab trace");
}

// Looking at a pipe's first bytes would take them from the reader that comes after.
TEST(AltInputKinds, looks_like_alt_does_not_read_a_pipe) {
  Fifo fifo("sniffed.fifo");
  EXPECT_FALSE(looks_like_alt(fifo.path()));  // would block, with no writer, if it opened it
}

// A directory was std::bad_alloc (its "size" from tellg) or a read error naming nothing.
TEST(AltInputKinds, a_directory_is_refused_by_name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("alloclab-test-" + std::to_string(::getpid()) + "-dir.alt");
  std::filesystem::create_directories(dir);
  const std::string path = dir.string();
  EXPECT_EQ(input_error([&] { read_alt(path); }), path + ": is a directory");
  EXPECT_EQ(input_error([&] { load_alt_resolved(path); }), path + ": is a directory");
  EXPECT_EQ(input_error([&] { read_alt_metadata(path); }), path + ": is a directory");
  EXPECT_FALSE(looks_like_alt(path));
  std::filesystem::remove(dir);
}

}  // namespace
}  // namespace alloclab
