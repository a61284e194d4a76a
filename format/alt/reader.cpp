#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/error.hpp"
#include "codec.hpp"
#include "layout.hpp"
#include "legacy_versions.hpp"

namespace alloclab {
namespace {

using detail::get_u32;

// The input named `path`, opened for reading, with its size when it has one (a regular file).
struct OpenedInput {
  int fd = -1;
  bool regular = false;
  std::size_t size = 0;
};

OpenedInput open_input(const std::string& path) {
  refuse_directory(path);
  OpenedInput in;
  in.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in.fd < 0) throw InputError(path + ": cannot open for reading: " + std::strerror(errno));
  struct stat st = {};
  if (::fstat(in.fd, &st) != 0) {
    const int error = errno;
    ::close(in.fd);
    throw InputError(path + ": cannot open for reading: " + std::strerror(error));
  }
  in.regular = S_ISREG(st.st_mode);
  in.size = in.regular ? static_cast<std::size_t>(std::max<off_t>(0, st.st_size)) : 0;
  return in;
}

// Reads a pipe (or any input without a size) to its end, handing each block to `sink`. Input
// that does not start with the .alt magic ends after its first bytes: the loader refuses it
// from those, and an endless input (/dev/zero) ends there instead of filling memory or disk.
void read_stream(int fd, const std::string& path,
                 const std::function<void(const std::uint8_t*, std::size_t)>& sink) {
  std::vector<std::uint8_t> block(std::size_t{1} << 20);
  std::size_t total = 0;
  for (;;) {
    // The magic's bytes first, alone, so nothing past them is read from input that lacks it.
    const std::size_t wanted =
        total < detail::alt_magic.size() ? detail::alt_magic.size() - total : block.size();
    const ssize_t got = ::read(fd, block.data(), wanted);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path + ": read error: " + std::strerror(errno));
    if (got == 0) return;
    sink(block.data(), static_cast<std::size_t>(got));
    const std::size_t before = total;
    total += static_cast<std::size_t>(got);
    if (before < detail::alt_magic.size() && total <= detail::alt_magic.size() &&
        std::memcmp(block.data(), detail::alt_magic.data() + before, total - before) != 0)
      return;
  }
}

std::vector<std::uint8_t> read_whole_file(const std::string& path) {
  const OpenedInput in = open_input(path);
  std::vector<std::uint8_t> bytes;
  try {
    if (in.regular) {
      bytes.resize(in.size);
      for (std::size_t done = 0; done < in.size;) {
        const ssize_t got =
            ::pread(in.fd, bytes.data() + done, in.size - done, static_cast<off_t>(done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) throw InputError(path + ": read error");
        done += static_cast<std::size_t>(got);
      }
    } else {
      read_stream(in.fd, path, [&](const std::uint8_t* data, std::size_t n) {
        bytes.insert(bytes.end(), data, data + n);
      });
    }
  } catch (...) {
    ::close(in.fd);
    throw;
  }
  ::close(in.fd);
  return bytes;
}

// A pipe's content in an unlinked temporary file (in $TMPDIR, else /tmp), so that a streamed
// load reads it at any offset while holding no more of it in memory than of a regular file.
// Returns the temporary file's descriptor; the file goes away when it is closed.
int spool_to_temporary_file(int fd, const std::string& path) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  int out = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (out < 0) {  // a file system without O_TMPFILE: a named file, unlinked at once
    std::string name = (dir / "alloclab-pipe-XXXXXX").string();
    out = ::mkostemp(name.data(), O_CLOEXEC);
    if (out >= 0) ::unlink(name.c_str());
  }
  if (out < 0)
    throw InputError(path + ": cannot make a temporary copy of this pipe in " + dir.string() +
                     ": " + std::strerror(errno));
  try {
    read_stream(fd, path, [&](const std::uint8_t* data, std::size_t n) {
      while (n > 0) {
        const ssize_t put = ::write(out, data, n);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0)
          throw InputError(path + ": cannot copy this pipe to a temporary file in " + dir.string() +
                           ": " + std::strerror(errno));
        data += put;
        n -= static_cast<std::size_t>(put);
      }
    });
  } catch (...) {
    ::close(out);
    throw;
  }
  return out;
}

