#pragma once
// The program's recorded anonymous mappings, as disjoint page ranges: a mapping stops being
// mapped in more ways than a munmap of its start (a munmap of a part of it, of several at once,
// an mmap with MAP_FIXED over it, mremap), and each must be in the trace, or a later mapping at
// the same address reads as an allocation over a live block. When a part of a recorded mapping
// goes, the trace frees the block and allocates the parts that stay as blocks of their own.
#include <cstdint>

namespace alloclab::preload {

// Before the real munmap (or mremap) of [start, start + length): records the free of every
// recorded mapping it touches, and the allocation of the parts of them that stay mapped.
void mappings_forget(std::uint64_t start, std::uint64_t length);

enum class Mapping {
  untracked,    // a file, or smaller than --min-size: only what it replaced matters
  reservation,  // anonymous and PROT_NONE: kept in the table, not recorded
  recorded,     // anonymous and accessible
};

// After an mmap (or mremap) mapped [start, start + length): what it replaced is forgotten as
// above, and the new mapping is kept as `what` says (recorded: `size` bytes as requested).
void mappings_mapped(std::uint64_t start, std::uint64_t length, Mapping what, std::uint64_t size);

// After an mprotect of [start, start + length): the parts of reservations it made accessible
// are allocations from now on (each part a block of its own), the parts of recorded mappings it
// made PROT_NONE are reservations again (freed; the rest of their blocks allocated again).
void mappings_protected(std::uint64_t start, std::uint64_t length, bool accessible);

// What holds [start, start + length): `recorded` when a recorded mapping contains `start`,
// `reservation` when one reservation, none of it committed, holds the whole (nonempty) range,
// else `untracked`.
Mapping mappings_kind(std::uint64_t start, std::uint64_t length);

// Once, before the program runs: the page size, and fork handlers that keep the table whole in
// a child.
void init_mappings();

}  // namespace alloclab::preload
