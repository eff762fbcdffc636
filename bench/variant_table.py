#!/usr/bin/env python3
"""bench/variant_table.py: issue 4's table -- the five ag_gemm variants and cuBLASLt, one shape,
from `weft run` logs (each log's "ag_gemm " row of that shape, as that run measured it).

  python3 bench/variant_table.py --shape 1024x1024x1024 naive_remote=LOG threadload_gather=LOG \
      multimem_gather=LOG gather_then_gemm=LOG fused=LOG

Times are us per launch of the slowest rank (events / graph replay).  cuBLASLt's row is the
cuBLASLt GEMM of the whole M x N x K that each run timed beside its kernel; under MPS every rank
runs it at once on the shared GPU.  The cuBLASLt row shows the range over the runs, and each
variant's ratio is taken against the cuBLASLt of its own run (>1: weft faster)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_table import rows  # noqa: E402


def num(v):
    return None if v in (None, "-") else float(v)


def us(v):
    return "-" if v is None else "%.2f" % v


def main(argv):
    shape, logs = None, []
    it = iter(argv)
    for a in it:
        if a == "--shape":
            shape = next(it)
        elif "=" in a:
            logs.append(a.split("=", 1))
        else:
            sys.exit(__doc__)
    if not shape or not logs:
        sys.exit(__doc__)
    out, cb_ev, cb_gr, ranks = [], [], [], set()
    for label, path in logs:
        r = rows(path, shape) if os.path.exists(path) else []
        if not r:
            out.append((label, None, None, None, None))
            continue
        f = r[-1]
        ranks.add(f["P"])
        ev, gr, bev, bgr = num(f["weft_ev"]), num(f["weft_gr"]), num(f["cublas_ev"]), num(f["cublas_gr"])
        if bev:
            cb_ev.append(bev)
        if bgr:
            cb_gr.append(bgr)
        out.append((label, ev, gr, bev / ev if ev and bev else None, bgr / gr if gr and bgr else None))
    print("ag_gemm variants, %s, P = %s: us per launch (events / graph), vs cuBLASLt of the same run"
          % (shape, "/".join(sorted(ranks)) or "?"))
    print("%-20s %12s %12s %9s %9s" % ("variant", "ev us", "graph us", "vs_cb_ev", "vs_cb_gr"))
    for label, ev, gr, rev, rgr in out:
        if ev is None and gr is None:
            print("%-20s %12s %12s %9s %9s   (no row: not run or failed)" % (label, "-", "-", "-", "-"))
            continue
        print("%-20s %12s %12s %9s %9s" % (label, us(ev), us(gr), "-" if rev is None else "%.3f" % rev,
                                           "-" if rgr is None else "%.3f" % rgr))

    def span(v):
        return "-" if not v else (us(min(v)) if min(v) == max(v) else "%s-%s" % (us(min(v)), us(max(v))))
    print("%-20s %12s %12s" % ("cuBLASLt", span(cb_ev), span(cb_gr)))


if __name__ == "__main__":
    main(sys.argv[1:])
