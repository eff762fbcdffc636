#!/usr/bin/env python3
"""weft.torch's comm ops timed under torchrun (bench/torch_dist_session.sh runs it):

    torchrun --standalone --nproc-per-node N bench/torch_comm.py

- all_reduce (f32, bf16; 8 B .. 256 MB per rank): weft's time beside a device-to-device copy of the
  same bytes on every rank at the same time -- the floor on one GPU, where the ranks share its
  memory, as `weft run` uses.  Not torch.distributed.all_reduce: its NCCL refuses two ranks on one
  GPU, and gloo runs on the host, which says nothing about a device collective.
- host overhead: microseconds of host time per weft.torch.all_reduce call on a 1-element tensor,
  beside torch.add of the same tensor (the cost of any op call), and beside the launch alone.
- all_gather_matmul (bf16, model shapes): fused and gather_then_gemm beside gather (weft's
  all_reduce cannot gather: a device copy of the P shards, the floor of a gather on one GPU) plus
  torch.matmul, and torch.matmul alone on the gathered A.
Timing: CUDA events around back-to-back calls after heating the GPU 300 ms; every rank times, the
slowest rank's median over 50 counts (a barrier over gloo before each sample).
"""
import os
import sys
import time

import torch
import torch.distributed as dist

import dist_timing  # bench/, beside this script

S = dist_timing.session("torch_comm", 50)
from weft.torch import dist as wd  # noqa: E402

P, DEV, SAMPLES, out = S.p, S.dev, S.samples, S.out
ROWS = []


def heat(fn, ms=300):
    dist_timing.heat(fn, ms)


def time_us(fn, reps):
    """The slowest rank's median over SAMPLES of (reps back-to-back calls) / reps, in us."""
    return dist_timing.time_us(fn, reps, SAMPLES, wd.check)


def bench_all_reduce():
    out("\n## all_reduce, %d ranks (slowest rank, median of %d; copy = same bytes device-to-device, every rank)" % (
        P, SAMPLES))
    out("| dtype | bytes/rank | algo | weft us | copy us | weft/copy |")
    out("| --- | --- | --- | --- | --- | --- |")
    for dtype, es in ((torch.float32, 4), (torch.bfloat16, 2)):
        nbytes = 8
        while nbytes <= 256 << 20:
            n = max(1, nbytes // es)
            x = torch.randn(n, device=DEV).to(dtype)
            y = torch.empty_like(x)
            wd.all_reduce(x)     # the communicator (and the first-call rendezvous)
            torch.cuda.synchronize()
            reps = 20 if nbytes <= 1 << 20 else 3
            heat(lambda: wd.all_reduce(x))
            tw = time_us(lambda: wd.all_reduce(x), reps)
            heat(lambda: y.copy_(x), 50)
            tc = time_us(lambda: y.copy_(x), reps)
            algo = wd.allreduce_algo(n * es, n, P)
            out("| %s | %d | %s | %.2f | %.2f | %.2f |" % (str(dtype)[6:], n * es, algo, tw, tc, tw / tc))
            ROWS.append(("all_reduce", str(dtype), n * es, tw, tc))
            nbytes *= 8 if nbytes < 128 << 20 else 2


def host_us(fn, calls=2000):
    """Host time per call: wall clock over many calls, the GPU kept busy by them (no sync inside)."""
    fn()
    torch.cuda.synchronize()
    best = None
    for _ in range(5):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t = (time.perf_counter() - t0) * 1e6 / calls
        torch.cuda.synchronize()
        best = t if best is None else min(best, t)
    allm = [None] * P
    dist.all_gather_object(allm, best)
    return max(allm)


def bench_overhead():
    x = torch.ones(1, device=DEV)
    y = torch.ones(1, device=DEV)
    wd.all_reduce(x)
    g = wd._groups[wd.group_name(None)]
    key = ("allreduce", "f32", "sum", "one_shot_ll")
    c = g.comms[key][-1]
    s = torch.cuda.current_stream().cuda_stream
    args = wd._bind(c.kernel, y=y, x=x, n=1)
    t_op = host_us(lambda: wd.all_reduce(x))
    t_inplace = host_us(lambda: wd.all_reduce_(y))
    t_disp = host_us(lambda: torch.ops.weft.all_reduce(x, "sum", wd.group_name(None)))
    t_launch = host_us(lambda: c.launch(*args, stream=s))
    t_add = host_us(lambda: torch.add(x, x))
    out("\n## host overhead per call, 1-element f32 tensor, %d ranks (us, the slowest rank's best of 5 x 2000)" % P)
    out("| weft.torch.all_reduce | all_reduce_ | torch.ops.weft.all_reduce (dispatcher) | Comm.launch alone | torch.add | "
        "all_reduce - torch.add |")
    out("| --- | --- | --- | --- | --- | --- |")
    out("| %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (t_op, t_inplace, t_disp, t_launch, t_add, t_op - t_add))
    ROWS.append(("overhead", t_op, t_add))


def bench_ag():
    out("\n## all_gather_matmul, bf16, %d ranks: A [M, K] gathered from [M/P, K] shards, B [K, N]" % P)
    out("| M x N x K | fused us | gather_then_gemm us | copy-gather + torch.matmul us | torch.matmul us | "
        "fused / (gather + matmul) |")
    out("| --- | --- | --- | --- | --- | --- |")
    for m, n, k in ((2048, 4096, 4096), (4096, 4096, 4096), (8192, 8192, 1024), (8192, 14336, 4096), (16384, 4096, 4096)):
        if m % P:
            continue
        a = torch.randn(m // P, k, device=DEV).to(torch.bfloat16)
        b = torch.randn(k, n, device=DEV).to(torch.bfloat16)
        full = torch.empty(m, k, device=DEV, dtype=torch.bfloat16)
        views = list(full.chunk(P))
        wd.all_gather_matmul(a, b)
        wd.all_gather_matmul(a, b, return_a=True)
        torch.cuda.synchronize()

        def copy_gather_mm():
            for v in views:     # the floor of a gather on one GPU: P shard copies
                v.copy_(a)
            return torch.matmul(full, b)

        res = []
        for fn in (lambda: wd.all_gather_matmul(a, b), lambda: wd.all_gather_matmul(a, b, return_a=True),
                   copy_gather_mm, lambda: torch.matmul(full, b)):
            heat(fn)
            res.append(time_us(fn, 3))
        out("| %dx%dx%d | %.1f | %.1f | %.1f | %.1f | %.3f |" % (m, n, k, res[0], res[1], res[2], res[3], res[0] / res[2]))
        ROWS.append(("ag", m, n, k) + tuple(res))


def main():
    out("torch_comm: torch %s, %d ranks, %s" % (torch.__version__, P, torch.cuda.get_device_name(DEV)))
    which = os.environ.get("WEFT_BENCH", "all_reduce,overhead,ag").split(",")
    if "all_reduce" in which:
        bench_all_reduce()
    if "overhead" in which:
        bench_overhead()
    if "ag" in which:
        bench_ag()
    wd.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
