"""A PyTorch memory snapshot of a made-up training run, without PyTorch or a GPU.

Writes the pickle torch.cuda.memory._dump_snapshot() would (only its allocation history): eight
64 MiB weights, then 300 steps of a 12-layer model fed batches of 256 to 4096 tokens, whose
activations (3 to 48 MiB) live until the backward pass, and whose outputs live three steps
more. Deterministic: the same history on every machine and Python 3 version.

    python3 traces/workloads/varlen_snapshot.py varlen.pickle
    alloclab advise --pytorch varlen.pickle --memory-limit 1200MiB
"""
import pickle
import sys

MiB = 1 << 20
trace, live = [], {}


def event(action, addr):
    trace.append({"action": action, "addr": addr, "size": live[addr], "stream": 0,
                  "time_us": 1700000000000000 + len(trace)})


def alloc(size):
    addr = 0x7F0000000000 + len(trace) * 0x10000000  # distinct: pairing needs no reuse
    live[addr] = size
    event("alloc", addr)
    return addr


def free(addr):
    event("free_completed", addr)
    del live[addr]


state = 5  # its own generator (PCG's LCG step): the same tokens in every Python version


def uniform(n):
    global state
    state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return (state >> 33) % n


weights = [alloc(64 * MiB) for _ in range(8)]
outputs = []
for step in range(300):
    tokens = 256 + uniform(3841)
    activations = [alloc(tokens * 12 * 1024) for _ in range(12)]
    for a in reversed(activations):
        grad = alloc(tokens * 12 * 1024)
        free(a)
        free(grad)
    outputs.append(alloc(tokens * 3 * 1024))
    if len(outputs) > 3:
        free(outputs.pop(0))

with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": [], "device_traces": [trace]}, f, protocol=4)
