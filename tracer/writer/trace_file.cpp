#include "trace_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "alloclab/protocol/environment.hpp"
namespace alloclab::writer {

using protocol::Image;

namespace {

const char* image_name(Image image) {
  switch (image) {
    case Image::root:
      return "root";
    case Image::forked:
      return "fork";
    case Image::execed:
      return "exec";
  }
  return "?";
}

std::string command_line_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::string line = text.str();
  while (!line.empty() && line.back() == '\0') line.pop_back();
  for (char& c : line)
    if (c == '\0') c = ' ';
  return line;
}

// The events are zstd-compressed at this level unless the writer is busy (main.cpp).
constexpr int chunk_events = static_cast<int>(protocol::buffer_records);

}  // namespace

std::string trace_path(const std::string& output, Image image, int pid, int attempt) {
  std::string path = output;
  if (image == Image::root) return path;
  // "OUT.alt.cpu.part" (record --cuda --cpu) names followers like "OUT.alt": OUT.PID.alt, next to
  // the CUDA tracer's OUT.PID.cuda.alt, with which record merges it.
  for (const std::string_view ending : {std::string_view(".cpu.part"), std::string_view(".alt")})
    if (path.size() > ending.size() && path.ends_with(ending))
      path.resize(path.size() - ending.size());
  path += "." + std::to_string(pid);
  if (attempt > 0) path += "." + std::to_string(attempt + 1);
  return path + ".alt";
}

nlohmann::json trace_metadata(const protocol::Shared& shared) {
  const protocol::RecorderSettings& settings = shared.settings;
  const int pid = shared.globals.pid;
  nlohmann::json metadata = nlohmann::json::object();
  metadata["tool_version"] = ALLOCLAB_VERSION;
  metadata["command_line"] = command_line_of(pid);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  metadata["host"] = host;
  metadata["pid"] = pid;
  metadata["clock"] = "CLOCK_MONOTONIC";
  metadata["min_size"] = shared.globals.min_size;
  metadata["stack_depth"] = settings.stack_depth;
  if (settings.stack_depth) {
    metadata["unwinder"] =
        std::string(settings.unwinder, strnlen(settings.unwinder, sizeof settings.unwinder));
  }
  metadata["time_resolution_ns"] = settings.time_resolution_ns;
  metadata["recorder"] = "alloclab record (liballoclab_preload.so)";
  metadata["image"] = image_name(settings.image);
  metadata["parent_pid"] = settings.parent_pid;
  return metadata;
}

void FileList::append(std::string line) const {
  if (path_.empty()) return;
  for (char& c : line)
    if (c == '\n') c = ' ';
  line += '\n';
  // Never created here: only the list `record` made (and still keeps) is written to.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t ignored = ::write(fd, line.data(), line.size());
  (void)ignored;
  ::close(fd);
}

void FileList::trace(const std::string& path) const {
  append(std::string(protocol::list_trace) + path);
}

void FileList::incomplete(const std::string& path, const std::string& why) const {
  append(std::string(protocol::list_incomplete) + path + "\t" + why);
}

void FileList::writer(int pid) const {
  append(std::string(protocol::list_writer) + std::to_string(pid));
}

std::unique_ptr<AltStreamWriter> create_trace(const std::string& output,
                                              const protocol::Shared& shared, const FileList& list,
                                              std::string& path) {
  const nlohmann::json metadata = trace_metadata(shared);
  AltWriteOptions options;
  options.events_per_chunk = chunk_events;
  const int pid = shared.globals.pid;
  for (int attempt = 0; attempt < 100; ++attempt) {
    path = trace_path(output, shared.settings.image, pid, attempt);
    try {
      auto writer = std::make_unique<AltStreamWriter>(path, metadata, options);
      list.trace(path);
      return writer;
    } catch (const std::exception& e) {
      // A later image of the same pid (exec in place, exec after fork) takes the next name.
      const auto* system = dynamic_cast<const std::system_error*>(&e);
      if (system && system->code().value() == EEXIST && shared.settings.image != Image::root)
        continue;
      std::fprintf(stderr, "alloclab: not tracing pid %d: %s\n", pid, e.what());
      return nullptr;
    }
  }
  std::fprintf(stderr, "alloclab: not tracing pid %d: no free name for its trace\n", pid);
  return nullptr;
}

}  // namespace alloclab::writer
