#!/usr/bin/env python3
"""weft.torch's ops beside torch's own, on the GPU machine, in one run.

(a) Host overhead: one call on a tiny tensor (1 x 8 softmax and the like), many calls back to
    back, host time per call (time.perf_counter over the loop).  For a tiny tensor the GPU is not
    the bottleneck: the script checks that by timing the loop's kernels with CUDA events too and
    printing how long the GPU needed after the host's last call (the drain: ~0 means the GPU kept
    up and the host was the limit).  Target: weft <= torch + 5 us per call.  The eager wrapper
    (weft.torch.softmax) and the registered op through the dispatcher (torch.ops.weft.softmax)
    are both timed.
(b) Device time at model shapes: CUDA events around 20 back-to-back calls, median of --iters (>= 50) after
    heating each op ~200 ms the same way; the ratio is torch's time over weft's (> 1: weft faster).
--profile: cProfile of the eager launch path (10000 tiny softmax calls), the top entries.

usage: PYTHONPATH=build/python python3 bench/torch_ops.py [--iters 100]
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import weft.torch as wt

DEV = torch.device("cuda", 0)


def host_us(f, n):
    for _ in range(200):
        f()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    t1 = time.perf_counter()
    e1.record()
    e1.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, e0.elapsed_time(e1) * 1e3 / n, (t2 - t1) * 1e6


def overhead(n):
    x8 = torch.randn(1, 8, device=DEV)
    w8 = torch.randn(8, device=DEV)
    xr = torch.randn(1, 8, device=DEV)
    a = torch.randn(8, 8, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8, 8, device=DEV, dtype=torch.bfloat16)
    cases = [
        ("softmax 1x8 f32", lambda: wt.softmax(x8), lambda: torch.softmax(x8, -1)),
        ("softmax 1x8 f32 (torch.ops.weft)", lambda: torch.ops.weft.softmax(x8), lambda: torch.softmax(x8, -1)),
        ("rms_norm 1x8 f32", lambda: wt.rms_norm(x8, w8, 1e-6), lambda: F.rms_norm(x8, (8,), w8, 1e-6)),
        ("rms_norm 1x8 f32 + residual", lambda: wt.rms_norm(x8, w8, 1e-6, residual=xr),
         lambda: F.rms_norm(xr.add_(x8), (8,), w8, 1e-6)),
        ("row_reduce sum 1x8 f32", lambda: wt.row_reduce(x8, "sum"), lambda: x8.sum(-1)),
        ("matmul 8x8x8 bf16", lambda: wt.matmul(a, b), lambda: torch.matmul(a, b)),
        ("linear 8x8 -> 8 bf16", lambda: wt.linear(a, b), lambda: F.linear(a, b)),
    ]
    print("(a) host time per call, %d calls back to back (us); gpu = kernel time per call from events; "
          "drain = GPU time left after the host's last call" % n)
    print("%-34s %9s %9s %9s   %9s %9s %9s   %8s  %s" % ("op", "weft", "gpu", "drain", "torch", "gpu", "drain",
                                                       "weft-torch", "target <= +5 us"))
    for name, fw, ft in cases:
        w, wg, wd = host_us(fw, n)
        t, tg, td = host_us(ft, n)
        print("%-34s %9.2f %9.2f %9.0f   %9.2f %9.2f %9.0f   %+8.2f  %s" % (name, w, wg, wd, t, tg, td, w - t,
                                                                          "met" if w <= t + 5 else "MISSED"),
              flush=True)
    print("(the GPU is the limit only where gpu ~ host time and drain is large; else the host is)\n")


def device_us(f, iters, reps=20):
    """Median over iters of (events around reps back-to-back calls) / reps: while the kernel takes
    longer than the host's call the queue stays full, so this is the kernel's time; one call between
    two events would add the host's launch path to it.  A tiny shape stays host-bound either way."""
    t0 = time.time()
    while time.time() - t0 < 0.2:
        f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        s.record()
        for _ in range(reps):
            f()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / reps)
    return statistics.median(times)


