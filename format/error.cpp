#include "alloclab/format/error.hpp"

#include <sys/stat.h>

namespace alloclab {

void throw_at_line(const std::string& file, std::uint64_t line, const std::string& what) {
  throw InputError(file + ":" + std::to_string(line) + ": " + what);
}

void throw_at_offset(const std::string& file, std::uint64_t offset, std::int64_t chunk,
                     const std::string& what) {
  std::string where = file + "@" + std::to_string(offset);
  where += chunk < 0 ? ", header" : ", chunk " + std::to_string(chunk);
  throw InputError(where + ": " + what);
}

void refuse_directory(const std::string& path) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(path + ": is a directory");
}

bool is_stream_input(const std::string& path) {
  struct stat st = {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

}  // namespace alloclab
