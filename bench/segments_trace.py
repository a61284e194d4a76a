#!/usr/bin/env python3
"""A CSV trace that leaves the pytorch model thousands of segments: LIVE buffers of log-uniform
sizes (512 B to 64 MiB) on 4 streams stay live, then CHURN times a random live buffer is freed
and a new one allocated, which splits and merges pieces. Deterministic (seed 1). For the GUI's
Segments view frame time (docs/performance.md):

    python3 bench/segments_trace.py 10000 1000000 > segs.csv
    build/bin/alloclab convert segs.csv segs.alt
"""
import random
import sys


def main():
    live_target, churn = int(sys.argv[1]), int(sys.argv[2])
    r = random.Random(1)
    out = sys.stdout
    out.write("time_ns,thread,action,address,size,stream\n")
    live = []
    state = {"t": 0, "address": 0x100000000}

    def alloc():
        size = int(2 ** r.uniform(9, 26))
        state["t"] += 100
        out.write(f"{state['t']},1,alloc,{state['address']:#x},{size},{r.randrange(4)}\n")
        live.append(state["address"])
        state["address"] += size + 4096  # never reused: every free names one allocation

    for _ in range(live_target):
        alloc()
    for _ in range(churn):
        i = r.randrange(len(live))
        live[i], live[-1] = live[-1], live[i]
        state["t"] += 100
        out.write(f"{state['t']},1,free,{live.pop():#x},,\n")
        alloc()


if __name__ == "__main__":
    main()
