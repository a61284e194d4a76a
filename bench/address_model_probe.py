#!/usr/bin/env python3
"""How well a model of glibc's heap would predict a trace's allocation addresses.

    bench/address_model_probe.py TRACE.csv [--chunk-events N] [--events N]

TRACE.csv is a trace as `alloclab convert TRACE.alt TRACE.csv` writes it. The probe replays the
allocations and frees through a simplified glibc malloc (per-size tcache bins of 7, fast bins,
free chunks coalesced with their neighbours, best fit with splitting, the top of the heap) and
counts how often the address it would hand out is the one the program got. It prints the hit
rate by what the prediction came from, for the model reset every N events (the `.alt` format's
chunks are self-contained, so any model in the format starts empty at each chunk: N = 65536 as
`alloclab record` writes them) and for the model kept over the whole trace.

Why it exists: on `bench/malloc_churn` the addresses are the one column of the format that is
well above what the program's own randomness forces (sizes and which block is freed are at
their entropy), and glibc's choices are deterministic. The question is whether a heap model in
writer and reader would pay; the probe answers it without changing the format.
"""
import argparse
import bisect
import csv
import sys
from collections import defaultdict

TCACHE_MAX_CHUNK = 1040  # glibc's largest tcache chunk (requests up to 1032 bytes)
TCACHE_COUNT = 7
FASTBIN_MAX_CHUNK = 128
MIN_CHUNK = 32
LARGE_REQUEST_CHUNK = 1024  # glibc consolidates the fast bins before serving these


class SortedList(list):
    """The few operations the model needs. Inserting into a Python list is linear, but the
    free chunks number in the thousands at most, and memmove is fast."""

    def add(self, value):
        bisect.insort(self, value)

    def remove(self, value):
        del self[bisect.bisect_left(self, value)]

    def bisect_left(self, value):
        return bisect.bisect_left(self, value)

    def bisect_right(self, value):
        return bisect.bisect_right(self, value)


def chunk_bytes(size):
    return max(MIN_CHUNK, (size + 23) & ~15)


class GlibcHeapModel:
    """What one glibc arena would do, as far as the trace shows it. Where the program's real
    address disagrees, the model takes the real one and carries on (take())."""

    def __init__(self):
        self.tcache = defaultdict(list)  # chunk size -> addresses, newest last
        self.fast = defaultdict(list)
        self.binned = {}  # address in a tcache or fast bin -> that bin
        self.free_by_start = {}  # start -> (size, key in free_by_size)
        self.free_by_end = {}
        self.free_by_size = SortedList()  # (size, -age, start): newest first among equal sizes
        self.free_starts = SortedList()
        self.age = 0
        self.top = None  # start of the top chunk, once an allocation has come from it
        self.live = {}  # address -> its chunk size

    def _add_free(self, start, size):
        self.age += 1
        key = (size, -self.age, start)
        self.free_by_start[start] = (size, key)
        self.free_by_end[start + size] = start
        self.free_by_size.add(key)
        self.free_starts.add(start)

    def _remove_free(self, start):
        size, key = self.free_by_start.pop(start)
        del self.free_by_end[start + size]
        self.free_by_size.remove(key)
        self.free_starts.remove(start)
        return size

    def _carve(self, start, size):
        """Removes [start, start+size) from the free chunks: the program got memory the model
        thought free, so the model was wrong about it."""
        while True:
            i = self.free_starts.bisect_left(start + size) - 1
            if i < 0:
                return
            other = self.free_starts[i]
            other_size = self.free_by_start[other][0]
            if other + other_size <= start:
                return
            self._remove_free(other)
            if other < start:
                self._add_free(other, start - other)
            if other + other_size > start + size:
                self._add_free(start + size, other + other_size - start - size)

    def _release(self, start, size):
        self._carve(start, size)
        if start in self.free_by_end:
            before = self.free_by_end[start]
            size += self._remove_free(before)
            start = before
        if start + size in self.free_by_start:
            size += self._remove_free(start + size)
        if self.top is not None and start + size == self.top:
            self.top = start
        else:
            self._add_free(start, size)

    def _consolidate(self):
        for size, addresses in self.fast.items():
            for address in addresses:
                del self.binned[address]
                self._release(address, size)
        self.fast.clear()

    def _bin(self, bins, size, address):
        bins[size].append(address)
        self.binned[address] = bins[size]

    def free(self, address):
        size = self.live.pop(address, None)
        if size is None:
            return
        if size <= TCACHE_MAX_CHUNK and len(self.tcache[size]) < TCACHE_COUNT:
            self._bin(self.tcache, size, address)
        elif size <= FASTBIN_MAX_CHUNK:
            self._bin(self.fast, size, address)
        else:
            self._release(address, size)

    def predict(self, size):
        """(where from, address) for a request of `size` bytes."""
        need = chunk_bytes(size)
        if need <= TCACHE_MAX_CHUNK and self.tcache[need]:
            return "tcache", self.tcache[need][-1]
        if need <= FASTBIN_MAX_CHUNK and self.fast[need]:
            return "fast bin", self.fast[need][-1]
        if need >= LARGE_REQUEST_CHUNK and any(self.fast.values()):
            self._consolidate()
        i = self.free_by_size.bisect_left((need, -(1 << 62), 0))
        if i < len(self.free_by_size):
            return "best fit", self.free_by_size[i][2]
        if self.top is not None:
            return "top", self.top
        return "unknown", None

    def forget_bin_head(self, size):
        """glibc did not hand out the head of this request's bin: the model's bin is out of step
        with glibc's (it holds a block that glibc put in a fast bin and merged since, say). The
        head goes among the free chunks, where glibc's copy of it most likely is."""
        need = chunk_bytes(size)
        for bins in (self.tcache, self.fast):
            if bins.get(need):
                address = bins[need].pop()
                del self.binned[address]
                self._release(address, need)
                return

    def take(self, address, size):
        need = chunk_bytes(size)
        if address in self.binned:
            # From a bin; if not the bin of its size, the model had the chunk's size wrong (a
            # request that got a whole larger chunk, or memory from before the trace).
            self.binned.pop(address).remove(address)
        elif address in self.free_by_start:
            whole = self._remove_free(address)
            if whole - need >= MIN_CHUNK:
                self._add_free(address + need, whole - need)
            else:
                need = whole  # glibc hands out the whole chunk when the rest would be too small
        else:
            i = self.free_starts.bisect_right(address + need - 1) - 1
            inside = i >= 0 and address < self.free_starts[i] + self.free_by_start[self.free_starts[i]][0]
            if inside:
                self._carve(address, need)
            elif self.top is None or address >= self.top:
                self.top = address + need
        self.live[address] = need


