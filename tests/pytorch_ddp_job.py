"""A real data-parallel PyTorch job, as a user writes one, profiled as the
PyTorch documentation says: torch.profiler with a schedule and
tensorboard_trace_handler, which writes one trace per rank per cycle into
a folder. test_pytorch_job.sh runs two of these processes (one per rank) on
gloo over loopback and replays the folder with ddptop.

Run with Debian's python3 (torch 1.13 from python3-torch):

    /usr/bin/python3 tests/pytorch_ddp_job.py --rank R --world 2 \\
        --init file:///tmp/store --out DIR [--steps 12] [--worker-name rank{rank}]
        [--repeat 2] [--gzip] [--slow-rank R --slow-ms MS] [--cycle-gap-ms MS]

The model is a small CNN on random Fashion-MNIST-shaped batches, one
thread per process, so the two ranks share two cores and the job ends in
seconds. The profiler's cycle is wait 1, warmup 1, active 3; --repeat
cycles (2) are written, each as DIR/WORKER.MS.pt.trace.json (.gz with
--gzip). --slow-rank makes one rank a straggler: it sleeps --slow-ms
before each step's forward, while the others wait for it in the
gradients' allreduce. --cycle-gap-ms makes every rank sleep in each
cycle's untraced (wait) step, so that a follower sees the cycles land one
by one; the traced steps are as they were.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


WAIT, WARMUP, ACTIVE = 1, 1, 3  # the profiler's cycle, in steps


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--init", required=True, help="init_method: file:///path or tcp://127.0.0.1:PORT")
    ap.add_argument("--out", required=True, help="the folder tensorboard_trace_handler writes into")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--worker-name", default="rank{rank}",
                    help="tensorboard_trace_handler's worker_name ('' for its default, host_pid)")
    ap.add_argument("--gzip", action="store_true", help="tensorboard_trace_handler(use_gzip=True)")
    ap.add_argument("--slow-rank", type=int, default=-1, help="this rank sleeps --slow-ms before each forward")
    ap.add_argument("--slow-ms", type=float, default=0.0)
    ap.add_argument("--cycle-gap-ms", type=float, default=0.0, help="every rank sleeps this long in each wait step")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(a.rank)
    dist.init_process_group("gloo", init_method=a.init, rank=a.rank, world_size=a.world)
    model = nn.parallel.DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 1, 28, 28)
    y = torch.randint(0, 10, (32,))
    worker = a.worker_name.format(rank=a.rank) or None
    print("started", flush=True)  # (a test starts its follower now)

    # ---- the lines a user adds to profile a job ----
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=a.repeat),
                 on_trace_ready=tensorboard_trace_handler(a.out, worker_name=worker, use_gzip=a.gzip)) as prof:
        for step in range(a.steps):
            if a.cycle_gap_ms and step % (WAIT + WARMUP + ACTIVE) < WAIT:
                time.sleep(a.cycle_gap_ms / 1e3)  # untraced: the cycles land apart
            if a.rank == a.slow_rank:
                time.sleep(a.slow_ms / 1e3)  # a straggler: its peers wait for it in the allreduce
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            prof.step()  # one training step done
    # -------------------------------------------------

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