// A file source reads this much ahead of what at() asks for, unless the caller knows better: a
// walk over the chunk headers alone must not read the payloads between them.
inline constexpr std::size_t default_read_ahead = std::size_t{1} << 20;

// Where the loader gets the file's bytes: at(offset, n) points at n bytes of the file (all
// there: callers check the size first), valid until the next call.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::size_t size() const = 0;
  virtual const std::uint8_t* at(std::size_t offset, std::size_t n,
                                 std::size_t read_ahead = default_read_ahead) = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {}
  std::size_t size() const override { return bytes_.size(); }
  const std::uint8_t* at(std::size_t offset, std::size_t, std::size_t) override {
    return bytes_.data() + offset;
  }

 private:
  std::vector<std::uint8_t> bytes_;
};

// Reads through a window, so that a streamed load never holds the file: chunk headers, the
// resynchronising scan and the metadata are read a window at a time, payloads into each job.
class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::string& path) : path_(path) {
    const OpenedInput in = open_input(path);
    fd_ = in.fd;
    size_ = in.size;
    if (in.regular) return;
    // A pipe can be read only once, in order; the loader reads parts of the file again.
    try {
      fd_ = spool_to_temporary_file(in.fd, path);
    } catch (...) {
      ::close(in.fd);
      throw;
    }
    ::close(in.fd);
    struct stat st = {};
    if (::fstat(fd_, &st) != 0) {
      ::close(fd_);
      throw InputError(path + ": cannot read the temporary copy of this pipe");
    }
    size_ = static_cast<std::size_t>(std::max<off_t>(0, st.st_size));
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  std::size_t size() const override { return size_; }
  const std::uint8_t* at(std::size_t offset, std::size_t n, std::size_t read_ahead) override {
    if (offset < window_start_ || offset + n > window_start_ + window_.size()) {
      window_.resize(std::min(std::max(n, read_ahead), size_ - offset));
      read(offset, window_.data(), window_.size());
      window_start_ = offset;
    }
    return window_.data() + (offset - window_start_);
  }

