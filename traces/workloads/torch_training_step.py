"""Training steps of a small CNN on CPU (forward, backward, SGD update), one run per step."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import alloclab_markers  # noqa: E402
import torch  # noqa: E402

RUNS = int(os.environ.get("RUNS", "8"))

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(64 * 16 * 16, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
images = torch.randn(16, 3, 64, 64)
labels = torch.randint(0, 10, (16,))


def step():
    optimizer.zero_grad()
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()


step()  # warm-up: optimizer state is allocated on the first step
for i in range(RUNS):
    with alloclab_markers.run(f"train step {i}"):
        step()
