#pragma once
// The writer's file side: which file an image's trace goes to, what its header says, and the
// lines it adds to `record`'s list of files.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "alloclab/format/alt/stream_writer.hpp"
#include "alloclab/protocol/recorder_memory.hpp"

namespace alloclab::writer {

// The trace of an image: `output` (record's -o) for the root; <stem>.<pid>.alt for the others,
// then <stem>.<pid>.2.alt, ... when an earlier image of the same pid took that name.
std::string trace_path(const std::string& output, protocol::Image image, int pid, int attempt);

// What a trace's header records about the program and the recorder.
nlohmann::json trace_metadata(const protocol::Shared& shared);

// Appends lines to `record`'s list (no list: nothing to do). Each line is one write, so lines
// of several writers never mix.
class FileList {
 public:
  explicit FileList(std::string path) : path_(std::move(path)) {}
  void trace(const std::string& path) const;
  void incomplete(const std::string& path, const std::string& why) const;
  void writer(int pid) const;

 private:
  void append(std::string line) const;
  std::string path_;
};

// Creates the image's trace (never an existing file) and lists it; nullptr (and the reason
// said on standard error) when it cannot.
std::unique_ptr<AltStreamWriter> create_trace(const std::string& output,
                                              const protocol::Shared& shared, const FileList& list,
                                              std::string& path);

}  // namespace alloclab::writer
