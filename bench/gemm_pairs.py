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
and line); 1 if no two rows pair."""
import math
import os
import re
import sys
from collections import defaultdict

SHAPE = re.compile(r"(\w)=(\d+)")


def read(path, field, a, b, pairs):
    """Adds path's rows to pairs: {(file, dtype, shape, config without field): {value: time}}."""
    with open(path) as fh:
        for no, line in enumerate(fh, 1):
            f = line.rstrip("\n").split("\t")
            try:
                if len(f) != 4:
                    raise ValueError
                dtype, shape, cfg, t = f[0], f[1], f[2], float(f[3])
                if not (math.isfinite(t) and t > 0):
                    raise ValueError
                kv = dict(x.split("=", 1) for x in cfg.split())
                dims = dict(SHAPE.findall(shape))
                if not {"m", "n", "k"} <= dims.keys():
                    raise ValueError
            except ValueError:
                raise ValueError("%s:%d: not dtype, shape, config, time_us: %r" % (path, no, line[:120])) from None
            v = kv.pop(field, None)
            if v not in (a, b):
                continue
            rest = " ".join("%s=%s" % kw for kw in sorted(kv.items()))
            key = (os.path.basename(path), dtype, (int(dims["m"]), int(dims["n"]), int(dims["k"])), kv.get("b_layout", "row"),
                   kv.get("tile.m", "?") + "x" + kv.get("tile.n", "?"), rest)
            slot = pairs[key]
            slot[v] = min(t, slot.get(v, math.inf))


def main(argv):
    if len(argv) < 5:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        print("usage: gemm_pairs.py FIELD A B ROWS.tsv...", file=sys.stderr)
        return 2
    field, a, b, paths = argv[1], argv[2], argv[3], argv[4:]
    if a == b:
        print("gemm_pairs: A and B are both %r: nothing to compare" % a, file=sys.stderr)
        return 2
    pairs = defaultdict(dict)
    for p in paths:
        try:
            read(p, field, a, b, pairs)
        except OSError as e:
            print("gemm_pairs: %s: %s" % (p, e.strerror), file=sys.stderr)
            return 2
        except ValueError as e:
            print("gemm_pairs: %s" % e, file=sys.stderr)
            return 2
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
