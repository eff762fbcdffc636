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

Exit 0; 2 on a bad argument or row (named by its file and line); 1 if no shape is in every file."""
import math
import re
import sys
from collections import defaultdict

SHAPE = re.compile(r"^k=(\d+) m=(\d+) n=(\d+)$")


def read(path, runs, i):
    with open(path) as fh:
        for no, line in enumerate(fh, 1):
            f = line.rstrip("\n").split("\t")
            try:
                if len(f) != 4 or not SHAPE.match(f[1]):
                    raise ValueError
                t = float(f[3])
                if not (math.isfinite(t) and t > 0):
                    raise ValueError
                kv = dict(x.split("=", 1) for x in f[2].split())
                if "b_layout" not in kv:
                    raise ValueError
            except ValueError:
                raise ValueError("%s:%d: not dtype, shape, config, time_us: %r" % (path, no, line[:120])) from None
            cfg = ";".join("%s=%s" % kw for kw in sorted(kv.items()))
            times = runs[(f[0], f[1], kv["b_layout"])].setdefault(cfg, {})
            times[i] = min(t, times.get(i, math.inf))


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


def leave_one_out(runs, nfiles, only):
    """Each file held out in turn: the config chosen over the other files (as the table rows are)
    and the one a single other file ran fastest, timed in the held-out file, over its fastest."""
    gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    multi, single = [], []
    for key, cfgs in runs.items():
        if only is not None and key not in only:
            continue
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
    args, only = argv[1:], None
    evaluate = args[:1] == ["--evaluate"]
    if evaluate:
        args = args[1:]
    try:
        if args[:1] == ["--shapes-of"]:
            if len(args) < 2:
                raise ValueError("--shapes-of needs a table")
            only, args = table_keys(args[1]), args[2:]
    except OSError as e:
        print("gemm_table_rows: %s: %s" % (args[1], e.strerror), file=sys.stderr)
        return 2
    except ValueError as e:
        print("gemm_table_rows: %s" % e, file=sys.stderr)
        return 2
    paths = args
    if not paths:
        print("usage: gemm_table_rows.py [--evaluate] [--shapes-of TABLE] ROWS.tsv... > rows", file=sys.stderr)
        return 2
    runs = defaultdict(dict)   # (dtype, shape, layout) -> config -> {file index: time}
    for i, p in enumerate(paths):
        try:
            read(p, runs, i)
        except OSError as e:
            print("gemm_table_rows: %s: %s" % (p, e.strerror), file=sys.stderr)
            return 2
        except ValueError as e:
            print("gemm_table_rows: %s" % e, file=sys.stderr)
            return 2
    if evaluate:
        return leave_one_out(runs, len(paths), only)
    out = []
    for (dtype, shape, layout), cfgs in runs.items():
        if only is not None and (dtype, shape, layout) not in only:
            continue
        every = {c: v for c, v in cfgs.items() if len(v) == len(paths)}
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
