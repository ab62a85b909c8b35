#!/usr/bin/python3
"""PyTorch gloo allreduce (float32 sum) on N local processes, for comparison
with `ddptop --bench-comm`. Prints one JSON line per size:
{"bytes", "time_us", "algbw_gbps", "busbw_gbps"} (1 GB = 1e9 B, nccl-tests'
bus bandwidth). Rendezvous on 127.0.0.1 only.

  /usr/bin/python3 bench/gloo_ref.py --world 2 --min-bytes 4096 --max-bytes 268435456 --factor 4
"""
import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, a, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=a.world)
    size = a.min_bytes
    while size <= a.max_bytes:
        n = size // 4
        x = torch.ones(n)
        iters = a.iters if size < (16 << 20) else max(3, a.iters // 4)
        for _ in range(a.warmup):
            dist.all_reduce(x)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        t = (time.perf_counter() - t0) / iters
        tt = torch.tensor([t], dtype=torch.float64)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        if rank == 0:
            algbw = size / tt.item() / 1e9
            print(json.dumps({"impl": "gloo", "world": a.world, "bytes": size, "time_us": tt.item() * 1e6,
                              "algbw_gbps": algbw, "busbw_gbps": algbw * 2 * (a.world - 1) / a.world}),
                  flush=True)
        size *= a.factor
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--min-bytes", type=int, default=4096)
    ap.add_argument("--max-bytes", type=int, default=256 << 20)
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a, port), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