  void read(std::size_t offset, std::uint8_t* into, std::size_t n) const {
    while (n > 0) {
      const ssize_t got = ::pread(fd_, into, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw InputError(path_ + ": read error");
      into += got;
      offset += static_cast<std::size_t>(got);
      n -= static_cast<std::size_t>(got);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::size_t size_ = 0;
  std::vector<std::uint8_t> window_;
  std::size_t window_start_ = 0;
};

struct ChunkHeader {
  std::uint32_t events = 0;
  std::uint32_t group_position = 0;  // chunks of its group before it
  std::uint32_t stored = 0;
  std::uint32_t raw = 0;
  std::uint32_t payload_crc = 0;
};

// A chunk header is trusted only when its own checksum matches and its numbers are sane.
bool parse_chunk_header(const std::uint8_t* p, std::uint32_t version, ChunkHeader& h) {
  if (get_u32(p) != detail::alt_chunk_magic) return false;
  if (get_u32(p + 20) != detail::crc32_of(p, 20)) return false;
  const std::uint32_t events_field = get_u32(p + 4);
  if (version >= detail::alt_grouped_version) {
    h.group_position = events_field >> detail::alt_group_position_shift;
    h.events = events_field & ((1u << detail::alt_group_position_shift) - 1);
  } else {
    detail::legacy::split_events_field(events_field, h.events, h.group_position);
  }
  h.stored = get_u32(p + 8);
  h.raw = get_u32(p + 12);
  h.payload_crc = get_u32(p + 16);
  return h.events <= detail::alt_max_chunk_events && h.raw <= detail::alt_max_chunk_raw_bytes;
}

class AltLoader {
 public:
  AltLoader(std::string path, ByteSource& source, bool tail_only = false)
      : path_(std::move(path)), tail_only_(tail_only), source_(source) {}

  // The header only: no chunk is read.
  nlohmann::json metadata() {
    parse_header();
    return std::move(trace_.metadata);
  }

  Trace load(AltLoadStats& stats) {
    stats.file_bytes = source_.size();
    const std::size_t first_chunk = parse_header();
    read_chunks(first_chunk, stats);
    if (!tail_only_) refuse_if_nothing_was_read(stats, trace_.warnings);
    return std::move(trace_);
  }

  // The events pass through trace_ a batch of chunks at a time; everything else (origins,
  // frames, stacks, warnings, statistics) comes out as read_chunks makes it.
  AltStreamResult stream(AltLoadStats& stats, FileSource& file,
                         const std::function<void(std::uint64_t)>& begin,
                         const std::function<void(const Trace&)>& consume,
                         std::uint64_t batch_events) {
    stats.file_bytes = source_.size();
    AltStreamResult result;
    std::vector<ChunkJob> jobs = scan_chunks(parse_header(), stats);
    // A copy: the batches keep the metadata too (resolution reads it: a trace that starts at a
    // fork counts frees of unknown blocks as inherited).
    result.metadata = trace_.metadata;
    std::uint64_t slots = 0;
    for (const ChunkJob& job : jobs) slots += job.header.events;
    begin(slots);
    Trace::MemoryParts memory;
    std::uint64_t big_sizes = 0, stack_ids = 0;
    for (std::size_t first = 0; first < jobs.size();) {
      std::size_t last = first;
      std::uint64_t events = 0;
      // A group is decoded whole, within one batch.
      while (last < jobs.size() &&
             (last == first || events + jobs[last].header.events <= batch_events ||
              continues(jobs[last - 1], jobs[last])))
        events += jobs[last++].header.events;
      std::vector<ChunkJob> batch(
          std::make_move_iterator(jobs.begin() + static_cast<std::ptrdiff_t>(first)),
          std::make_move_iterator(jobs.begin() + static_cast<std::ptrdiff_t>(last)));
      std::size_t base = 0;
      for (ChunkJob& job : batch) {
        job.base = base;
        base += job.header.events;
        job.buffer.resize(job.header.stored);
        file.read(job.offset + detail::alt_chunk_header_bytes, job.buffer.data(),
                  job.buffer.size());
        job.payload = job.buffer.data();
      }
      trace_.extend(base);
      decode_all(batch);
      commit_all(batch, stats);
      stats.events += trace_.size();
      memory.label_bytes += trace_.memory_parts().label_bytes;
      big_sizes += count_big_sizes();
      stack_ids += count_stack_ids();
      consume(trace_);
      trace_.clear_events();
      first = last;
    }
    // What read_alt's trace would hold: columns sized once for every chunk with an intact
    // header, side tables grown one entry at a time (so to the next power of two).
    memory.column_bytes = slots * Trace::MemoryParts::column_bytes_per_event;
    memory.big_size_slots = big_sizes ? std::bit_ceil(big_sizes) : 0;
    memory.stack_id_slots = stack_ids ? std::bit_ceil(stack_ids) : 0;
    memory.table_bytes = trace_.memory_parts().table_bytes;
    result.memory_bytes = memory.bytes();
    result.warnings = sorted_warnings();
    refuse_if_nothing_was_read(stats, result.warnings);
    result.origins = trace_.origins();
    return result;
  }

 private:
  std::uint64_t count_big_sizes() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < trace_.size(); ++i)
      n += trace_.size_of(i) >= Trace::big_size_marker;
    return n;
  }
  std::uint64_t count_stack_ids() const {
    if (!trace_.has_stacks()) return 0;
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < trace_.size(); ++i) n += trace_.stack_id(i) != 0;
    return n;
  }

