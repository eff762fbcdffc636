#!/usr/bin/env python3
"""bench/auto_tuned.py: first-use tuning (WEFT_AUTOTUNE=1) against the sweep's best, on the GPU machine.

For shapes of bench/auto_rows.py's JSON (a run that had the sweep's best, "best_sets"), each in
one process: the weft.torch op is called once with WEFT_AUTOTUNE=1, no shipped table
(WEFT_AUTO_TABLE=none) and a fresh tuning DB, so the tuning starts from the rule's choice and its
neighbours, within the default budget (2 s, compiles included). Then the kernel the DB now
answers for the shape and the sweep's best config are timed the same way as in auto_rows.py
(CUDA events around each launch, median), in this process. Target: tuned >= 0.97 of the best.

  PYTHONPATH=build/python python3 bench/auto_tuned.py --json auto_rows.json [--limit N] [--out DIR]
"""
import argparse, json, math, os, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True, help="auto_rows.py's JSON (the shapes it timed)")
    ap.add_argument("--db", required=True, help="the tuning DB of the full sweeps (the sweep's best)")
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--budget", type=int, default=240, help="seconds: no shape starts past it")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/auto_tuned"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="weft-tuned-")
    os.environ.update(WEFT_AUTOTUNE="1", WEFT_AUTO_TABLE="none", WEFT_TUNE_DB=os.path.join(tmp, "tune.db"))
    import auto_rows
    import weft
    import weft.torch as wt
    from weft.torch import configs, ops
    rows = [r for r in json.load(open(a.json)) if r.get("best_sets") is not None and r["tag"] != "limit"]
    # spread over the variants and sizes: every k-th swept shape
    step = max(1, len(rows) // a.limit)
    rows = rows[::step][:a.limit]
    b = auto_rows.Bench(30)
    out, t0 = [], time.time()
    for cs in rows:
        if time.time() - t0 > a.budget:
            break
        v, dt, R, C = cs["variant"], cs["dtype"], cs["rows"], cs["cols"]
        sets = b.inputs(cs)
        s = sets[0]
        ops._plans.clear()
        t1 = time.time()
        if v == "row_softmax":
            wt.softmax(s["x"])
            cfg, shape = configs.softmax(dt, R, C)
        elif v.startswith("row_reduce"):
            op = "sum" if v.endswith("sum") else "max"
            wt.row_reduce(s["x"], op)
            cfg, shape = configs.row_reduce(dt, op, R, C)
        else:
            res = v == "rmsnorm_res"
            wt.rms_norm(s["x"], s["w"], eps=1e-6, residual=s["r"].clone() if res else None)
            cfg, shape = configs.rms_norm(dt, R, C, res)
        b.torch.cuda.synchronize()
        tune_s = time.time() - t1
        au = weft.auto(cfg, shape)
        k = au.compile(0)
        best = auto_rows.sweep_best(a.db, cs)
        if not best:
            continue
        kb = b.compile_sets(best[1], best[2], "<best %s>" % cs["key"])
        why = b.check(k, cs, s)
        t_tuned = b.time([b.weft_op(k, cs, x) for x in sets])
        t_best = b.time([b.weft_op(kb, cs, x) for x in sets])
        r = {"key": cs["key"], "source": au.source, "tuned": au.names[0], "tune_s": tune_s, "tuned_us": t_tuned,
             "best_us": t_best, "ratio": t_best / t_tuned, "check": why}
        out.append(r)
        print("%-36s %-17s tuned %9.1f us  best %9.1f us  best/tuned %.3f  (tuning %.2f s)%s" % (
            r["key"], au.source, t_tuned, t_best, r["ratio"], tune_s, "  CHECK: " + why if why else ""), flush=True)
    os.makedirs(a.out, exist_ok=True)
    json.dump(out, open(os.path.join(a.out, "auto_tuned.json"), "w"), indent=1)
    if out:
        g = math.exp(sum(math.log(r["ratio"]) for r in out) / len(out))
        print("# %d shapes: best/tuned geomean %.3f, worst %.3f, below 0.97: %d; tuning took at most %.2f s" % (
            len(out), g, min(r["ratio"] for r in out), sum(1 for r in out if r["ratio"] < 0.97),
            max(r["tune_s"] for r in out)))


if __name__ == "__main__":
    main()
