#!/usr/bin/env python3
"""Convert a PyTorch CUDA memory snapshot (the pickle torch.cuda.memory._dump_snapshot() writes)
to JSON that alloclab reads (`alloclab ... trace.json`, or read_torch_snapshot_json in C++).

Needs only the Python standard library: no torch import, so it runs anywhere. The pickle is
loaded with an unpickler that refuses to import anything (a snapshot is plain dicts, lists,
strings and numbers), so a hostile file cannot run code.

    python3 scripts/torch_snapshot_to_json.py snapshot.pickle -o snapshot.json
    python3 scripts/torch_snapshot_to_json.py snapshot.pickle --frames > with_stacks.json

Stack frames make the file many times larger and alloclab does not use them: they are dropped
unless --frames is given. Bytes become text (UTF-8, undecodable bytes replaced). If you know the
ring buffer size the history was recorded with (_record_memory_history(max_entries=N)), pass
--max-entries N so alloclab can tell whether the history was cut.
"""

import argparse
import json
import math
import pickle
import sys

# Globals a plain snapshot may legitimately reference: containers and the bytes decoder that
# protocol-2 pickles use. Nothing that can execute code.
_ALLOWED_GLOBALS = {
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "bytearray"),
    ("_codecs", "encode"),
}


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refusing to load {module}.{name}: not part of a plain memory snapshot")


def _plain(value, keep_frames):
    """The value as JSON-ready Python: str keys, lists, text for bytes, None for NaN."""
    if isinstance(value, dict):
        return {str(_plain(k, keep_frames)): _plain(v, keep_frames)
                for k, v in value.items() if keep_frames or k != "frames"}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v, keep_frames) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def convert(snapshot, keep_frames=False, max_entries=None):
    """The snapshot dict as JSON-ready data, device_traces first (readers find it sooner)."""
    if not isinstance(snapshot, dict):
        raise ValueError("not a memory snapshot: the pickle holds a "
                         f"{type(snapshot).__name__}, not a dict")
    if "device_traces" not in snapshot:
        raise ValueError("the snapshot has no device_traces: record the history with "
                         "torch.cuda.memory._record_memory_history() before dumping")
    out = {"device_traces": _plain(snapshot["device_traces"], keep_frames)}
    for key, value in snapshot.items():
        if key != "device_traces":
            out[str(key)] = _plain(value, keep_frames)
    if max_entries is not None:
        settings = out.setdefault("allocator_settings", {})
        if not isinstance(settings, dict):
            raise ValueError("allocator_settings is not a dict")
        settings["trace_alloc_max_entries"] = max_entries
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshot", help="pickle written by torch.cuda.memory._dump_snapshot()")
    parser.add_argument("-o", "--output", help="JSON file to write (default: standard output)")
    parser.add_argument("--frames", action="store_true", help="keep stack frames")
    parser.add_argument("--max-entries", type=int, metavar="N",
                        help="the history's ring buffer size, recorded in allocator_settings")
    args = parser.parse_args(argv)

    try:
        with open(args.snapshot, "rb") as f:
            snapshot = _PlainUnpickler(f).load()
        data = convert(snapshot, keep_frames=args.frames, max_entries=args.max_entries)
    except Exception as error:  # noqa: BLE001 - any damage in the file is reported, not raised
        print(f"{args.snapshot}: {error}", file=sys.stderr)
        return 2

    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(data, f, separators=(",", ":"), allow_nan=False)
            f.write("\n")
    else:
        json.dump(data, sys.stdout, separators=(",", ":"), allow_nan=False)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
