#!/usr/bin/env python3
"""weft.torch.all_reduce_rms_norm against what a PyTorch decoder layer runs instead, under torchrun:

    torchrun --standalone --nproc-per-node N bench/arn_torch.py

Rows: tokens {1, 16, 128, 1024, 8192} x hidden {4096, 8192}, bf16 (WEFT_ARN_TOKENS, WEFT_ARN_HIDDEN).
- fused: weft.torch.all_reduce_rms_norm(x, residual, weight) (in place on x and residual).
- nccl:  torch.distributed.all_reduce(x) over an NCCL group, then residual = x + residual and
         torch.nn.functional.rms_norm(residual) * weight: the unfused sequence on real GPUs.  NCCL
         takes one rank per GPU; where ranks share a GPU (MPS) this row is left out and says why.
- weft_ar: weft.torch.all_reduce, then the same torch add and rms_norm (runs everywhere).
Before timing, each shape is checked once: the fused y and h against weft_ar's sequence on the same
inputs (every rank), within rms_norm's bf16 rounding.
Timing: CUDA events around back-to-back calls after heating the GPU 200 ms; the slowest rank's
median over WEFT_BENCH_SAMPLES (default 20) counts, a gloo barrier before each.
"""
import os
import time

import torch
import torch.distributed as dist

import dist_timing  # bench/, beside this script

S = dist_timing.session("arn_torch", 20)
from weft.torch import dist as wd  # noqa: E402

RANK, P, DEV, SAMPLES, out = S.rank, S.p, S.dev, S.samples, S.out
TOKENS = [int(t) for t in os.environ.get("WEFT_ARN_TOKENS", "1 16 128 1024 8192").split()]
HIDDEN = [int(h) for h in os.environ.get("WEFT_ARN_HIDDEN", "4096 8192").split()]
EPS = 1e-6


def heat(fn):
    dist_timing.heat(fn, 200)


def time_us(fn, reps):
    return dist_timing.time_us(fn, reps, SAMPLES, wd.check)


nccl, NCCL_WHY = dist_timing.nccl_group(DEV, P)   # NCCL wants a GPU per rank


def unfused(x, residual, weight, allreduce):
    """allreduce(x) -> the sum (weft.torch.all_reduce returns a new tensor; NCCL's reduces in place)."""
    s = allreduce(x)
    residual.add_(s)
    x.copy_(torch.nn.functional.rms_norm(residual, (x.shape[-1],), weight, EPS))


def nccl_all_reduce(t):
    dist.all_reduce(t, group=nccl)
    return t


def main():
    out("## all_reduce_rms_norm, %d ranks, bf16 (slowest rank, median of %d)%s" % (
        P, SAMPLES, "" if nccl else "; nccl rows left out: " + NCCL_WHY))
    out("| tokens | hidden | fused us | nccl+torch us | weft_ar+torch us | fused/nccl | fused/weft_ar |")
    out("| --- | --- | --- | --- | --- | --- | --- |")
    bad = 0
    for hidden in HIDDEN:
        for tokens in TOKENS:
            g = torch.Generator(device=DEV).manual_seed(1000 + RANK)
            x0 = torch.rand(tokens, hidden, device=DEV, generator=g).bfloat16() * 2 - 1
            gs = torch.Generator(device=DEV).manual_seed(7)   # the same on every rank
            r0 = torch.rand(tokens, hidden, device=DEV, generator=gs).bfloat16() * 2 - 1
            w = torch.rand(hidden, device=DEV, generator=gs).bfloat16() + 0.5
            # the check: fused against weft's allreduce + torch's add and rms_norm
            x, r = x0.clone(), r0.clone()
            wd.all_reduce_rms_norm(x, r, w, EPS)
            xu, ru = x0.clone(), r0.clone()
            unfused(xu, ru, w, wd.all_reduce)
            torch.cuda.synchronize()
            # h to the bit (the same fold, the same rounded add); y within two bf16 roundings (torch's
            # rms_norm may round the normalised row before the weight, weft rounds once)
            h_ok = torch.equal(r, ru)
            dy = (x.float() - xu.float()).abs()
            y_ok = bool((dy <= 2 ** -6 * xu.float().abs() + 1e-5).all())
            if not dist_timing.agree_all(h_ok and y_ok):
                hd = int((r != ru).sum())
                out("FAIL at %d x %d (rank 0): h: %d of %d elements differ; y: max |diff| %.3g, max |diff| / |y| %.3g" % (
                    tokens, hidden, hd, r.numel(), float(dy.max()), float((dy / xu.float().abs().clamp_min(1e-30)).max())))
                bad += 1
                continue
            reps = 20 if tokens * hidden <= 1 << 20 else 3
            x, r = x0.clone(), r0.clone()
            heat(lambda: wd.all_reduce_rms_norm(x, r, w, EPS))
            tf = time_us(lambda: wd.all_reduce_rms_norm(x, r, w, EPS), reps)
            xu, ru = x0.clone(), r0.clone()
            heat(lambda: unfused(xu, ru, w, wd.all_reduce))
            tw = time_us(lambda: unfused(xu, ru, w, wd.all_reduce), reps)
            tn = None
            if nccl is not None:
                xn, rn = x0.clone(), r0.clone()
                heat(lambda: unfused(xn, rn, w, nccl_all_reduce))
                tn = time_us(lambda: unfused(xn, rn, w, nccl_all_reduce), reps)
            out("| %d | %d | %.2f | %s | %.2f | %s | %.3f |" % (
                tokens, hidden, tf, "%.2f" % tn if tn else "-", tw, "%.3f" % (tf / tn) if tn else "-", tf / tw))
    return bad


dist_timing.finish(main(), wd)
