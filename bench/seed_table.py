#!/usr/bin/env python3
"""bench/seed_table.py: the seed's all-gather + matmul table (8 x H100, M = N = K = 1024, fp16)
with weft's numbers beside it, from `weft run` logs of the ag_gemm family.

  python3 bench/seed_table.py naive_remote=LOG threadload_gather=LOG multimem_gather=LOG \
      gather_then_gemm=LOG gather_then_gemm_multimem=LOG fused=LOG [fused_push=LOG ...] [--shape 1024x1024x1024]

Each LOG is one run's output (its "ag_gemm " rows); the row of the given shape is taken.  The
NCCL all-gather + cuBLASLt column comes from whichever log has it.  Times are ms per launch
(events / graph replay), the slowest rank, as `weft run` measured them."""
import os
import sys

SEED = [  # (seed implementation, its ms on 8 x H100, weft's label)
    ("baselineNcclAllgatherMatmul", 0.052, "nccl+cublas"),
    ("baselineCudaAllgatherMatmul", 0.093, None),
    ("naiveRemoteRead", 0.808, "naive_remote"),
    ("threadloadGatherScalarCompute", 0.531, "threadload_gather"),
    ("multimemGatherScalarCompute", 0.588, "multimem_gather"),
    ("threadloadGatherThenCutlass", 0.043, "gather_then_gemm"),
    ("multimemGatherThenCutlass", 0.043, "gather_then_gemm_multimem"),
    ("(fused WGMMA; target <= 0.030)", None, "fused"),
]
HEAD = ("variant type b M N K P iters weft_ev weft_gr TF_ev TF_gr cublas_ev cublas_gr cbTF_ev cbTF_gr "
        "vs_cb_ev vs_cb_gr nccl_ev nccl_gr vs_nc_ev vs_nc_gr xcheck").split()


def rows(path, shape):
    m, n, k = (int(x) for x in shape.split("x"))
    out = []
    for line in open(path, errors="replace"):
        if not line.startswith("ag_gemm "):
            continue
        f = dict(zip(HEAD, line.split()[1:]))
        if (int(f["M"]), int(f["N"]), int(f["K"])) == (m, n, k):
            out.append(f)
    return out


def ms(v):
    return "-" if v in (None, "-") else "%.3f" % (float(v) / 1e3)


def main(argv):
    shape, logs = "1024x1024x1024", {}
    it = iter(argv)
    for a in it:
        if a == "--shape":
            shape = next(it)
        elif "=" in a:
            label, path = a.split("=", 1)
            logs[label] = path
        else:
            sys.exit(__doc__)
    found, nccl, ranks = {}, None, set()
    for label, path in logs.items():
        r = rows(path, shape) if os.path.exists(path) else []
        if not r:
            print("%s: no row for %s in %s" % (label, shape, path), file=sys.stderr)
            continue
        found[label] = r[-1]
        ranks.add(r[-1]["P"])
        if r[-1]["nccl_ev"] != "-" and nccl is None:
            nccl = {"weft_ev": r[-1]["nccl_ev"], "weft_gr": r[-1]["nccl_gr"]}
    if nccl:
        found["nccl+cublas"] = nccl
    print("all-gather + matmul, %s, P = %s (seed: 8 x H100, fp16)" % (shape, "/".join(sorted(ranks)) or "?"))
    print("%-32s %10s %14s %14s   %s" % ("seed implementation", "seed ms", "weft ms (ev)", "weft ms (graph)", "weft"))
    for name, seed_ms, label in SEED:
        f = found.get(label) if label else None
        print("%-32s %10s %14s %14s   %s" % (name, "-" if seed_ms is None else "%.3f" % seed_ms,
                                            ms(f and f["weft_ev"]), ms(f and f["weft_gr"]), label or "(no weft twin)"))
    for label in sorted(set(found) - {s[2] for s in SEED}):
        f = found[label]
        print("%-32s %10s %14s %14s   %s" % ("(weft only)", "-", ms(f["weft_ev"]), ms(f["weft_gr"]), label))


if __name__ == "__main__":
    main(sys.argv[1:])
