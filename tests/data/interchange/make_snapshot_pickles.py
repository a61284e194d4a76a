#!/usr/bin/env python3
"""Writes the PyTorch snapshot pickles the tests read (tests/data/interchange/*.pickle).

The tests need no Python: these files are committed. Run this again (from any directory) only to
change them; the output is the same byte for byte on every run of the same Python.

`--synthetic N FILE` writes a large snapshot of N entries instead (for measurements).

A CPU machine cannot make a CUDA memory snapshot, so the snapshot dicts are built here in the
shape torch.cuda.memory._snapshot() returns (torch/csrc/cuda/Module.cpp, memorySnapshot), and
pickled as torch.cuda.memory._dump_snapshot() does: pickle.dump(snapshot, f), protocol 2 to 5.
As in PyTorch, the key and action strings are one object each (so the pickle stores each once and
refers back to it), an allocation's free entries share its `frames` list, and frame dicts are
shared between the lists that hold them.
"""
import json
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOLS = (2, 3, 4, 5)


def shared_strings(value, strings=None, copies=None):
    """The value with every str replaced by one object per content, as PyTorch's py::str
    constants are: equal strings are then the same object, which the pickle memoizes. A
    container met twice (a shared frames list) stays one object."""
    if strings is None:
        strings, copies = {}, {}
    if isinstance(value, str):
        return strings.setdefault(value, value)
    if id(value) in copies:
        return copies[id(value)][1]
    if isinstance(value, dict):
        copy = {}
        copies[id(value)] = (value, copy)
        for k, v in value.items():
            copy[shared_strings(k, strings, copies)] = shared_strings(v, strings, copies)
        return copy
    if isinstance(value, list):
        copy = []
        copies[id(value)] = (value, copy)
        copy.extend(shared_strings(v, strings, copies) for v in value)
        return copy
    if isinstance(value, tuple):
        copy = tuple(shared_strings(v, strings, copies) for v in value)
        copies[id(value)] = (value, copy)
        return copy
    return value


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def torch_shaped():
    """Two devices' histories with everything a recent PyTorch writes: every action, frames shared
    as PyTorch shares them, compile_context, user_metadata, pool_id tuples, an oom entry (which has
    device_free instead of addr), a float and booleans in allocator_settings, the other top-level
    lists."""
    s = shared_strings
    frame = [s({"name": n, "filename": f, "line": l}) for n, f, l in (
        ("forward", "/work/model.py", 41),
        ("_call_impl", "/usr/lib/python3/site-packages/torch/nn/modules/module.py", 1541),
        ("train_step", "/work/train.py", 12),
        ("c10::cuda::CUDACachingAllocator::malloc", "??", 0),
    )]
    # Lists of frames, innermost first; each is the one object every entry of its block refers to.
    tb_a = [frame[0], frame[1], frame[2]]
    tb_b = [frame[3], frame[0], frame[1], frame[2]]
    tb_c = [frame[2]]

    def entry(action, addr, size, time_us, stream=0, frames=None, **extra):
        e = {"action": action}
        e["device_free" if action == "oom" else "addr"] = addr
        e.update({"size": size, "stream": stream, "time_us": time_us,
                  "compile_context": "", "user_metadata": "",
                  "pool_id": tuple([0, 0])})  # a new tuple each time, as PyTorch makes them
        e.update(extra)
        if frames is not None:
            e["frames"] = frames
        return e

    d0 = 0x7F0A00000000
    d1 = 0x7E0000000000
    dev0 = [
        entry("segment_alloc", d0, 2097152, 1700000000000000, frames=tb_b),
        entry("alloc", d0, 1000, 1700000000000001, frames=tb_a),
        entry("alloc", d0 + 1024, 24, 1700000000000003, frames=tb_c),
        entry("free_requested", d0, 1024, 1700000000000005, frames=tb_a),
        entry("free_completed", d0, 1024, 1700000000000007, frames=tb_a),
        entry("snapshot", 0, 0, 1700000000000010),
        entry("oom", 1048576, 4294967296, 1700000000000012, frames=tb_a),
        entry("segment_map", d0 + 2097152, 2097152, 1700000000000013, frames=tb_b),
        entry("segment_unmap", d0 + 2097152, 2097152, 1700000000000014),
        entry("alloc", d0 + 4096, 256, 1700000000000015, stream=-94366523066560,
              frames=[], pool_id=tuple([1, 2])),
    ]
    dev1 = [
        entry("segment_alloc", d1, 20971520, 1700000000000002, stream=5),
        entry("alloc", d1, 5000000, 1700000000000004, stream=5, frames=tb_b),
        entry("free_completed", d1, 5000192, 1700000000000006, stream=5, frames=tb_b),
        entry("segment_free", d1, 20971520, 1700000000000008, stream=5),
    ]
    segment = {"device": 0, "address": d0, "total_size": 2097152, "allocated_size": 24,
               "active_size": 24, "requested_size": 24, "stream": 0, "segment_type": "small",
               "segment_pool_id": (0, 0), "is_expandable": False, "frames": tb_b,
               "blocks": [{"address": d0 + 1024, "size": 512, "requested_size": 24,
                           "state": "active_allocated", "frames": tb_c}]}
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
                "garbage_collection_threshold": 0.0, "expandable_segments": True,
                "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False,
                "roundup_power2_divisions": {"1": 0, "2": 0, "4": 0}}
    return s({"segments": [segment], "device_traces": [dev0, dev1],
              "allocator_settings": settings, "external_annotations": [],
              "host_segments": [], "host_traces": []})