  // A file with chunks of which none could be read is not an empty trace: an empty report of it
  // would look like an answer. (A header and no chunk at all is an empty trace, well formed.)
  void refuse_if_nothing_was_read(const AltLoadStats& stats,
                                  const std::vector<std::string>& warnings) const {
    if (stats.events > 0 || stats.damaged_chunks == 0 || warnings.empty()) return;
    std::string what = warnings.front() + "; no event could be read from the file";
    if (stats.damaged_chunks > 1)
      what += " (" + std::to_string(stats.damaged_chunks) + " damaged chunks)";
    throw InputError(what);
  }

  [[noreturn]] void header_error(std::uint64_t offset, const std::string& what) const {
    throw_at_offset(path_, offset, -1, what);
  }

  void warn(std::uint64_t offset, std::uint64_t chunk, const std::string& what) {
    warnings_.emplace_back(offset, path_ + "@" + std::to_string(offset) + ", chunk " +
                                       std::to_string(chunk) + ": " + what);
  }

  std::vector<std::string> sorted_warnings() {
    std::stable_sort(warnings_.begin(), warnings_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (auto& [offset, text] : warnings_) out.push_back(std::move(text));
    warnings_.clear();
    return out;
  }

  // How far ahead of this reader's format version a file's may be and still be taken for a
  // newer alloclab's (versions go up one at a time); further ahead, the version field is damaged.
  static constexpr std::uint32_t max_version_lead = 16;

  std::size_t parse_header() {
    const std::size_t size = source_.size();
    if (size == 0) header_error(0, "empty file, not an alloclab trace");
    const std::size_t magic_bytes = std::min(size, detail::alt_magic.size());
    if (std::memcmp(source_.at(0, magic_bytes), detail::alt_magic.data(), magic_bytes) != 0)
      header_error(0, "not an alloclab trace (bad magic)");
    if (size < detail::alt_fixed_header_bytes)
      header_error(size, "truncated header (" + std::to_string(size) + " bytes)");
    const std::uint32_t version = get_u32(source_.at(8, 4));
    version_ = version;
    if (version == 0) header_error(8, "invalid format version 0, the header is damaged");
    // Versions go up one at a time: one far beyond this reader's is a damaged field, not the
    // future (a flipped high byte reads as billions).
    if (version > alt_format_version + max_version_lead)
      header_error(8, "format version " + std::to_string(version) +
                          " is impossible (alloclab's formats are 1 to " +
                          std::to_string(alt_format_version) + "), the header is damaged");
    const std::uint32_t metadata_bytes = get_u32(source_.at(12, 4));
    if (metadata_bytes > detail::alt_max_metadata_bytes)
      header_error(12, "metadata length " + std::to_string(metadata_bytes) + " is implausible");
    const std::size_t header_end = detail::alt_fixed_header_bytes + metadata_bytes + 4;
    if (size < header_end)
      header_error(size, "truncated header (metadata needs " + std::to_string(header_end) +
                             " bytes, file has " + std::to_string(size) + ")");
    const std::uint8_t* header = source_.at(0, header_end);
    // The checksum covers the version: a version a little ahead whose checksum fails is damage
    // too, and only an intact one is a newer writer's.
    if (get_u32(header + header_end - 4) != detail::crc32_of(header + 8, 8 + metadata_bytes))
      header_error(header_end - 4, version > alt_format_version
                                       ? "header checksum mismatch (its format version reads " +
                                             std::to_string(version) + "), the header is damaged"
                                       : std::string("header checksum mismatch"));
    if (version > alt_format_version)
      header_error(8, "format version " + std::to_string(version) +
                          " is newer than this alloclab reads (" +
                          std::to_string(alt_format_version) + "); upgrade alloclab");
    try {
      trace_.metadata =
          nlohmann::json::parse(header + detail::alt_fixed_header_bytes, header + header_end - 4);
    } catch (const nlohmann::json::exception& e) {
      header_error(detail::alt_fixed_header_bytes,
                   std::string("metadata is not JSON: ") + e.what());
    }
    return header_end;
  }

  // Next offset after `pos` where a valid chunk header starts, or the file size.
  std::size_t resynchronise(std::size_t pos) {
    ChunkHeader h;
    std::size_t found = source_.size();
    for (std::size_t at = pos + 1; at + detail::alt_chunk_header_bytes <= source_.size(); ++at) {
      const std::uint8_t* p = source_.at(at, detail::alt_chunk_header_bytes);
      if (p[0] == 0x41 && parse_chunk_header(p, version_, h)) {
        found = at;
        break;
      }
    }
    return found;
  }

  // read_alt_tail reads the chunk headers alone, then one payload.
  std::size_t header_read_ahead() const {
    return tail_only_ ? detail::alt_chunk_header_bytes : default_read_ahead;
  }

  // One chunk whose header is intact and whose payload is all there.
  struct ChunkJob {
    std::size_t offset = 0;
    std::uint64_t index = 0;
    ChunkHeader header;
    std::size_t base = 0;  // first event slot
    std::string problem;   // set when decoding fails
    detail::ChunkExtras extras;
    const std::uint8_t* payload = nullptr;
    std::vector<std::uint8_t> buffer;  // the payload, when read from a file one batch at a time
  };

  void read_chunks(std::size_t pos, AltLoadStats& stats) {
    std::vector<ChunkJob> jobs = scan_chunks(pos, stats);
    if (tail_only_) jobs = last_intact_chunk(std::move(jobs), stats);
    // From here on nothing else reads the source, so a file window stays valid (tail_only_
    // keeps one job).
    for (ChunkJob& job : jobs)
      job.payload = source_.at(job.offset + detail::alt_chunk_header_bytes, job.header.stored);
    std::size_t total = trace_.size();
    for (ChunkJob& job : jobs) {
      job.base = total;
      total += job.header.events;
    }
    trace_.extend(total - trace_.size());
    decode_all(jobs);
    commit_all(jobs, stats);
    stats.events += trace_.size();
    for (std::string& text : sorted_warnings()) trace_.warnings.push_back(std::move(text));
  }

  // read_alt_tail: keeps the last chunk whose payload checksum holds, to decode (without its
  // addresses, which in version 7 may need the chunks of its group before it), and counts the
  // events of those before it from their (checksummed) headers: reading every payload back made
  // `record` end later by the time to read the whole file, for damage that read_alt reports.
  std::vector<ChunkJob> last_intact_chunk(std::vector<ChunkJob> jobs, AltLoadStats& stats) {
    std::vector<ChunkJob> last;
    for (std::size_t k = jobs.size(); k-- > 0;) {
      ChunkJob& job = jobs[k];
      if (!last.empty()) {
        stats.events += job.header.events;
        continue;
      }
      const std::uint8_t* payload =
          source_.at(job.offset + detail::alt_chunk_header_bytes, job.header.stored);
      if (detail::crc32_of(payload, job.header.stored) != job.header.payload_crc) {
        warn(job.offset, job.index,
             "checksum mismatch; chunk skipped, " + std::to_string(job.header.events) +
                 " events lost");
        ++stats.damaged_chunks;
        stats.lost_events += job.header.events;
      } else {
        last.push_back(std::move(job));
      }
    }
    return last;
  }

  // Walks the chunk headers: what can be decoded becomes a job, damage becomes a warning.
  std::vector<ChunkJob> scan_chunks(std::size_t pos, AltLoadStats& stats) {
    std::vector<ChunkJob> jobs;
    std::uint64_t chunk = 0;
    std::uint64_t group_events = 0;  // in the group of the chunk read last, so far
    const std::size_t size = source_.size();
    while (pos < size) {
      const std::size_t remaining = size - pos;
      if (remaining < detail::alt_chunk_header_bytes) {
        warn(pos, chunk,
             "truncated chunk header (" + std::to_string(remaining) +
                 " bytes); the rest of the file is ignored");
        ++stats.damaged_chunks;
        break;
      }
      ChunkHeader h;
      if (!parse_chunk_header(source_.at(pos, detail::alt_chunk_header_bytes, header_read_ahead()),
                              version_, h)) {
        const std::size_t next = resynchronise(pos);
        warn(pos, chunk,
             next < size ? "damaged chunk header; skipped " + std::to_string(next - pos) +
                               " bytes to the next intact chunk"
                         : "damaged chunk header and no intact chunk after it; the rest of the "
                           "file (" +
                               std::to_string(size - pos) + " bytes) is lost");
        ++stats.damaged_chunks;
        ++chunk;
        pos = next;
        continue;
      }
      ++stats.chunks;
      const std::size_t payload = pos + detail::alt_chunk_header_bytes;
      if (size - payload < h.stored) {
        warn(pos, chunk,
             "truncated chunk (needs " + std::to_string(h.stored) + " bytes, " +
                 std::to_string(size - payload) + " remain); " + std::to_string(h.events) +
                 " events lost");
        ++stats.damaged_chunks;
        stats.lost_events += h.events;
        break;
      }
      group_events = h.group_position == 0 ? h.events : group_events + h.events;
      if (group_events > detail::alt_max_group_events) {
        // Its address state would grow past any chunk's: a damaged or hostile header, refused
        // before anything is allocated for its events (the rest of its group is lost with it).
        warn(pos, chunk,
             "its group would hold more than " + std::to_string(detail::alt_max_group_events) +
                 " events; chunk skipped, " + std::to_string(h.events) + " events lost");
        ++stats.damaged_chunks;
        stats.lost_events += h.events;
        ++chunk;
        pos = payload + h.stored;
        continue;
      }
      ChunkJob job;
      job.offset = pos;
      job.index = chunk;
      job.header = h;
      jobs.push_back(std::move(job));
      pos = payload + h.stored;
      ++chunk;
    }
    return jobs;
  }

  // Whether `job` continues the group of `before`, the job in front of it: the chunk right
  // before it in the file, one position earlier.
  static bool continues(const ChunkJob& before, const ChunkJob& job) {
    return job.index == before.index + 1 &&
           job.header.group_position == before.header.group_position + 1;
  }

  // Groups are independent, so they decode in parallel into their own slots; the chunks of a
  // group in order, each continuing the state of the one before. A chunk whose group lost an
  // earlier chunk cannot be decoded.
  void decode_all(std::vector<ChunkJob>& jobs) {
    std::vector<std::size_t> group_starts;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      ChunkJob& job = jobs[i];
      if (job.header.group_position == 0 || tail_only_) {
        group_starts.push_back(i);
      } else if (i == 0 || !continues(jobs[i - 1], job)) {
        job.problem = "the chunk before it in its group is lost";
        group_starts.push_back(i);  // a group of its own, which decodes nothing
      }
    }
    group_starts.push_back(jobs.size());
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
      std::vector<std::uint8_t> raw;
      detail::DecodeScratch scratch;
      for (std::size_t g; (g = next.fetch_add(1)) + 1 < group_starts.size();) {
        for (std::size_t i = group_starts[g]; i < group_starts[g + 1]; ++i) {
          ChunkJob& job = jobs[i];
          if (i > group_starts[g] && !jobs[i - 1].problem.empty())
            job.problem = "the chunk before it in its group is lost";
          if (job.problem.empty()) decode_one(job, dctx.get(), raw, scratch);
        }
      }
    };
    const std::size_t threads = std::min<std::size_t>(
        std::max(1u, std::thread::hardware_concurrency()), group_starts.size() / 4 + 1);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
  }

  void decode_one(ChunkJob& job, ZSTD_DCtx* dctx, std::vector<std::uint8_t>& raw,
                  detail::DecodeScratch& scratch) {
    const ChunkHeader& h = job.header;
    const std::uint8_t* payload = job.payload;
    if (detail::crc32_of(payload, h.stored) != h.payload_crc) {
      job.problem = "checksum mismatch";
      return;
    }
    raw.resize(h.raw);
    const std::size_t got = ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), payload, h.stored);
    if (ZSTD_isError(got)) {
      job.problem = std::string("cannot decompress: ") + ZSTD_getErrorName(got);
      return;
    }
    if (got != h.raw) {
      job.problem = "decompressed size differs from the chunk header";
      return;
    }
    std::string error;
    const detail::ChunkAddresses addresses = tail_only_ ? detail::ChunkAddresses::skip
                                             : h.group_position > 0
                                                 ? detail::ChunkAddresses::continue_group
                                                 : detail::ChunkAddresses::start_group;
    if (!detail::decode_chunk_columns(raw.data(), raw.size(), h.events, version_,
                                      trace_.columns_at(job.base), job.extras, scratch, error,
                                      addresses))
      job.problem = "bad encoding: " + error;
  }

  // In file order: merge each good chunk, drop the slots of each bad one.
  void commit_all(std::vector<ChunkJob>& jobs, AltLoadStats& stats) {
    std::size_t removed = 0;
    std::string error;
    for (ChunkJob& job : jobs) {
      const std::size_t base = job.base - removed;
      if (job.problem.empty() &&
          !detail::commit_chunk(trace_, base, job.header.events, job.extras, error))
        job.problem = error;
      if (job.problem.empty()) continue;
      warn(job.offset, job.index,
           job.problem + "; chunk skipped, " + std::to_string(job.header.events) + " events lost");
      ++stats.damaged_chunks;
      stats.lost_events += job.header.events;
      trace_.erase(base, base + job.header.events);
      removed += job.header.events;
    }
  }

  std::string path_;
  bool tail_only_ = false;
  std::uint32_t version_ = 0;
  ByteSource& source_;
  Trace trace_;
  std::vector<std::pair<std::size_t, std::string>> warnings_;  // (offset, text)
};

}  // namespace

