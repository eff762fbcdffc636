#!/usr/bin/env python3
"""bench/gemm_table_rows.py [--evaluate] [--shapes-of TABLE] ROWS.tsv... > rows: family gemm's
rows of the shipped tuning table (tune/h200.tsv: family, dtype, ranks, shape, time_us, config),
chosen over several runs.

Each ROWS file is one run's measured candidates (bench/data, as bench/gemm_rule_regret.lua reads
them: dtype TAB "k=.. m=.. n=.." TAB the config's "key=value" fields TAB time_us), typically one
machine each.  Per dtype, shape and B layout, of the configs every file measured, the one whose
times have the smallest geometric mean; its time_us is that geometric mean.  A machine's fastest
config is often another machine's second (bench/RESULTS.md, thirteenth session, --evaluate).  A
shape that not every file measured gets no row (named on stderr).
  --shapes-of TABLE  only the dtypes, shapes and B layouts that TABLE's gemm rows have (the
                     published set, where the runs also measured others);
  --evaluate         no rows: each file held out in turn, how the choice over the others ran there
                     against that file's fastest, beside a single other file's fastest config
                     (what a table from one run gives).

Exit 0; 2 on a bad argument or row (named by its file and line: bench/gemm_rows.py); 1 if no
shape is in every file."""
import argparse
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_rows  # noqa: E402


def table_keys(path):
    """{(dtype, shape, b_layout)} of a tuning table's gemm rows."""
    keys = set()
    with open(path) as fh:
        for no, line in enumerate(fh, 1):
            f = line.rstrip("\n").split("\t")
            if f[0] != "gemm":
                continue
            kv = dict(x.split("=", 1) for x in f[5].split(";") if "=" in x) if len(f) == 6 else {}
            if "b_layout" not in kv:
                raise ValueError("%s:%d: a gemm row without b_layout: %r" % (path, no, line[:120]))
            keys.add((f[1], f[3], kv["b_layout"]))
    return keys


def leave_one_out(runs, nfiles):
    """Each file held out in turn: the config chosen over the other files (as the table rows are)
    and the one a single other file ran fastest, timed in the held-out file, over its fastest."""
    gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    multi, single = [], []
    for cfgs in runs.values():
        for held in range(nfiles):
            others = [i for i in range(nfiles) if i != held]
            best = min((v[held] for v in cfgs.values() if held in v), default=None)
            pool = [c for c, v in cfgs.items() if held in v and all(i in v for i in others)]
            if best is None or not pool:
                continue
            pick = min(pool, key=lambda c: (sum(math.log(cfgs[c][i]) for i in others), c))
            multi.append(cfgs[pick][held] / best)
            for i in others:
                one = min((c for c, v in cfgs.items() if held in v and i in v), key=lambda c: (cfgs[c][i], c))
                single.append(cfgs[one][held] / best)
    if not multi:
        return 1
    print("held out in turn over %d file(s): chosen over the others %.4fx the held-out file's fastest (%d shape-file(s)); "
          "one other file's fastest %.4fx (%d)" % (nfiles, gm(multi), len(multi), gm(single), len(single)))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="gemm_table_rows.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--evaluate", action="store_true", help="no rows: each file held out in turn")
    ap.add_argument("--shapes-of", metavar="TABLE", help="only the shapes TABLE's gemm rows have")
    ap.add_argument("rows", metavar="ROWS.tsv", nargs="+", help="one run's measured rows each (bench/data)")
    args = ap.parse_args(argv[1:])
    if len(set(args.rows)) != len(args.rows):
        print("gemm_table_rows: a ROWS file given twice: each file is one run", file=sys.stderr)
        return 2
    try:
        only = table_keys(args.shapes_of) if args.shapes_of else None
        rows = gemm_rows.read(args.rows)
    except OSError as e:
        print("gemm_table_rows: %s: %s" % (args.shapes_of, e.strerror), file=sys.stderr)
        return 2
    except ValueError as e:   # (gemm_rows.RowsError too)
        print("gemm_table_rows: %s" % e, file=sys.stderr)
        return 2
    index = {p: i for i, p in enumerate(args.rows)}
    runs = defaultdict(dict)   # (dtype, shape, layout) -> config -> {file index: time}
    for path, dtype, shape, _, kv, t in rows:
        key = (dtype, shape, kv.get("b_layout", "row"))
        if only is not None and key not in only:
            continue
        times = runs[key].setdefault(";".join("%s=%s" % f for f in sorted(kv.items())), {})
        times[index[path]] = min(t, times.get(index[path], math.inf))
    if args.evaluate:
        return leave_one_out(runs, len(args.rows))
    out = []
    for (dtype, shape, layout), cfgs in runs.items():
        every = {c: v for c, v in cfgs.items() if len(v) == len(args.rows)}
        if not every:
            print("gemm_table_rows: %s %s b_layout=%s: no config measured in every file" % (dtype, shape, layout),
                  file=sys.stderr)
            continue
        mean = {c: math.exp(sum(math.log(t) for t in v.values()) / len(v)) for c, v in every.items()}
        best = min(mean, key=lambda c: (mean[c], c))
        out.append("gemm\t%s\t1\t%s\t%.3f\t%s" % (dtype, shape, mean[best], best))
    if not out:
        return 1
    for row in sorted(out):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
