"""bench/compare_nccl.py OUTDIR: weft's allreduce tables beside NCCL's (from bench/multi_gpu.sh).
For each dtype and message size: NCCL's time, weft's algorithms, the fastest weft's time as a
fraction of NCCL's, and bus bandwidth ratios; then the issue's two targets.  Launched plainly
first; then, where the logs exist (weft_<dtype>_<algo>_pdl.log), the same with pdl = true (NCCL
is launched as ncclAllReduce launches it either way).  Where ncclsym_<dtype>.log exists (nccl_bench
... symmetric: NCCL's symmetric kernels on registered windows), its times stand beside NCCL's and the
best weft's time is also given as a fraction of them."""
import glob
import os
import re
import sys

out = sys.argv[1]


def table(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    for line in open(path):
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            rows[int(m.group(1))] = (float(m.group(3)), float(m.group(5)))   # time_us, busbw
    return rows


ALGOS = ("one_shot", "two_shot", "one_shot_ll")


def compare(dt, nccl, sym, suffix, label):
    weft = {a: table(os.path.join(out, f"weft_{dt}_{a}{suffix}.log")) for a in ALGOS}
    if not any(weft.values()):
        return
    print(f"\n{dt}, {label}: time in us (busbw GB/s); ratio = best weft time / NCCL time"
          + ("; sym ratio = best weft time / NCCL symmetric time" if sym else ""))
    print(f"{'bytes':>10} {'nccl':>16} {'one_shot':>16} {'two_shot':>16} {'one_shot_ll':>16} {'time ratio':>10} {'busbw ratio':>11}"
          + (f" {'nccl sym':>16} {'sym ratio':>9}" if sym else ""))
    small, big, small_sym = [], None, []
    for b in sorted(nccl):
        n_us, n_bw = nccl[b]
        cells, best = [], None
        for a in ALGOS:
            r = weft[a].get(b)
            cells.append(f"{r[0]:8.2f} ({r[1]:6.1f})" if r else f"{'-':>16}")
            if r and (best is None or r[0] < best[0]):
                best = r
        ratio = best[0] / n_us if best else float("nan")
        bw = best[1] / n_bw if best and n_bw > 0 else float("nan")
        tail = ""
        if sym:
            sr = sym.get(b)
            sratio = best[0] / sr[0] if best and sr else float("nan")
            tail = f" {sr[0]:8.2f} ({sr[1]:6.1f}) {sratio:9.3f}" if sr else f" {'-':>16} {'-':>9}"
            if sr and b <= 256 * 1024:
                small_sym.append(sratio)
        print(f"{b:>10} {n_us:8.2f} ({n_bw:6.1f}) {' '.join(cells)} {ratio:10.3f} {bw:11.3f}{tail}")
        if b <= 256 * 1024:
            small.append(ratio)
        if b == 256 << 20:
            big = bw
    if small:
        print(f"target 1 ({label}), messages <= 256 KB: weft/NCCL time <= 0.5: worst {max(small):.3f} -> "
              f"{'met' if max(small) <= 0.5 else 'NOT met'}")
    if small_sym:
        print(f"beside NCCL's symmetric kernels ({label}), messages <= 256 KB: worst weft/NCCL-symmetric time "
              f"{max(small_sym):.3f}, best {min(small_sym):.3f}")
    if big is not None:
        print(f"target 2 ({label}), 256 MB: weft/NCCL bus bandwidth >= 0.9: {big:.3f} -> {'met' if big >= 0.9 else 'NOT met'}")


for path in sorted(glob.glob(os.path.join(out, "nccl_*.log"))):
    dt = re.search(r"nccl_(\w+)\.log", path).group(1)
    nccl = table(path)
    sym = table(os.path.join(out, f"ncclsym_{dt}.log"))
    compare(dt, nccl, sym, "", "launched plainly")
    compare(dt, nccl, sym, "_pdl", "pdl = true")
