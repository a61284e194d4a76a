"""ResNet-18 inference on CPU, one image per run, each forward pass marked as a run.

Run under the tracer (see traces/record-torch): random weights, no download, one thread.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import alloclab_markers  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

RUNS = int(os.environ.get("RUNS", "8"))

torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18().eval()
image = torch.randn(1, 3, 224, 224)

with torch.no_grad():
    model(image)  # warm-up outside the runs: first-call allocations are not the steady state
    for step in range(RUNS):
        with alloclab_markers.run(f"forward {step}"):
            logits = model(image)
        del logits
