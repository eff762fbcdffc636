#!/usr/bin/env python3
"""weft.torch.matmul_reduce_scatter against what a PyTorch row-parallel layer runs instead, under torchrun:

    torchrun --standalone --nproc-per-node N bench/mrs_torch.py      (bench/torch_dist_session.sh mrs)

Shapes M x N x K in total (each rank: A_r M x K/N, B_r K/N x N; it keeps M/P rows of the sum), bf16:
1024^3, 4096^3, 8192^3 and Llama-3-70B's down projection at 4096 tokens, M=4096 N=8192 K=28672
(WEFT_MRS_SHAPES="MxNxK ...").  Rows:
- fused:   weft.torch.matmul_reduce_scatter(fuse=True), the gemm_rs kernel.
- unfused: fuse=False, torch.matmul (cuBLAS) then weft's reduce_scatter.
- auto:    fuse="auto", what the rule (weft/torch/configs.py choose_fuse) picks; the column says which.
- nccl:    torch.matmul then torch.distributed.reduce_scatter_tensor over an NCCL group.  NCCL takes
           one rank per GPU; where ranks share a GPU (MPS) the row is left out and says why.
- symm:    torch.ops.symm_mem.fused_matmul_reduce_scatter (torch's async-TP op) where symmetric
           memory is available on the NCCL group; else left out, saying why.
Before timing, each shape is checked once on every rank: the fused and unfused results against an
f32 reference (every rank's shards regenerated on the GPU from their seeds, TF32 off), within the
bounds tests/python/dist/matmul_cases.py uses (max |err| / bound printed), and fused twice must be
the same bits.  Timing: CUDA events around back-to-back calls after heating 200 ms; the slowest
rank's median of WEFT_BENCH_SAMPLES (default 20), a gloo barrier before each (bench/dist_timing.py).
"""
import os

import torch
import torch.distributed as dist

import dist_timing  # bench/, beside this script

S = dist_timing.session("mrs_torch", 20)
from weft.torch import configs  # noqa: E402
from weft.torch import dist as wd  # noqa: E402
from weft.torch import dist_matmul as wm  # noqa: E402

RANK, P, DEV, SAMPLES, out = S.rank, S.p, S.dev, S.samples, S.out
torch.backends.cuda.matmul.allow_tf32 = False
SHAPES = [tuple(int(v) for v in s.split("x"))
          for s in os.environ.get("WEFT_MRS_SHAPES", "1024x1024x1024 4096x4096x4096 8192x8192x8192 4096x8192x28672").split()]

nccl, NCCL_WHY = dist_timing.nccl_group(DEV, P)
SYMM_WHY = NCCL_WHY
if nccl is not None:
    try:
        from torch.distributed import _symmetric_memory as symm
        symm.enable_symm_mem_for_group(nccl.group_name)
        _ = torch.ops.symm_mem.fused_matmul_reduce_scatter
    except Exception as e:   # an older torch, or no symmetric memory here
        SYMM_WHY = "torch's symmetric memory: %s" % str(e).splitlines()[0][:120]


def shards(rank, m, n, k):
    """rank's A_r [m, k] and B_r [k, n], made on the GPU from a seed any rank can use."""
    g = torch.Generator(device=DEV).manual_seed(1000 + 17 * rank + m + 3 * n + 7 * k)
    a = (torch.rand(m, k, device=DEV, generator=g) * 2 - 1).bfloat16()
    b = (torch.rand(k, n, device=DEV, generator=g) * 2 - 1).bfloat16()
    return a, b


def check(m, n, k, a, b):
    """(ok, text): fused and unfused against the f32 reference of this rank's rows."""
    rows = slice(RANK * (m // P), (RANK + 1) * (m // P))
    want = scale = None
    for r in range(P):
        ar, br = shards(r, m, n, k)
        ar = ar[rows].float()
        w, s = ar @ br.float(), ar.abs() @ br.float().abs()
        want, scale = (w, s) if want is None else (want + w, scale + s)
    eps = 2.0 ** -8
    worst = []
    ok = True
    for fuse in (True, False):
        c = wm.matmul_reduce_scatter(a, b, fuse=fuse)
        torch.cuda.synchronize()
        # f32 accumulation (the reference's own error too) and the output's rounding; unfused: the partials' too
        bound = (8 * P * k * 2.0 ** -24 + (0 if fuse else eps)) * scale + 2 * eps * want.abs()
        err = (c.float() - want).abs()
        r = float((err / bound).max())
        worst.append(r)
        ok = ok and r <= 1.0
        if fuse:
            again = wm.matmul_reduce_scatter(a, b, fuse=True)
            torch.cuda.synchronize()
            ok = ok and torch.equal(c, again)
    return ok, "max |err| / bound: fused %.3f, unfused %.3f" % tuple(worst)


def main():
    out("## matmul_reduce_scatter, %d ranks, bf16, b row-major (slowest rank, median of %d)%s%s" % (
        P, SAMPLES, "" if nccl else "; nccl rows left out: " + NCCL_WHY,
        "; symm rows left out: " + SYMM_WHY if SYMM_WHY and nccl else ""))
    out("| M x N x K | fused us | unfused us | auto us (path) | nccl us | symm us | fused/unfused | auto/best | check |")
    out("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    bad = 0
    for m, n, kt in SHAPES:
        if m % P or kt % P:
            out("| %dx%dx%d | skipped: M and K must split over %d ranks | | | | | | | |" % (m, n, kt, P))
            continue
        k = kt // P
        a, b = shards(RANK, m, n, k)
        ok, text = check(m, n, k, a, b)
        if not dist_timing.agree_all(ok):
            out("| %dx%dx%d | FAIL (rank 0: %s) | | | | | | | |" % (m, n, kt, text))
            bad += 1
            continue
        reps = 20 if m * n * k <= 1 << 32 else 3
        row = {}
        for name, fn in [("fused", lambda: wm.matmul_reduce_scatter(a, b, fuse=True)),
                         ("unfused", lambda: wm.matmul_reduce_scatter(a, b, fuse=False)),
                         ("auto", lambda: wm.matmul_reduce_scatter(a, b))]:
            dist_timing.heat(fn, 200)
            row[name] = dist_timing.time_us(fn, reps, SAMPLES, wd.check)
        if nccl is not None:
            y = torch.empty(m // P, n, dtype=a.dtype, device=DEV)

            def nccl_fn():
                dist.reduce_scatter_tensor(y, torch.matmul(a, b), group=nccl)
            dist_timing.heat(nccl_fn, 200)
            row["nccl"] = dist_timing.time_us(nccl_fn, reps, SAMPLES)
            if SYMM_WHY is None:
                def symm_fn():
                    torch.ops.symm_mem.fused_matmul_reduce_scatter(a, b, "sum", 0, nccl.group_name)
                dist_timing.heat(symm_fn, 200)
                row["symm"] = dist_timing.time_us(symm_fn, reps, SAMPLES)
        path = "fused" if configs.choose_fuse("matmul_reduce_scatter", m, n, k, P)[0] else "unfused"
        best = min(v for kk, v in row.items() if kk != "auto")
        f = lambda key: "%.2f" % row[key] if key in row else "-"   # noqa: E731
        out("| %dx%dx%d | %s | %s | %s (%s) | %s | %s | %.3f | %.3f | %s |" % (
            m, n, kt, f("fused"), f("unfused"), f("auto"), path, f("nccl"), f("symm"), row["fused"] / row["unfused"],
            row["auto"] / best, text))
    return bad


dist_timing.finish(main(), wd)
