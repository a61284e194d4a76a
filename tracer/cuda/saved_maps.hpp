#pragma once
// The maps a CUDA trace's frames are named with (`record --cuda --stacks N`): the tracer saves
// the text of /proc/self/maps beside the trace while the program runs (sink.hpp says when), and
// `alloclab record` names the frames with them after the program ended (launch/record_cuda.cpp),
// then removes the file. One JSON object per line: {"first_frame": F, "maps": TEXT}, TEXT
// naming the frames of the trace's frame table from index F up to the next line's F.
#include <cstddef>
#include <string>
#include <vector>

namespace alloclab::cuda {

std::string saved_maps_path(const std::string& trace_path);

struct SavedMaps {
  std::size_t first_frame = 0;
  std::string text;
};

// One line of the file, newline included.
std::string saved_maps_line(const SavedMaps& maps);

// The file's snapshots in order; a line that does not parse (the program was killed while
// writing it) is left out and named in `warnings`. Throws std::runtime_error when the file
// cannot be read.
std::vector<SavedMaps> read_saved_maps(const std::string& path, std::vector<std::string>& warnings);

}  // namespace alloclab::cuda
