"""PyTorch's DistributedDataParallel on gloo, 2 processes on this machine:
the reference that `ddptop --comm gloo --strategy ddp` is measured against
(bench/ddp_gloo_vs_pytorch.sh). LeNet as ddptop's zoo builds it
(bench/torch_models.py), SGD, random Fashion-MNIST-shaped batches, one
compute thread per process, DDP's bucket size as --bucket-mb.

Each process times every step (forward, backward with DDP's allreduces,
optimizer) and, through a communication hook, each bucket's allreduce from
its launch to its completion (the time in collectives, waiting for the
peer included: ddptop's coll). Rank 0 prints one JSON line: the medians
over the steps after --warmup, in ms, and the means ddptop's report gives
(per step, over the ranks) of coll and of its split as DESIGN.md defines
it: a call's transfer is its shortest duration over the ranks (the i-th
call of each rank is the same call), its sync a rank's duration beyond it.

    /usr/bin/python3 bench/ddp_gloo_ref.py [--batch 32] [--steps 300] [--bucket-mb 25] [--pin]
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import LeNet  # noqa: E402


def timed_allreduce(state, bucket):
    t0 = time.perf_counter()
    fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()

    def done(f):
        state.append(time.perf_counter() - t0)
        return f.value()[0].div_(dist.get_world_size())

    return fut.then(done)


def worker(rank, args, store, out):
    if args.pin:  # (before init: the process group's and gloo's threads inherit it)
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(LeNet(), bucket_cap_mb=args.bucket_mb)
    comm = []
    model.register_comm_hook(comm, timed_allreduce)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, 1, 28, 28)
    y = torch.randint(0, 10, (args.batch,))
    steps, colls, calls = [], [], []
    for s in range(args.warmup + args.steps):
        del comm[:]
        t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        if s >= args.warmup:
            steps.append(time.perf_counter() - t0)
            colls.append(sum(comm))
            calls.append(list(comm))
    with open(f"{out}.{rank}", "w") as f:
        json.dump(calls, f)
    dist.barrier()
    if rank == 0:
        med = lambda v: sorted(v)[len(v) // 2] * 1e3  # noqa: E731
        every = [json.load(open(f"{out}.{r}")) for r in range(2)]
        coll = xfer = 0.0
        for step in zip(*every):  # (rank 0's calls, rank 1's calls) of one step
            for call in zip(*step):
                coll += sum(call) / len(call)
                xfer += min(call)
        n = len(every[0])
        print(json.dumps({"step_ms_p50": med(steps), "coll_ms_p50": med(colls), "steps": len(steps),
                          "buckets": len(comm), "coll_ms_per_step": coll / n * 1e3,
                          "transfer_ms_per_step": xfer / n * 1e3, "sync_ms_per_step": (coll - xfer) / n * 1e3}))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--bucket-mb", type=float, default=25)
    ap.add_argument("--pin", action="store_true", help="each process on a core of its own, all its threads")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(worker, args=(args, os.path.join(d, "store"), os.path.join(d, "calls")), nprocs=2)


if __name__ == "__main__":
    main()
