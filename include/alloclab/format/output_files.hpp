#pragma once
// The one rule for every file a front end writes, checked before any work starts: an output never
// replaces an input or another output of the same command, never replaces an existing file
// without --force, and its directory is known to accept a new file (so a long replay does not
// run first and then fail to write its report).
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace alloclab {

class OutputPlan {
 public:
  // `force`: an existing output file may be replaced (never an input, never a non-regular file).
  explicit OutputPlan(bool force) : force_(force) {}

  // A file the command reads. Compared with the outputs by file identity (device and inode:
  // also through symbolic and hard links) and by canonical path.
  OutputPlan& input(const std::string& path);
  // A file the command writes; `option` names it in messages ("--json", "OUT"). Empty paths
  // (an option not given) are ignored.
  OutputPlan& output(const std::string& option, const std::string& path);
  // A directory the command creates a file in whose name is not known yet (record's default
  // output): only checked to accept a new file.
  OutputPlan& directory(const std::string& path);

  // Throws InputError naming the path the user gave: the output is an input or another output;
  // it exists (without --force), is a directory or not a regular file; its directory does not
  // exist, is not a directory or does not accept a new file.
  void check() const;

 private:
  struct Output {
    std::string option;
    std::string path;
  };
  bool force_;
  std::vector<std::string> inputs_;
  std::vector<Output> outputs_;
  std::vector<std::string> directories_;
};

// Writes an output file whole or not at all: `write` fills a temporary file beside `path` (a
// hidden name that ends like `path`, so `.gz` and the format still follow from it), renamed over
// `path` once complete. A failed write, an exception or a SIGINT/SIGTERM/SIGHUP meanwhile
// removes the temporary file: no half-written output and no litter, ever. Errors name `path`,
// never the temporary file. Whether `path` may be written at all is OutputPlan's question,
// asked before the work starts.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string& temporary)>& write);
// write_atomically through a binary std::ostream; a stream that fails says "cannot write PATH".
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace alloclab
