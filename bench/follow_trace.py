"""Writes a synthetic PyTorch profiler (Kineto) trace of about MB megabytes
for one rank, as a GPU job's cycle: ProfilerStep windows, each with 400
cpu_ops and their cudaLaunchKernel calls, and a kernel per launch on the
device (every tenth an NCCL allreduce on a stream of its own), with the
args Kineto writes (correlation ids, grids...). For bench/follow_latency.sh.

Usage: follow_trace.py MB RANK OUT.json
"""
import json
import random
import sys


def main():
    mb, rank, path = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    random.seed(rank)
    out = open(path, "w")
    out.write('{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":%d,"world_size":2},'
              '"traceEvents":[\n' % rank)
    size, t, step, corr, first = 0, 1_700_000_000_000.0, 10, 1, True
    while size < mb * 1e6:
        t0, ops = t, []
        for k in range(400):
            d = random.uniform(5, 30)
            nccl = k % 10 == 9
            ops.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t, "dur": d,
                        "args": {"External id": corr, "Sequence number": corr}})
            ops.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                        "ts": t + 1, "dur": 3, "args": {"External id": corr, "cbid": 211, "correlation": corr}})
            ops.append({"ph": "X", "cat": "kernel",
                        "name": "ncclKernel_AllReduce_RING_LL_Sum_float" if nccl else
                        "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32",
                        "pid": 0, "tid": 13 if nccl else 7, "ts": t + 5, "dur": d * 0.8,
                        "args": {"External id": corr, "queued": 0, "device": 0, "context": 1,
                                 "stream": 13 if nccl else 7, "correlation": corr, "registers per thread": 168,
                                 "grid": [32, 1, 1], "block": [384, 1, 1]}})
            corr += 1
            t += d + 1
        for e in [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": 1, "tid": 1,
                   "ts": t0, "dur": t - t0, "args": {}}] + ops:
            s = ("" if first else ",\n") + json.dumps(e)
            first = False
            out.write(s)
            size += len(s)
        step += 1
        t += 5
    out.write("\n]}\n")
    out.close()


if __name__ == "__main__":
    main()
