#pragma once
// Helpers shared by the trace tests: building events and traces tersely, temp files.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_writer.hpp"
#include "alloclab/format/trace.hpp"

namespace alloclab::test {

inline Event alloc_event(std::uint64_t address, std::uint64_t size, std::uint64_t time = 0,
                         DeviceId device = cpu_device) {
  Event e;
  e.op = Op::alloc;
  e.address = address;
  e.size = size;
  e.time_ns = time;
  e.device = device;
  return e;
}
inline Event free_event(std::uint64_t address, std::uint64_t time = 0,
                        DeviceId device = cpu_device) {
  Event e;
  e.op = Op::free;
  e.address = address;
  e.time_ns = time;
  e.device = device;
  return e;
}
inline Event marker(Op op, std::string label = {}, std::uint64_t time = 0) {
  Event e;
  e.op = op;
  e.label = std::move(label);
  e.time_ns = time;
  return e;
}

// Runs `f` with the file size limit at `bytes` and SIGXFSZ ignored, as on a full disk: a write
// past the limit fails with EFBIG. Both are restored after.
template <typename F>
void with_file_size_limit(std::uint64_t bytes, F&& f) {
  struct sigaction ignore = {};
  struct sigaction previous = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGXFSZ, &ignore, &previous);
  rlimit saved{};
  getrlimit(RLIMIT_FSIZE, &saved);
  rlimit limit = saved;
  limit.rlim_cur = bytes;
  setrlimit(RLIMIT_FSIZE, &limit);
  f();
  setrlimit(RLIMIT_FSIZE, &saved);
  sigaction(SIGXFSZ, &previous, nullptr);
}

// Writes `trace` to a new stream file at `path` in chunks of 100 events, the second one while
// the file may grow by 10 bytes only, as on a full disk. Returns whether that chunk failed
// (std::system_error), as it must.
inline bool write_with_the_second_chunk_failing(const std::string& path, const Trace& trace) {
  AltWriteOptions options;
  options.events_per_chunk = 100;
  AltStreamWriter writer(path, nlohmann::json::object(), options);
  writer.append_chunk(trace, 0, 100);
  bool failed = false;
  with_file_size_limit(writer.bytes_written() + 10, [&] {
    try {
      writer.append_chunk(trace, 100, 200);
    } catch (const std::system_error&) {
      failed = true;
    }
  });
  writer.append_chunk(trace, 200, trace.size());
  return failed;
}

inline Trace make_trace(const std::vector<Event>& events) {
  Trace t;
  for (const Event& e : events) t.push_back(e);
  return t;
}

// A file under the test's temp directory, removed when the object dies.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("alloclab-test-" + std::to_string(::getpid()) + "-" + name)) {}
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }
  std::vector<char> bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write(const std::vector<char>& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::filesystem::path path_;
};

// `trace` written as .alt in chunks of 100 events, each its own group unless
// `events_per_group` says otherwise; the file's bytes (for damaging them).
inline std::vector<char> written(const Trace& trace, const TempFile& file,
                                 std::size_t events_per_group = 0) {
  AltWriteOptions options;
  options.events_per_chunk = 100;
  options.events_per_group = events_per_group;
  write_alt(trace, file.path(), options);
  return file.bytes();
}

// `trace` written as .alt in chunks of `events_per_chunk` and read back.
inline Trace written_and_read(const Trace& trace, std::size_t events_per_chunk) {
  TempFile file("written-and-read.alt");
  AltWriteOptions options;
  options.events_per_chunk = events_per_chunk;
  write_alt(trace, file.path(), options);
  return read_alt(file.path());
}

// The format version in an .alt file's header (0 when the file is shorter than a header).
inline std::uint32_t alt_file_version(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[12] = {};
  if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return 0;
  return header[8] | header[9] << 8 | header[10] << 16 |
         static_cast<std::uint32_t>(header[11]) << 24;
}

// Offset of the n-th chunk header ("ALTC") in a file's bytes, or npos.
inline std::size_t chunk_offset(const std::vector<char>& bytes, int n) {
  int seen = -1;
  for (std::size_t i = 0; i + 4 <= bytes.size(); ++i)
    if (std::memcmp(&bytes[i], "ALTC", 4) == 0 && ++seen == n) return i;
  return std::string::npos;
}

}  // namespace alloclab::test
