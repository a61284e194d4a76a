#pragma once
// Private to alloclab_format: a safe reader of Python pickles that hold plain data only (dicts,
// lists, tuples, text, bytes, numbers, booleans, None), as torch.cuda.memory._dump_snapshot()
// writes them with Python's pickle module, protocols 2 to 5.
//
// A pickle is a program for a stack machine, and Python's own unpickler runs whatever it names
// (GLOBAL os system + REDUCE runs a shell command). This reader runs none of it: an opcode that
// would import a name, call, build or persist an object, or any opcode it does not know, is
// refused with the byte it is at. It also guards against damaged or hostile files: memo
// references are checked, nesting (MARK) is bounded, a length is checked against what the input
// still holds before anything is allocated for it (and where the input's size is unknown, read
// in pieces), integers beyond 64 bits are refused.
#include <cstdint>
#include <istream>
#include <optional>
#include <string>

#include "plain_tree.hpp"

namespace alloclab::interchange_detail {

// Bounds on one pickle: its bytes (a pipe that never ends meets it), and open MARKs (Python's
// pickler nests one per container being filled; a snapshot nests a few).
inline constexpr std::uint64_t max_pickle_bytes = std::uint64_t{4} << 30;
inline constexpr std::size_t max_pickle_marks = 1000;

struct PickleDocument {
  PlainTree tree;
  PlainTree::Id root = 0;
  // Set when the input ends before the pickle does (STOP): what was read up to there is kept,
  // each container the cut left unfinished is marked (PlainTree::is_cut), and the root is the
  // outermost of them.
  struct Cut {
    std::uint64_t offset = 0;  // the byte where the unfinished opcode starts
    std::string what;          // e.g. "the input ends inside a text of 40 bytes"
  };
  std::optional<Cut> cut;
};

// Reads one pickle from `in`. `size`, when known, is how many bytes `in` holds. Throws
// InputError "NAME: byte N: what" for anything but a clean end of input; an input that ends
// before any value is complete is an error too.
PickleDocument read_pickle(std::istream& in, const std::string& name,
                           std::optional<std::uint64_t> size,
                           std::uint64_t max_bytes = max_pickle_bytes);

}  // namespace alloclab::interchange_detail