Trace read_alt(const std::string& path, AltLoadStats* stats) {
  return parse_alt(read_whole_file(path), path, stats);
}

Trace parse_alt(std::vector<std::uint8_t> bytes, const std::string& name, AltLoadStats* stats) {
  AltLoadStats local;
  MemorySource source(std::move(bytes));
  AltLoader loader(name, source);
  Trace trace = loader.load(stats ? *stats : local);
  return trace;
}

Trace read_alt_tail(const std::string& path, AltLoadStats* stats) {
  AltLoadStats local;
  FileSource source(path);  // a chunk at a time: the file may be far larger than memory
  AltLoader loader(path, source, true);
  return loader.load(stats ? *stats : local);
}

nlohmann::json read_alt_metadata(const std::string& path) {
  FileSource source(path);
  return AltLoader(path, source).metadata();
}

AltStreamResult stream_alt(const std::string& path,
                           const std::function<void(std::uint64_t events)>& begin,
                           const std::function<void(const Trace& batch)>& consume,
                           AltLoadStats* stats, std::uint64_t batch_events) {
  AltLoadStats local;
  FileSource source(path);
  AltLoader loader(path, source);
  return loader.stream(stats ? *stats : local, source, begin, consume, batch_events);
}

bool looks_like_alt(const std::string& path) {
  // Reading a pipe's first bytes would take them from the reader that comes next.
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::ifstream in(path, std::ios::binary);
  std::uint8_t magic[8] = {};
  if (!in.read(reinterpret_cast<char*>(magic), sizeof magic)) return false;
  return std::memcmp(magic, detail::alt_magic.data(), sizeof magic) == 0;
}

}  // namespace alloclab