def probe(path, chunk_events, max_events):
    hits = defaultdict(lambda: [0, 0])  # where from -> [predictions, hits]
    large = [0, 0]
    model = GlibcHeapModel()
    try:
        f = open(path, newline="")
    except OSError as e:
        sys.exit(f"{path}: cannot open: {e.strerror}")
    with f:
        rows = csv.reader(f)
        header = next(rows, [])
        try:
            action, address_at, size_at = (header.index(k) for k in ("action", "address", "size"))
        except ValueError:
            sys.exit(f"{path}: not a trace CSV from `alloclab convert` (header: {','.join(header)})")
        for i, row in enumerate(rows):
            if i >= max_events:
                break
            if chunk_events and i % chunk_events == 0:
                model = GlibcHeapModel()
            if len(row) <= max(action, address_at, size_at):
                sys.exit(f"{path}:{i + 2}: expected {len(header)} fields, found {len(row)}")
            if row[action] not in ("alloc", "free"):
                continue  # run markers
            try:
                address = int(row[address_at], 16)
                size = int(row[size_at] or 0)
            except ValueError:
                sys.exit(f"{path}:{i + 2}: bad address or size")
            if row[action] == "alloc":
                source, predicted = model.predict(size)
                hit = predicted == address
                if not hit and source in ("tcache", "fast bin"):
                    model.forget_bin_head(size)
                hits[source][0] += 1
                hits[source][1] += hit
                if chunk_bytes(size) > TCACHE_MAX_CHUNK:
                    large[0] += 1
                    large[1] += hit
                model.take(address, size)
            elif row[action] == "free":
                model.free(address)
    return hits, large


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace_csv")
    parser.add_argument("--chunk-events", type=int, default=65536,
                        help="reset the model every N events, as a chunk of the format would (default 65536)")
    parser.add_argument("--events", type=int, default=2_000_000, help="stop after N events (default 2M)")
    args = parser.parse_args()
    for label, chunk_events in ((f"reset every {args.chunk_events} events", args.chunk_events),
                                ("kept over the whole trace", 0)):
        hits, large = probe(args.trace_csv, chunk_events, args.events)
        allocations = sum(n for n, _ in hits.values())
        correct = sum(h for _, h in hits.values())
        print(f"model {label}: {correct / max(allocations, 1):.1%} of {allocations:,} allocation "
              f"addresses predicted; beyond tcache sizes {large[1] / max(large[0], 1):.1%} of {large[0]:,}")
        for source, (n, h) in sorted(hits.items(), key=lambda kv: -kv[1][0]):
            print(f"  {source:10} {n:>10,} predictions, {h / max(n, 1):6.1%} right")


if __name__ == "__main__":
    main()
