"""A small model on a CUDA GPU, several runs, for two kinds of tensor-level trace.

1. Every tensor a cudaMalloc, recorded by the CUDA tracer (PyTorch's caching allocator off):

     PYTORCH_NO_CUDA_MEMORY_CACHING=1 build/bin/alloclab record --cuda --run-range 'run*' \
         -o torch-gpu.alt -- python3 traces/workloads/torch_gpu.py

   Each run is an NVTX range named "run N", so --run-range turns it into one alloclab run.

2. PyTorch's own allocation history (caching allocator on), through the snapshot importer:

     python3 traces/workloads/torch_gpu.py --snapshot torch-gpu.pickle
     build/bin/alloclab info torch-gpu.pickle

3. An alloclab strategy as PyTorch's CUDA allocator (python/alloclab_torch.py on PYTHONPATH):

     PYTHONPATH=python python3 traces/workloads/torch_gpu.py --alloclab best-fit

`--device cpu` runs the same model on the CPU without NVTX or snapshot (a dry run of the script
on a machine without a GPU). The last line says the time per run (after the first, which warms
up). Environment: RUNS (default 8).
"""
import argparse
import os
import sys
import time

import torch

MAX_ENTRIES = 1_000_000


def build_model(device):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                             batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
    head = torch.nn.Linear(256, 1000)
    return torch.nn.Sequential(encoder, head).to(device).eval()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", "8")))
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--snapshot", help="record PyTorch's allocation history to this pickle")
    parser.add_argument("--alloclab", metavar="SPEC",
                        help="an alloclab strategy as PyTorch's CUDA allocator (alloclab_torch)")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("torch_gpu: no CUDA device visible to PyTorch (use --device cpu for a dry run)")
    if args.snapshot and not cuda:
        sys.exit("torch_gpu: --snapshot needs --device cuda")
    caching = os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1"
    if cuda and caching and not args.snapshot:
        print("torch_gpu: note: PyTorch's caching allocator is on, so a CUDA trace shows its "
              "segments, not tensors (set PYTORCH_NO_CUDA_MEMORY_CACHING=1)", file=sys.stderr)

    if args.alloclab:
        if not cuda:
            sys.exit("torch_gpu: --alloclab needs --device cuda")
        import alloclab_torch
        alloclab_torch.use(args.alloclab)  # before the first CUDA tensor
    model = build_model(args.device)
    if args.snapshot:
        torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES)
    # Sequence lengths vary per run, as a serving workload's do: sizes change from run to run.
    lengths = [32 + 16 * (i % 5) for i in range(args.runs)]
    checksum = 0.0
    started = None
    with torch.no_grad():
        for i, length in enumerate(lengths):
            if i == 1:
                started = time.perf_counter()
            if cuda:
                torch.cuda.nvtx.range_push(f"run {i}")
            tokens = torch.randn(4, length, 256, device=args.device)
            logits = model(tokens)
            checksum += float(logits.float().sum())
            del tokens, logits
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
    if args.snapshot:
        torch.cuda.memory._dump_snapshot(args.snapshot)
        torch.cuda.memory._record_memory_history(enabled=None)
    per_run = (time.perf_counter() - started) / (args.runs - 1) if started is not None else 0.0
    allocator = f"alloclab:{args.alloclab}" if args.alloclab else ("on" if caching else "off")
    print(f"torch_gpu: runs={args.runs} device={args.device} caching={allocator}"
          f" checksum={checksum:.6g} ms_per_run={1e3 * per_run:.3f}")


if __name__ == "__main__":
    main()
