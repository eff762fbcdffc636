#!/usr/bin/env python3
"""Benchmark weft's row_reduce and row_softmax on the GPU machine against torch and a
device-to-device copy, all measured in this one run.

For each shape it runs `weft run` (which checks the output against a CPU reference, then times
the kernel and a copy of the input with CUDA events: warm-up, median of 50) for a few configs,
and times torch.softmax / torch.sum with CUDA events the same way.  Bandwidth counts one read and
one write per element for softmax and one read for row_reduce.

usage: python3 bench/rows.py [--weft build/weft] [--quick]   (writes a table to stdout)
"""
import argparse, os, re, subprocess, sys, time

SHAPES = [  # (family, dtype, rows, cols, [configs as --set lists])
    ("row_softmax", "f32", 8192, 32768, [
        ["mode=onchip", "max_cols=32768", "cluster=1", "threads=1024"],
        ["mode=onchip", "max_cols=32768", "cluster=2", "threads=512", "min_blocks=2", "exchange=push"]]),
    ("row_softmax", "f32", 2048, 262144, [
        ["mode=onchip", "max_cols=262144", "cluster=8", "threads=1024", "persistent=true"],
        ["mode=onchip", "max_cols=262144", "cluster=8", "threads=1024", "persistent=true", "exchange=push"],
        ["mode=onchip", "max_cols=262144", "cluster=8", "threads=1024", "exchange=push"]]),
    ("row_softmax", "bf16", 4096, 262144, [
        ["mode=onchip", "max_cols=262144", "cluster=4", "threads=1024", "persistent=true"],
        ["mode=onchip", "max_cols=262144", "cluster=4", "threads=1024", "persistent=true", "exchange=push"],
        ["mode=onchip", "max_cols=262144", "cluster=8", "threads=512", "min_blocks=2", "persistent=true", "exchange=push"]]),
    ("row_softmax", "f32", 32, 1048576, [
        ["mode=stream", "cluster=16", "nonportable=true", "threads=1024", "unroll=4"],
        ["mode=stream", "cluster=16", "nonportable=true", "threads=1024", "unroll=4", "exchange=push"],
        ["mode=stream", "cluster=8", "threads=1024", "unroll=4"],
        ["mode=stream", "cluster=16", "nonportable=true", "threads=512", "unroll=8", "min_blocks=2"],
        ["mode=stream", "cluster=16", "nonportable=true", "threads=256", "unroll=8", "min_blocks=4"]]),
    ("row_reduce", "f32", 8192, 32768, [
        ["cluster=1", "threads=512", "unroll=4", "min_blocks=2"],
        ["cluster=1", "threads=512", "unroll=4", "min_blocks=2", "persistent=true"]]),
    ("row_reduce", "f32", 2048, 262144, [
        ["cluster=4", "threads=512", "unroll=4", "min_blocks=2"],
        ["cluster=4", "threads=512", "unroll=4", "min_blocks=2", "persistent=true"]]),
    ("row_reduce", "bf16", 4096, 262144, [
        ["cluster=4", "threads=512", "unroll=4", "min_blocks=2"],
        ["cluster=4", "threads=512", "unroll=8", "min_blocks=2", "persistent=true"]]),
    ("row_reduce", "f32", 32, 1048576, [
        ["cluster=16", "nonportable=true", "threads=128", "unroll=8", "min_blocks=8", "exchange=push"],
        ["cluster=16", "nonportable=true", "threads=512", "unroll=8", "min_blocks=2"],
        ["cluster=16", "nonportable=true", "threads=256", "unroll=8", "min_blocks=4"],
        ["cluster=16", "nonportable=true", "threads=128", "unroll=8", "min_blocks=8"]]),
]

TIME_RE = re.compile(r"time: (\S+): median ([\d.]+) us, ([\d.]+) GB/s; device copy of the input: ([\d.]+) us, "
                     r"([\d.]+) GB/s \(read\+write\); ratio to copy ([\d.]+)")


def torch_baseline(family, dtype, rows, cols):
    import torch
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    x = torch.empty(rows, cols, device="cuda", dtype=dt).uniform_(-8, 8)
    y = torch.empty_like(x)
    fn = (lambda: torch.softmax(x, dim=-1)) if family == "row_softmax" else (lambda: torch.sum(x, dim=1))
    def med(f, n=50):
        for _ in range(3):
            f()
        ts = []
        for _ in range(n):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); f(); b.record(); b.synchronize()
            ts.append(a.elapsed_time(b))
        ts.sort()
        return ts[len(ts) // 2]
    t = med(fn)
    tc = med(lambda: y.copy_(x))
    nbytes = x.numel() * x.element_size()
    moved = 2 * nbytes if family == "row_softmax" else nbytes
    del x, y
    torch.cuda.empty_cache()
    return t * 1e3, moved / (t * 1e6), 2 * nbytes / (tc * 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", default="build/weft")
    ap.add_argument("--quick", action="store_true", help="first config of each shape only")
    ap.add_argument("--family", help="only this family")
    args = ap.parse_args()
    def example(family, sets):
        if family == "row_reduce":
            return "examples/row_reduce.lua"
        return "examples/row_softmax_stream.lua" if "mode=stream" in sets else "examples/row_softmax.lua"
    rows_out = []
    log = open(os.path.join(os.environ.get("OUT", "/tmp"), "bench_rows.log"), "w")
    for family, dtype, rows, cols, configs in SHAPES:
        if args.family and family != args.family:
            continue
        tt_us, t_gbs, t_copy = torch_baseline(family, dtype, rows, cols)
        best = None
        for sets in (configs[:1] if args.quick else configs):
            cmd = [args.weft, "run", example(family, sets), "--set", "dtype=" + dtype]
            for s in sets:
                cmd += ["--set", s]
            cmd += ["--rows", str(rows), "--cols", str(cols)]
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            log.write("$ " + " ".join(cmd) + "\n" + p.stdout + p.stderr + "\n")
            log.flush()
            m = TIME_RE.search(p.stdout)
            check = "PASS" if "check: " in p.stdout and ": PASS" in p.stdout else "FAIL"
            if p.returncode != 0 or not m:
                print(f"# {family} {dtype} {rows}x{cols} {' '.join(sets)}: rc={p.returncode} {p.stderr.strip()[:300]}")
                continue
            name, us, gbs, cus, cgbs, ratio = m.group(1), *map(float, m.groups()[1:])
            r = dict(family=family, dtype=dtype, shape=f"{rows}x{cols}", sets=" ".join(sets), us=us, gbs=gbs,
                     copy=cgbs, ratio=ratio, check=check, torch_us=tt_us, torch_gbs=t_gbs, torch_copy=t_copy,
                     wall=time.time() - t0)
            print(f"# {family:11s} {dtype:4s} {rows}x{cols}: {r['sets']:55s} {us:9.1f} us {gbs:7.0f} GB/s "
                  f"ratio {ratio:.3f} {check}", flush=True)
            if best is None or us < best["us"]:
                best = r
        if best:
            rows_out.append(best)
    print()
    print("| family | dtype | rows x cols | best config | weft us | weft GB/s | copy GB/s | weft/copy | "
          "torch us | torch GB/s | speed-up vs torch | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows_out:
        print(f"| {r['family']} | {r['dtype']} | {r['shape']} | {r['sets']} | {r['us']:.1f} | {r['gbs']:.0f} | "
              f"{r['copy']:.0f} | {r['ratio']:.3f} | {r['torch_us']:.1f} | {r['torch_gbs']:.0f} | "
              f"{r['torch_us'] / r['us']:.2f}x | {r['check']} |")


if __name__ == "__main__":
    main()
