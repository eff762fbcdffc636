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
  python3 bench/gemm_pairs.py pdl false true --where cluster.m=2 --where m=256..2048 bench/data/*.tsv

--where KEY=VALUE keeps the pairs whose other fields have KEY = VALUE (the config's fields, as the
rows spell them: cluster.m=2, split_k=1, swap_ab=true; a field a row leaves out is the family's
default only as the row's run had it, so such a row does not match); KEY=LO..HI, a number from
LO to HI; m, n and k are the shape's.  Repeatable: every one must hold.

Exit 0; 2 on a bad argument or a row that is not dtype, shape, config, time (named by its file
and line: bench/gemm_rows.py); 1 if no two rows pair."""
import argparse
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_rows  # noqa: E402


def shown(text, most=60):
    """text as a message quotes it: cut past `most` characters (a refusal need not echo 5000)."""
    return repr(text if len(text) <= most else text[:most] + "...")


def condition(text, field):
    """(key, test of a row's value) from KEY=VALUE or KEY=LO..HI; ValueError says what is wrong."""
    key, eq, value = text.partition("=")
    if not eq or not key or not value:
        raise ValueError("%s: KEY=VALUE or KEY=LO..HI" % shown(text))
    if key == field:
        raise ValueError("%s: %s is the field compared; --where filters the others" % (shown(text), shown(key)))
    lo, dots, hi = value.partition("..")
    if not dots:
        return key, lambda v: v == value
    try:
        lo, hi = float(lo), float(hi)
    except ValueError:
        raise ValueError("%s: LO..HI are numbers" % shown(text))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError("%s: LO..HI are finite numbers" % shown(text))
    if lo > hi:
        raise ValueError("%s: LO above HI" % shown(text))

    def between(v):
        try:
            return v is not None and lo <= float(v) <= hi
        except ValueError:
            return False
    return key, between


def main(argv):
    ap = argparse.ArgumentParser(prog="gemm_pairs.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("field", metavar="FIELD", help="the config field that differs (pdl, cluster.m, stages, ...)")
    ap.add_argument("a", metavar="A", help="its value in the baseline")
    ap.add_argument("b", metavar="B", help="its value in the other row")
    ap.add_argument("rows", metavar="ROWS.tsv", nargs="+", help="measured rows (bench/data)")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                    help="only pairs with KEY = VALUE (or KEY=LO..HI) in their other fields or shape (m, n, k)")
    args = ap.parse_args(argv[1:])
    field, a, b = args.field, args.a, args.b
    if a == b:
        print("gemm_pairs: A and B are both %r: nothing to compare" % a, file=sys.stderr)
        return 2
    try:
        where = [condition(w, field) for w in args.where]
    except ValueError as e:
        print("gemm_pairs: --where %s" % e, file=sys.stderr)
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
        shape = dict(zip("mnk", (str(x) for x in dims)))
        if not all(ok(kv.get(key, shape.get(key))) for key, ok in where):
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
    print("all: %d pair(s), %s=%s / %s=%s geomean %.3f; %s=%s faster in %d" % (
        len(every), field, b, field, a, math.exp(sum(map(math.log, every)) / len(every)), field, b,
        sum(1 for x in every if x < 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
