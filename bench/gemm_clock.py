#!/usr/bin/env python3
"""bench/gemm_clock.py: is a GEMM slower per clock, or at a lower clock?  Runs each op (cuBLASLt
through torch.mm, and weft configs) back to back for --secs seconds while nvidia-smi samples the
SM clock and the board power every 20 ms, then prints per op: us per launch (events around the
whole window), TFLOP/s, the mean SM clock and power over the window (its first 0.3 s left out),
and flop per SM clock per SM -- which separates "the kernel does less per cycle" from "the GPU
ran it at a lower clock" (power or thermal limits).

  PYTHONPATH=build/python python3 bench/gemm_clock.py --out DIR [--secs 2] [--shape MxNxK:WEFT;WEFT ...]
A WEFT config is key=value pairs joined by commas (tile.m=128,tile.n=128,stages=6,cluster.m=2,...),
on top of family gemm, the dtype and B column-major, and the family's defaults for the rest (its
epilogue is "direct" unless epilogue=tma is given; each op's kernel name is printed). "@DIR,"
first compiles it from the weft source tree DIR (gen/ and templates/: a variant of the device
code under trial) into a cache of its own.
Each op's C is first poisoned with NaN, computed once, and its largest error against a float64
reference on rows from every 64-row group is printed beside cuBLASLt's.  Diagnostic only: nothing
here is a target.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_args  # noqa: E402
import smi_clock  # noqa: E402


def config(dtype, kv):
    try:
        return gemm_args.config(dtype, kv)
    except ValueError as e:
        raise SystemExit("gemm_clock.py: %s" % e)


def run(args, plan, dt, ctx, variants, torch, weft):
    """Each op of each shape: checked once, then launched back to back for about --secs; returns
    the windows (label, shape, wall start, wall end, us per launch, max error, cuBLASLt's error)."""
    def context(kv):
        if not kv.startswith("@"):
            return ctx, kv
        src, _, kv = kv[1:].partition(",")
        if src not in variants:
            variants[src] = weft.Context(source_dir=src, cache_dir=os.path.join(args.out, "cache-" + os.path.basename(src)))
        return variants[src], kv
    windows = []
    ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.current_stream().cuda_stream
    torch.backends.cuda.preferred_blas_library("cublaslt")
    for shape, m, n, k, kvs in plan:
        g = torch.Generator(device="cuda").manual_seed(19)
        a = torch.empty(m, k, device="cuda", dtype=dt).uniform_(-1, 1, generator=g)
        b = torch.empty(n, k, device="cuda", dtype=dt).uniform_(-1, 1, generator=g)
        c = torch.empty(m, n, device="cuda", dtype=dt)
        # rows from every 64-row group (each consumer warpgroup's), and the last
        idx = torch.unique(torch.cat([torch.arange(0, m, max(1, m // 256), device="cuda"),
                                      torch.tensor([m - 1], device="cuda")]))
        ref = a[idx].double() @ b.double().t()
        ops = [("cublaslt", lambda: torch.mm(a, b.t(), out=c))]
        for kv in kvs:
            cx, body = context(kv)
            try:   # (the package writes the dict as Lua itself, every value quoted as data)
                kern = cx.compile(config(args.dtype, body))
            except Exception as e:
                raise SystemExit("gemm_clock.py: %s: %s" % (kv, e))
            try:
                v = gemm_args.launch_args(kern, m, n, k)(a.data_ptr(), b.data_ptr(), c.data_ptr())
            except RuntimeError as e:
                raise SystemExit("gemm_clock.py: %s: %s" % (kv, e))
            # (the kernel's name says every field, the family's defaults included: epilogue
            # "direct" unless the config says "tma", as bench/gemm_llm.py's schedules do)
            print("# %s %s: %s" % (shape, kv, kern.manifest.name), flush=True)
            ops.append((kv, (lambda kern=kern, v=v: kern._launch_trusted(v, stream))))
        base_err = None
        for label, fn in ops:
            c.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = (c[idx].double() - ref).abs().max().item()   # NaN if any sampled output was left unwritten
            base_err = err if base_err is None else base_err
            # about --secs of launches: time one batch first
            ev0.record()
            for _ in range(10):
                fn()
            ev1.record()
            ev1.synchronize()
            per = ev0.elapsed_time(ev1) / 10 / 1e3
            count = max(10, int(args.secs / per))
            time.sleep(1.0)   # a quiet gap between windows
            t0 = time.time()
            ev0.record()
            for _ in range(count):
                fn()
            ev1.record()
            ev1.synchronize()
            t1 = time.time()
            us = ev0.elapsed_time(ev1) * 1e3 / count
            windows.append((label, shape, t0, t1, us, err, base_err))
            print("# %s %s: %.1f us, max error %.3g on %d rows (cuBLASLt %.3g)" % (shape, label, us, err, len(idx), base_err),
                  flush=True)
        del a, b, c, ref
        torch.cuda.empty_cache()
    return windows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--secs", type=float, default=2.0)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--shape", action="append", required=True, help="MxNxK:cfg;cfg;...")
    ap.add_argument("--check-only", action="store_true", help="check the arguments, run nothing")
    args = ap.parse_args()
    if args.dtype not in ("bf16", "f16"):
        raise SystemExit("gemm_clock.py: --dtype %r: bf16 or f16" % args.dtype)
    plan = []   # (shape text, m, n, k, [config text, ...]): everything checked before anything runs
    for spec in args.shape:
        shape, _, cfgs = spec.partition(":")
        try:
            m, n, k = (int(x) for x in shape.split("x"))
        except ValueError:
            raise SystemExit("gemm_clock.py: --shape %r: MxNxK, then :configs" % spec)
        if min(m, n, k) < 1:
            raise SystemExit("gemm_clock.py: --shape %r: sizes from 1" % spec)
        kvs = [kv for kv in cfgs.split(";") if kv]
        for kv in kvs:
            config(args.dtype, kv.partition(",")[2] if kv.startswith("@") else kv)
        plan.append((shape, m, n, k, kvs))
    if args.check_only:
        print("%d shape(s), %d config(s): ok" % (len(plan), sum(len(p[4]) for p in plan)))
        return 0
    import torch
    import weft
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    os.makedirs(args.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    smi = smi_clock.Sampler(os.path.join(args.out, "smi.csv"), props)
    if smi.note:
        print("# " + smi.note)
    ctx = weft.Context()
    variants = {}
    try:
        windows = run(args, plan, dt, ctx, variants, torch, weft)
        time.sleep(0.5)
    finally:
        note = smi.stop()
        if note:
            print("# " + note)
        for c in variants.values():
            c.close()
        ctx.close()
    samples = smi.samples()
    print("shape\top\tus\tTFLOP/s\tSM MHz\tpower W\ttemp C\tflop/clk/SM\tsamples\tthrottle reasons\tmax error (cuBLASLt's)")
    for label, shape, t0, t1, us, err, base_err in windows:
        m, n, k = (int(x) for x in shape.split("x"))
        w = smi_clock.window(samples, t0 + 0.3, t1)
        if not w:
            print("%s\t%s\t%.1f\t-\t-\t-\t-\t-\t0\t-\t%.3g (%.3g)" % (shape, label, us, err, base_err))
            continue
        tf = 2.0 * m * n * k / (us * 1e-6) / 1e12
        per_clk = 2.0 * m * n * k / (us * 1e-6) / (w["mhz"] * 1e6) / sms
        print("%s\t%s\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%s\t%.3g (%.3g)" % (
            shape, label, us, tf, w["mhz"], w["watts"], w["temp"], per_clk, w["n"], w["reasons"], err, base_err))


if __name__ == "__main__":
    sys.exit(main())