def older():
    """A PyTorch 2.0 history: no time_us, no allocator_settings, frames on every entry."""
    tb = [{"name": "main", "filename": "run.py", "line": 3}]
    return shared_strings({"segments": [], "device_traces": [[
        {"action": "segment_alloc", "addr": 0x7F0000000000, "size": 2097152, "stream": 0,
         "frames": tb},
        {"action": "alloc", "addr": 0x7F0000000000, "size": 512, "stream": 0, "frames": tb},
        {"action": "free_completed", "addr": 0x7F0000000000, "size": 512, "stream": 0,
         "frames": tb},
    ]]})


def synthetic(n):
    """alloc/free_completed pairs on one device; must match SyntheticSnapshot in
    tests/format/interchange/pickle_writer.hpp, which writes it byte for byte (protocol 2)."""
    files = ["/work/model.py", "/work/train.py", "/work/data.py"]
    names = ["forward", "backward", "step", "load"]
    frames = [{"filename": files[j % 3], "line": 10 + j, "name": names[j % 4]} for j in range(6)]
    tracebacks = [[frames[(t + k) % 6] for k in range(3)] for t in range(8)]
    entries = []
    for k in range(n // 2):
        addr = 0x7F0000000000 + 1024 * (k % 4096)
        size = 512 + k % 1000
        tb = tracebacks[k % 8]
        for action, dt in (("alloc", 0), ("free_completed", 1)):
            entries.append({"action": action, "addr": addr, "size": size, "stream": 0,
                            "time_us": 1700000000000000 + 2 * k + dt, "frames": tb})
    return shared_strings({"segments": [], "device_traces": [entries],
                           "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "",
                                                  "max_split_size": -1,
                                                  "expandable_segments": False}})


def every_value(protocol):
    """Each kind of plain value that the protocol pickles without naming a class (in protocol 2,
    bytes and sets are pickled as calls: _codecs.encode, builtins.set), and the same value as
    alloclab's JSON of it: tuples and sets as lists, bytes as UTF-8 text with U+FFFD for what is
    not UTF-8, NaN and infinities as null."""
    shared = [7, "seven"]
    value = {
        "none": None, "true": True, "false": False,
        "ints": [0, 1, 255, 256, 65535, 65536, -1, -256, 2**31 - 1, -2**31, 2**31, -2**31 - 1,
                 2**47, 2**63 - 1, -2**63, 2**63, 2**64 - 1],
        "floats": [0.0, -1.5, 1e300, float("inf"), float("nan")],
        "texts": ["", "snapshot", "\u00e9t\u00e9 \u2603", "x" * 300],
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
        "nested": {"a": [[], {}, [[1]]], "b": {"c": {"d": "e"}}},
        "shared": [shared, shared],
        1: "an int key",
    }
    expected = json.loads(json.dumps(value, default=str).replace("Infinity", "null")
                          .replace("NaN", "null"))
    if protocol >= 3:
        value["bytes"] = [b"", b"\x00abc", b"\xff", b"y" * 300]
        expected["bytes"] = [v.decode("utf-8", "replace") for v in value["bytes"]]
    if protocol >= 4:
        value["sets"] = [{1, 2, 3}, frozenset({4}), set()]
        expected["sets"] = [[1, 2, 3], [4], []]
    if protocol >= 5:
        value["bytearray"] = bytearray(b"abc")
        expected["bytearray"] = "abc"
    return value, expected


class RunsCode:
    """Pickles as a call of os.system: what a hostile file holds. Only pickled, never loaded."""

    def __reduce__(self):
        return (os.system, ("echo alloclab ran code from a pickle",))


def main():
    if sys.version_info < (3, 8):
        sys.exit("make_snapshot_pickles: Python 3.8 or later (protocol 5)")
    if len(sys.argv) == 4 and sys.argv[1] == "--synthetic":
        # A large snapshot for measurements, in Python's default protocol:
        #   make_snapshot_pickles.py --synthetic 1000000 /tmp/million.pickle
        with open(sys.argv[3], "wb") as f:
            pickle.dump(synthetic(int(sys.argv[2])), f)
        return
    if len(sys.argv) != 1:
        sys.exit("usage: make_snapshot_pickles.py [--synthetic ENTRIES FILE]")
    with open(os.path.join(HERE, "snapshot_basic.json")) as f:
        basic = shared_strings(json.load(f))
    torch = torch_shaped()
    with open(os.path.join(HERE, "snapshot_torch.json"), "w") as f:
        json.dump(torch, f, indent=1)
        f.write("\n")
    for p in PROTOCOLS:
        write(f"snapshot_basic.p{p}.pickle", pickle.dumps(basic, protocol=p))
        write(f"snapshot_torch.p{p}.pickle", pickle.dumps(torch, protocol=p))
    write("snapshot_older.pickle", pickle.dumps(older(), protocol=4))
    for p in PROTOCOLS:
        value, expected = every_value(p)
        write(f"every_value.p{p}.pickle", pickle.dumps(value, protocol=p))
        with open(os.path.join(HERE, f"every_value.p{p}.json"), "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
            f.write("\n")
    write("snapshot_synthetic_1200.p2.pickle", pickle.dumps(synthetic(1200), protocol=2))
    hostile = {"segments": [], "device_traces": [[{"action": RunsCode()}]]}
    write("hostile_os_system.p2.pickle", pickle.dumps(hostile, protocol=2))
    write("hostile_os_system.p4.pickle", pickle.dumps(hostile, protocol=4))


if __name__ == "__main__":
    main()
