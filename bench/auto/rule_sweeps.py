#!/usr/bin/env python3
"""bench/auto/rule_sweeps.py: sweeps of the rule's own candidates at the shapes where the full sweep
was narrow (at most NARROW candidates measured: the large shapes of bench/auto/grid.py's levels 3-4).
The table (tune/h200.tsv) is exported from the DB after these ran too, so a shape's row is the best
of the sweep's and the rule's candidates, every one measured by `weft tune` the same way.

  python3 bench/auto/rule_sweeps.py --db DB [--weft build/weft] [--out bench/auto/rule]

Writes one sweep file per (variant, dtype, shape): base = the variant's user config, space = one
value per open field for each of the rule's first 4 candidates (`weft suggest --candidates 3` with
no table and no database), `where` keeping exactly those candidates.
"""
import argparse, os, re, sqlite3, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import grid  # noqa: E402

NARROW = 8


def lua(v):
    if v in ("true", "false"):
        return v
    try:
        float(v)
        return v
    except ValueError:
        pass
    return '"%s"' % v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--weft", default="build/weft")
    ap.add_argument("--out", default=os.path.join(HERE, "rule"))
    a = ap.parse_args()
    db = sqlite3.connect(a.db)
    counts = {(f, d, s): n for f, d, s, n in db.execute(
        "SELECT family, dtype, shape, count(*) FROM results GROUP BY family, dtype, shape")}
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ, WEFT_AUTO_TABLE="none", WEFT_TUNE_DB=os.path.join(a.out, "none.db"))
    n = 0
    for v, (fam, keys) in grid.VARIANTS.items():
        for dt, r, c in grid.published(v):
            shape = "cols=%d rows=%d" % (c, r)
            if counts.get((fam, dt, shape), 0) > NARROW * (2 if fam == "row_reduce" or fam == "rmsnorm" else 1):
                continue
            cfg = dict(keys, family=fam, dtype=dt)
            text = "return { %s }" % ", ".join("%s = %s" % (k, lua(str(x).lower() if isinstance(x, bool) else str(x)))
                                              for k, x in sorted(cfg.items()))
            path = os.path.join(a.out, "%s_%s_%dx%d.lua" % (v, dt, r, c))
            cfgfile = path + ".cfg"
            with open(cfgfile, "w") as f:
                f.write(text + "\n")
            p = subprocess.run([a.weft, "suggest", cfgfile, "%dx%d" % (r, c), "--candidates", "3"], env=env,
                               capture_output=True, text=True)
            os.unlink(cfgfile)
            if p.returncode:
                print("skip %s: %s" % (path, p.stderr.strip()[:200]))
                continue
            cands = []
            for line in p.stdout.splitlines():
                m = re.match(r"^(?:chosen|candidate \d+: \S+): (.*)$", line)
                if m:
                    cands.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
            if not cands:
                continue
            fields = sorted({k for cd in cands for k in cd})
            space = ", ".join("%s = { %s }" % (k, ", ".join(sorted({lua(cd[k]) for cd in cands if k in cd})))
                              for k in fields)
            conds = " or ".join("(%s)" % " and ".join("c.%s == %s" % (k, lua(cd[k])) for k in sorted(cd)) for cd in cands)
            with open(path, "w") as f:
                f.write("-- the rule's first %d candidates for %s %s %s (bench/auto/rule_sweeps.py)\n" % (len(cands), v, dt, shape))
                f.write("return {\n  base = %s,\n  space = { %s },\n  where = function(c) return %s end,\n"
                        "  shapes = { { rows = %d, cols = %d } },\n}\n" % (text[7:], space, conds, r, c))
            n += 1
    print("wrote %d sweeps to %s" % (n, a.out))


if __name__ == "__main__":
    main()
