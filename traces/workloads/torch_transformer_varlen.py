"""A 6-layer transformer encoder on CPU with a different sequence length every run
(4 sequences of 32-256 tokens), each forward pass marked as a run.
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import alloclab_markers  # noqa: E402
import torch  # noqa: E402

RUNS = int(os.environ.get("RUNS", "12"))

torch.set_num_threads(1)
torch.manual_seed(0)
random.seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=8, dim_feedforward=512, batch_first=True)
encoder = torch.nn.TransformerEncoder(layer, num_layers=6).eval()

with torch.no_grad():
    encoder(torch.randn(4, 32, 128))  # warm-up
    for step in range(RUNS):
        tokens = random.choice([32, 48, 64, 96, 128, 192, 256])
        batch = torch.randn(4, tokens, 128)
        with alloclab_markers.run(f"encode {step} seq={tokens}"):
            out = encoder(batch)
        del out, batch
