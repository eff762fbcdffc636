#!/usr/bin/env python3
"""bench/gemm_pairs.py FIELD A B ROWS.tsv...: what one field of a GEMM config does, measured.

Reads the rows bench/gemm_rule_regret.lua reads (dtype TAB "k=.. m=.. n=.." TAB the config's
"key=value" fields TAB time_us; bench/data holds them) and pairs every two rows of one file,
dtype and shape whose configs differ only in FIELD, one with FIELD = A and one with FIELD = B
(the fastest of each where a row repeats).  Prints, per shape (M x N x K, B's layout) and tile
width, the pairs' count and the geometric mean of time(B) / time(A) with each ratio, then the
geometric mean over all pairs: below 1, B ran faster.

  python3 bench/gemm_pairs.py cluster.m 1 2 bench/data/gemm_llm_s13*.tsv   (B multicast)
  python3 bench/gemm_pairs.py pdl false true bench/data/gemm_offset_s13*.tsv

Exit 0; 2 on a bad argument or a row that is not dtype, shape, config, time (named by its file
and line: bench/gemm_rows.py); 1 if no two rows pair."""
import argparse
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_rows  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser(prog="gemm_pairs.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("field", metavar="FIELD", help="the config field that differs (pdl, cluster.m, stages, ...)")
    ap.add_argument("a", metavar="A", help="its value in the baseline")
    ap.add_argument("b", metavar="B", help="its value in the other row")
    ap.add_argument("rows", metavar="ROWS.tsv", nargs="+", help="measured rows (bench/data)")
    args = ap.parse_args(argv[1:])
    field, a, b = args.field, args.a, args.b
    if a == b:
        print("gemm_pairs: A and B are both %r: nothing to compare" % a, file=sys.stderr)
        return 2
    try:
        rows = gemm_rows.read(args.rows)
    except gemm_rows.RowsError as e:
        print("gemm_pairs: %s" % e, file=sys.stderr)
        return 2
    # (file, dtype, shape, B layout, tile, the config without field) -> {value: the fastest time}
    pairs = defaultdict(dict)
    for path, dtype, _, dims, kv, t in rows:
        kv = dict(kv)
        v = kv.pop(field, None)
        if v not in (a, b):
            continue
        rest = " ".join("%s=%s" % kw for kw in sorted(kv.items()))
        key = (os.path.basename(path), dtype, dims, kv.get("b_layout", "row"),
               kv.get("tile.m", "?") + "x" + kv.get("tile.n", "?"), rest)
        pairs[key][v] = min(t, pairs[key].get(v, math.inf))
    by_shape = defaultdict(list)
    for (_, dtype, shape, layout, tile, _), v in pairs.items():
        if a in v and b in v:
            by_shape[(shape, layout, dtype, tile)].append(v[b] / v[a])
    if not by_shape:
        print("gemm_pairs: no two rows differ only in %s = %s / %s" % (field, a, b), file=sys.stderr)
        return 1
    every = []
    for (shape, layout, dtype, tile), r in sorted(by_shape.items()):
        every += r
        mean = math.exp(sum(map(math.log, r)) / len(r))
        print("%6d x %6d x %6d  b%-3s %-4s %-8s %3d pair(s)  %s=%s / %s=%s: %.3f  [%s]" % (
            shape + (layout, dtype, tile, len(r), field, b, field, a, mean, " ".join("%.2f" % x for x in r))))
    print("all: %d pair(s), %s=%s / %s=%s geomean %.3f" % (len(every), field, b, field, a,
                                                      math.exp(sum(map(math.log, every)) / len(every))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