def speed(iters):
    bf = torch.bfloat16
    r = lambda *s, dt=bf: torch.empty(s, device=DEV, dtype=dt).uniform_(-1, 1)  # noqa: E731
    sm = r(4096, 32000)
    x1, w1 = r(8192, 4096), r(4096)
    res1 = r(8192, 4096)
    x2 = r(16, 4096)
    rr = r(32, 1048576, dt=torch.float32)
    a, b = r(4096, 4096), r(4096, 4096)
    xd, wl = r(16, 4096), r(14336, 4096)
    xp = r(8192, 4096)
    # off the multiples of 8: K padded (copies of both operands), row-major B with N off them
    # copied column-major; and K off the 128-byte lines, where nothing is copied
    ap, bp = r(10000, 2500), r(2500, 2500)
    an, bn = r(3500, 7000), r(7000, 3500)
    xo, wo = r(2000, 3000), r(7000, 3000)
    wt4 = r(4096, 4096)
    cases = [
        ("softmax 4096x32000 bf16 (vocab)", lambda: wt.softmax(sm), lambda: torch.softmax(sm, -1)),
        ("rms_norm 8192x4096 bf16", lambda: wt.rms_norm(x1, w1), lambda: F.rms_norm(x1, (4096,), w1, 1e-6)),
        ("rms_norm 8192x4096 bf16 + residual", lambda: wt.rms_norm(x1, w1, residual=res1),
         lambda: F.rms_norm(res1.add_(x1), (4096,), w1, 1e-6)),
        ("rms_norm 16x4096 bf16", lambda: wt.rms_norm(x2, w1), lambda: F.rms_norm(x2, (4096,), w1, 1e-6)),
        ("row_reduce sum 32x1M f32", lambda: wt.row_reduce(rr, "sum"), lambda: rr.sum(-1)),
        ("matmul 4096^3 bf16", lambda: wt.matmul(a, b), lambda: torch.matmul(a, b)),
        ("linear 16x4096 -> 14336 bf16 (decode)", lambda: wt.linear(xd, wl), lambda: F.linear(xd, wl)),
        ("linear 8192x4096 -> 14336 bf16", lambda: wt.linear(xp, wl), lambda: F.linear(xp, wl)),
        ("matmul 4096^3 bf16, b = w.t() (no copy)", lambda: wt.matmul(a, wt4.t()), lambda: torch.matmul(a, wt4.t())),
        ("matmul 10000x2500x2500 bf16 (K padded, b copied)", lambda: wt.matmul(ap, bp), lambda: torch.matmul(ap, bp)),
        ("matmul 3500x3500x7000 bf16 (b copied)", lambda: wt.matmul(an, bn), lambda: torch.matmul(an, bn)),
        ("linear 2000x3000 -> 7000 bf16 (K off 64)", lambda: wt.linear(xo, wo), lambda: F.linear(xo, wo)),
    ]
    print("(b) device time, CUDA events around 20 back-to-back calls, median of %d after ~200 ms of heat each (us per call); ratio = torch / weft" % iters)
    print("%-40s %10s %10s %8s" % ("op", "weft", "torch", "ratio"))
    rows = []
    for name, fw, ft in cases:
        w = device_us(fw, iters)
        t = device_us(ft, iters)
        rows.append((name, w, t))
        print("%-40s %10.2f %10.2f %8.3f" % (name, w, t, t / w), flush=True)
    print("\n| op | weft us | torch us | torch / weft |\n| --- | --- | --- | --- |")
    for name, w, t in rows:
        print("| %s | %.2f | %.2f | %.3f |" % (name, w, t, t / w))


def profile():
    import cProfile
    import pstats
    x8 = torch.randn(1, 8, device=DEV)
    for _ in range(100):
        wt.softmax(x8)
    p = cProfile.Profile()
    p.enable()
    for _ in range(10000):
        wt.softmax(x8)
    p.disable()
    torch.cuda.synchronize()
    print("cProfile, 10000 calls of weft.torch.softmax on 1 x 8:")
    pstats.Stats(p, stream=sys.stdout).sort_stats("tottime").print_stats(15)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--speed-only", action="store_true", help="only (b), the device times")
    a = ap.parse_args()
    if a.iters < 50:
        ap.error("--iters: at least 50")
    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name()), flush=True)
    if not a.speed_only:
        overhead(a.calls)
    speed(a.iters)
    if a.profile:
        profile()
    return 0


if __name__ == "__main__":
    sys.exit(main())
