#!/usr/bin/python3
"""PyTorch's own path to gloo, apart from gloo's work: the median and 10th
percentile time of one dist.all_reduce (float32 sum) with a world of one
process, where gloo returns at once and what is left is Python, c10d and
ProcessGroupGloo's hand-off to its worker thread and back, against a world
of two on this machine. Prints one line per world and repeat.

  /usr/bin/python3 bench/gloo_path_ref.py [--sizes 4,2048,131072,262144] [--calls 200] [--repeats 2]
"""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, port, sizes, calls, pin, q):
    if pin:  # (before init: gloo's and the process group's threads inherit it)
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    got = {}
    for size in sizes:
        x = torch.ones(max(1, size // 4))
        for _ in range(20):
            dist.all_reduce(x)
        dist.barrier()
        took = []
        for _ in range(calls):
            t0 = time.perf_counter()
            dist.all_reduce(x)
            took.append(time.perf_counter() - t0)
        took.sort()
        got[size] = (took[len(took) // 2] * 1e6, took[len(took) // 10] * 1e6)
    if rank == 0:
        q.put(got)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4,2048,131072,262144")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--pin", action="store_true", help="also each process on a core of its own (as mpirun binds 2)")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    ctx = mp.get_context("spawn")
    kinds = [(1, False), (2, False)] + ([(2, True)] if a.pin else [])
    for rep in range(a.repeats):
        for world, pin in kinds:
            q = ctx.Queue()
            port = free_port()
            procs = [ctx.Process(target=worker, args=(r, world, port, sizes, a.calls, pin, q)) for r in range(world)]
            for p in procs:
                p.start()
            got = q.get()
            for p in procs:
                p.join()
            print(f"repeat {rep} world {world}{', pinned' if pin else ''}: " +
                  "  ".join(f"{b} B median {m:.0f} us (p10 {l:.0f})" for b, (m, l) in got.items()), flush=True)


if __name__ == "__main__":
    main()
