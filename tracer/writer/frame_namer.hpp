#pragma once
// Names the return addresses of a running program's stacks: the loaded object that holds each
// (from /proc/PID/maps) and, where elfutils' libdwfl is built in, the function (from the
// object's symbol tables, the way a debugger would) and, where the object has debug
// information (its own or a separate debug file), the source file and line of the call (the
// innermost inlined one when the call was inlined). Runs in the writer process while the
// program runs, so a frame is named with the objects mapped at the flush after its allocation;
// an object unloaded in between leaves its frames with their address only.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace alloclab::writer {

struct FrameName {
  std::string function;    // demangled; empty when unknown
  std::string module;      // the object's path; empty when no mapped file holds the address
  std::string file;        // source file of the call; empty without debug information
  std::uint32_t line = 0;  // its line; 0 when unknown
};

// One line of /proc/PID/maps that maps a file: [start, end) of `path`.
struct MappedFile {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::string path;
};
// The file mappings in the text of a maps file (anonymous mappings and [special] ones left out).
std::vector<MappedFile> parse_maps(std::string_view text);

class FrameNamer {
 public:
  explicit FrameNamer(int pid);
  // For a program that has ended: names frames from the text of its /proc/PID/maps, saved while
  // it ran (the CUDA tracer's, `record --cuda --stacks`), opening each object by the path
  // there. Never refreshed.
  struct SavedMaps {
    std::string text;
  };
  explicit FrameNamer(const SavedMaps& maps);
  ~FrameNamer();
  FrameNamer(const FrameNamer&) = delete;
  FrameNamer& operator=(const FrameNamer&) = delete;

  FrameName name(std::uint64_t return_address);
  // The program's mappings may be read again (once) when an address is found in none: at each
  // flush, so code that appears while the program runs (dlopen) is named, but a frame outside
  // every object (JIT code) does not have the maps read for each frame.
  void allow_refresh() { may_refresh_ = true; }

 private:
  bool refresh();
  const MappedFile* file_of(std::uint64_t address) const;

  int pid_;
  bool may_refresh_ = true;
  std::vector<MappedFile> files_;
  struct Symbols;
  std::unique_ptr<Symbols> symbols_;  // libdwfl's view of the program, when built in
};

}  // namespace alloclab::writer
