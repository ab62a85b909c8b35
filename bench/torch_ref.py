#!/usr/bin/python3
"""PyTorch reference for ddptop's benchmarks: the same models, batch and
thread count, trained on Fashion-MNIST batches held in memory.

  /usr/bin/python3 bench/torch_ref.py --model lenet --threads 1 --batch 64 --steps 300

Prints one JSON line: {"model", "threads", "batch", "img_s", "ms_step", ...}.
Each step is zero_grad + forward + cross-entropy + backward + SGD(momentum
0.9); the median step time over the timed steps gives img/s.
"""
import argparse
import gzip
import json
import os
import statistics
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 512)
        self.fc3 = nn.Linear(512, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


MODELS = {"lenet": LeNet, "mlp": MLP}


def load_images(n):
    path = os.path.join(DATA, "train-images-idx3-ubyte.gz")
    if os.path.exists(path):
        with gzip.open(path) as f:
            raw = f.read()
        x = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
        x = (x.astype(np.float32) / 255.0 - 0.2860) / 0.3530
        return torch.from_numpy(x.copy())
    return torch.randn(n, 1, 28, 28)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    nb = 64
    x = load_images(nb * a.batch)
    y = torch.randint(0, 10, (x.shape[0],))
    model = MODELS[a.model]().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    times = []
    for i in range(a.warmup + a.steps):
        j = (i % nb) * a.batch
        xb, yb = x[j:j + a.batch], y[j:j + a.batch]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    step = statistics.median(times)
    print(json.dumps({"impl": "pytorch", "model": a.model, "threads": a.threads, "batch": a.batch,
                      "ms_step": round(step * 1e3, 4), "img_s": round(a.batch / step, 1),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
