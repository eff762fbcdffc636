#!/usr/bin/env python3
"""bench/auto_rows.py: issue 18's check of "auto" for the row families on the GPU machine.

For every shape of the published set (bench/auto/grid.py: the sweep's shapes) and the shapes off
the grid, per variant (row_softmax, row_reduce sum / max, rmsnorm without / with the residual):
  (a) rule   the rule's choice: an empty tuning DB and WEFT_AUTO_TABLE=none;
  (b) auto   the auto choice with the table (WEFT_AUTO_TABLE=TABLE) and an empty DB, as a user
             without first-use tuning gets it;
  (c) best   the sweep's best for that shape, from the DB `weft tune` filled (swept shapes only);
  (d) torch  torch.softmax, torch.sum / torch.amax (dim 1), torch.nn.functional.rms_norm (with the
             residual: h = x + r first),
all timed in this one process the same way: CUDA events around each launch, the GPU held back by
a sleep kernel so the host enqueues every timed launch before the GPU reaches them (the host's
launch path is not timed), warm-up, the median; inputs rotated through enough copies to defeat
the 60 MB L2, as weft run does (measure_rotation_sets).  Each weft kernel is checked against torch
in float64 (poisoned output first) before it is timed.  Prints a table: the ratios auto/best
(target >= 0.90) and weft/torch (target >= 1.0 where the kernel moves >= 8 MB), misses flagged.

Why the Python package rather than `weft run --auto`: one process holds torch and weft, so both
are timed by the same code on the same tensors; the inputs are made on the GPU (torch) instead of
weft run's host fill + copy of the whole input per run (seconds at the 2-4 GB shapes, for every
config); and the choosing and compiling happens first in parallel worker processes on the 16
cores, so the timing process only loads cached kernels.  The choice is the package's
Context.auto (weft_auto_choose_string), the call `weft run --auto` makes.

  PYTHONPATH=build/python python3 bench/auto_rows.py --db DB --table TABLE [--jobs 16] [--budget S]
                             [--variant V] [--limit N] [--iters 30] [--dry-run] [--out DIR]
--dry-run: no GPU, no torch, no weft: prints the shapes and what would be chosen, compiled and timed.
"""
import argparse, ctypes, json, os, sqlite3, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "auto"))
import grid  # noqa: E402

MB = 1 << 20
L2_ROTATE = 192 << 20          # measure.c's measure_rotation_sets: 3 x L2 per rotation, <= 16 sets


def user_config(variant, dtype):
    """What a user writes: the family and the key fields, every other field open."""
    fam, keys = grid.VARIANTS[variant]
    return dict(keys, family=fam, dtype=dtype)


def cases(variants, limit):
    out = []
    for v in variants:
        pub = [(dt, r, c, "grid" if (r in grid.TOKENS and c in grid.WIDTHS) else "results")
               for dt, r, c in grid.published(v)]
        off = [(dt, r, c, "off") for dt, r, c in grid.off_grid(v)]
        lim = [(dt, r, c, "limit") for dt, r, c in grid.limit_cases(v)]   # auto must refuse these
        for dt, r, c, tag in (pub + off)[:limit or None] + lim:
            out.append({"variant": v, "family": grid.VARIANTS[v][0], "dtype": dt, "rows": r, "cols": c, "tag": tag,
                        "bytes": grid.inputs(v, dt, r, c)[1]})
    return out


def key(cs):
    return "%s/%s/%dx%d" % (cs["variant"], cs["dtype"], cs["rows"], cs["cols"])


# ---- choosing (worker processes: no torch, no launch) ---------------------------------------------

def choose_worker(args):
    """--choose: the choice for each case of the slice (Context.auto: weft_auto_choose_string, the
    call `weft run --auto` makes), compiled once into the kernel cache the timing process reads.
    Writes JSON lines to --choose-out."""
    import weft
    ctx = weft.Context()
    all_cases = cases(args.variant or list(grid.VARIANTS), args.limit)
    lo, hi = (int(x) for x in args.slice.split(":"))
    with open(args.choose_out, "w") as f:
        for cs in all_cases[lo:hi]:
            r = {"key": key(cs)}
            try:
                a = ctx.auto(user_config(cs["variant"], cs["dtype"]), {"rows": cs["rows"], "cols": cs["cols"]},
                             db=args.choose_db)
            except Exception as e:   # a shape outside every limit: the message names it
                r["error"] = str(e)
                f.write(json.dumps(r) + "\n")
                continue
            r.update(source=a.source, detail=a.detail, time_us=a.time_us, text=a.configs[0], name=a.names[0])
            t0 = time.time()
            try:
                if not args.no_compile:
                    a.compile(0).close()
                r["compile_s"] = round(time.time() - t0, 3)
            except Exception as e:   # the timing process reports it again, per shape
                r["compile_error"] = str(e)
            a.close()
            f.write(json.dumps(r) + "\n")
            f.flush()


def choose_all(args, which, table, db, all_cases):
    """Runs --jobs workers over the cases with this environment; {key: choice}."""
    env = dict(os.environ, WEFT_AUTO_TABLE=table)
    env.pop("WEFT_AUTOTUNE", None)
    n = len(all_cases)
    jobs = max(1, min(args.jobs, n))
    tmp = tempfile.mkdtemp(prefix="auto_rows_%s_" % which, dir=args.out)
    procs = []
    for j in range(jobs):
        lo, hi = n * j // jobs, n * (j + 1) // jobs
        out = os.path.join(tmp, "%d.jsonl" % j)
        # an empty DB per worker (the chooser reads it; nothing is recorded without first-use tuning)
        cmd = [sys.executable, os.path.abspath(__file__), "--choose", "--slice", "%d:%d" % (lo, hi),
               "--choose-out", out, "--choose-db", "%s.%d" % (db, j)]
        if args.limit:
            cmd += ["--limit", str(args.limit)]
        for v in args.variant or []:
            cmd += ["--variant", v]
        procs.append((subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out))
    got = {}
    for p, out in procs:
        log = p.communicate()[0]
        if p.returncode:
            print("# choose (%s) worker failed, rc %d:\n%s" % (which, p.returncode, log[-2000:]), flush=True)
        if os.path.exists(out):
            for line in open(out):
                r = json.loads(line)
                got[r["key"]] = r
    return got


# ---- the sweep's best, from the tuning DB --------------------------------------------------------

def sweep_best(db, cs):
    """(time_us, base text, [sets]) of the fastest row `weft tune` stored for this variant's sweep
    at this shape, or None.  The DB's key has no op / residual, so rows are taken from this
    variant's own sweep file (the sweep column)."""
    if not db or not os.path.exists(db):
        return None
    want = grid.sweep_name(cs["variant"], cs["dtype"]) + ".lua"
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        rows = con.execute("SELECT time_us, base, config, sweep FROM results WHERE family = ? AND dtype = ? AND shape = ?"
                           " ORDER BY time_us", (cs["family"], cs["dtype"], "cols=%d rows=%d" % (cs["cols"], cs["rows"])))
        for t, base, cfg, sweep in rows:
            if os.path.basename(sweep) == want:
                return t, base, [s for s in cfg.split("\n") if s]
    finally:
        con.close()
    return None


def compile_sets(ctx, base, sets, name):
    """A DB row's kernel: its sweep's base text with its set list, as weft tune built it."""
    from weft import _lib
    lib, k = _lib.lib, ctypes.c_void_p()
    ov, n = _lib.strings(sets)
    st = lib.weft_compile_string(ctx._handle(), name.encode(), base.encode(), ov, n, ctypes.byref(k))
    if st:
        raise RuntimeError(_lib.text(lib.weft_ctx_error(ctx._handle())))
    return ctx._kernel(k)


# ---- timing (the one GPU process) ----------------------------------------------------------------

class Bench:
    def __init__(self, iters):
        import torch
        import weft
        from weft import _lib
        self.torch, self.weft, self._lib = torch, weft, _lib
        self.ctx = weft.Context()
        self.iters = iters
        self.dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}

    def compile_text(self, text, name):
        return self.ctx.compile_source(text, name)

    def compile_sets(self, base, sets, name):
        return compile_sets(self.ctx, base, sets, name)

    def inputs(self, cs):
        """nsets input sets (rotation), each a dict of tensors."""
        torch = self.torch
        dt, rows, cols = self.dt[cs["dtype"]], cs["rows"], cs["cols"]
        per = cs["bytes"]
        nsets = 1 if per >= L2_ROTATE else min(16, -(-L2_ROTATE // max(per, 1)))
        g = torch.Generator(device="cuda").manual_seed(1234)
        sets = []
        for _ in range(nsets):
            lo, hi = (-8, 8) if cs["family"] == "row_softmax" else (-1, 1)
            s = {"x": torch.empty(rows, cols, device="cuda", dtype=dt).uniform_(lo, hi, generator=g)}
            if cs["family"] == "row_softmax":
                s["y"] = torch.empty_like(s["x"])
            elif cs["family"] == "row_reduce":
                s["out"] = torch.empty(rows, device="cuda", dtype=torch.float32)
            else:
                s["y"] = torch.empty_like(s["x"])
                s["w"] = torch.empty(cols, device="cuda", dtype=dt).uniform_(0.5, 1.5, generator=g)
                if cs["variant"] == "rmsnorm_res":
                    s["r"] = torch.empty_like(s["x"]).uniform_(-1, 1, generator=g)
            sets.append(s)
        return sets

    def torch_op(self, cs, s):
        torch = self.torch
        v = cs["variant"]
        if v == "row_softmax":
            return lambda: torch.softmax(s["x"], dim=-1)
        if v == "row_reduce_sum":
            return lambda: torch.sum(s["x"], dim=1)
        if v == "row_reduce_max":
            return lambda: torch.amax(s["x"], dim=1)
        F = torch.nn.functional
        if v == "rmsnorm":
            return lambda: F.rms_norm(s["x"], (cs["cols"],), s["w"], 1e-6)
        return lambda: F.rms_norm(s["x"] + s["r"], (cs["cols"],), s["w"], 1e-6)

    def weft_op(self, k, cs, s):
        m = k.manifest
        for name, v in (("rows", cs["rows"]), ("cols", cs["cols"])):
            why = m.check_size(name, v)
            if why:
                raise RuntimeError("%s = %d: %s" % (name, v, why))
        vals = []
        for a in m.args:
            if a.name in s:
                vals.append(s[a.name].data_ptr())
            elif a.name in ("rows", "cols"):
                vals.append(cs[a.name])
            elif a.name == "eps":
                vals.append(1e-6)
            else:
                raise RuntimeError("kernel %s takes %s, which this bench does not know" % (m.name, a.name))
        stream = self.torch.cuda.current_stream().cuda_stream
        return lambda: k.launch(*vals, stream=stream)

    def check(self, k, cs, s):
        """One launch on poisoned outputs: every output written (no NaN left), and the first and
        last 128 rows against torch in float64.  Returns None or what is wrong."""
        torch = self.torch
        out = s["y"] if "y" in s else s["out"]
        out.fill_(float("nan"))
        r0 = s["r"].clone() if "r" in s else None
        self.weft_op(k, cs, s)()
        torch.cuda.synchronize()
        if torch.isnan(out).any():
            return "%d outputs unwritten or NaN" % int(torch.isnan(out).sum())
        rows = cs["rows"]
        idx = torch.arange(rows, device="cuda") if rows <= 256 else \
            torch.cat([torch.arange(128, device="cuda"), torch.arange(rows - 128, rows, device="cuda")])
        x = s["x"][idx].double()
        out = out[idx]
        if r0 is not None:
            r0, r1 = r0[idx], s["r"][idx]
        v = cs["variant"]
        if v == "row_softmax":
            want = torch.softmax(x, dim=-1)
        elif v == "row_reduce_sum":
            want = x.sum(dim=1)
        elif v == "row_reduce_max":
            want = x.amax(dim=1)
        else:
            h = x + r0.double() if r0 is not None else x
            want = h * torch.rsqrt((h * h).mean(dim=1, keepdim=True) + 1e-6) * s["w"].double()
        got = out.double()
        tol = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}[cs["dtype"]]
        if v == "row_reduce_sum":
            # f32 accumulation: each thread sums its stretch of the row in order, then a tree
            scale = x.abs().sum(dim=1) * 4e-5 + 1e-6
        elif v == "row_softmax":
            scale = want.abs() * tol * 2 + 1e-7
        else:
            scale = want.abs() * tol * 2 + tol
        bad = ~((got - want).abs() <= scale)
        if r0 is not None:   # the residual sum h is written back into r
            hb = ~((r1.double() - (x + r0.double())).abs() <= (x + r0.double()).abs() * tol + tol)
            if hb.any():
                return "residual h: %d of %d wrong" % (int(hb.sum()), hb.numel())
            s["r"][idx] = r0
        if bad.any():
            i = int(bad.flatten().nonzero()[0])
            return "%d of %d wrong (first at %d: got %r, want %r)" % (int(bad.sum()), bad.numel(), i,
                                                                     float(got.flatten()[i]), float(want.flatten()[i]))
        return None

    def time(self, fns):
        """fns: one launch per input set.  Median us of self.iters launches, each between two events."""
        torch = self.torch
        # warm-up, then ~20 ms back to back (the clocks under load: every op here heats the same way)
        t0, n = time.time(), 0
        while n < max(5, len(fns)) or time.time() - t0 < 0.02:
            for f in fns:   # one round of the input sets, then wait: the queue never runs ahead
                f()
            n += len(fns)
            torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(self.iters)]
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(3_000_000)   # ~1.5 ms: the host queues every timed launch before the GPU gets there
        for i, (a, b) in enumerate(ev):
            a.record()
            fns[i % len(fns)]()
            b.record()
        torch.cuda.synchronize()
        t = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
        return t[len(t) // 2]


def run(args):
    all_cases = cases(args.variant or list(grid.VARIANTS), args.limit)
    os.makedirs(args.out, exist_ok=True)
    empty = tempfile.mkdtemp(prefix="auto_rows_db_", dir=args.out)
    if args.dry_run:
        for cs in all_cases:
            b = sweep_best(args.db, cs)
            print("%-40s %-7s %8.1f MB  rule: choose(%s, WEFT_AUTO_TABLE=none)  auto: choose(WEFT_AUTO_TABLE=%s)  "
                  "best: %s  torch: %s" % (key(cs), cs["tag"], cs["bytes"] / MB, user_config(cs["variant"], cs["dtype"]),
                                           args.table, "%.2f us" % b[0] if b else "-", cs["variant"]))
        print("# %d shapes; choose with %d worker processes x 2 (rule, auto), then time rule / auto / best / torch "
              "(%d launches each) in one process" % (len(all_cases), args.jobs, args.iters))
        return 0
    t0 = time.time()
    rule = choose_all(args, "rule", "none", os.path.join(empty, "rule.db"), all_cases)
    auto = choose_all(args, "auto", args.table, os.path.join(empty, "auto.db"), all_cases)
    print("# chose and compiled %d + %d configs in %.1f s" % (len(rule), len(auto), time.time() - t0), flush=True)
    B = Bench(args.iters)
    res = []
    for cs in all_cases:
        k_ = key(cs)
        r = dict(cs, key=k_)
        if args.budget and time.time() - t0 > args.budget:
            r["error"] = "not timed: the budget (--budget %d s) ran out" % args.budget
            res.append(r)
            continue
        if cs["tag"] == "limit":   # outside every config's limits: both choices must fail, naming cols
            for which, got in (("rule", rule.get(k_)), ("auto", auto.get(k_))):
                err = (got or {}).get("error", "")
                r[which + "_refused"] = "cols" in err
                r[which + "_detail"] = err or "chose %s" % (got or {}).get("name")
            res.append(r)
            print("# %s: refused: rule %s, auto %s (%s)" % (k_, r["rule_refused"], r["auto_refused"],
                                                            r["auto_detail"][:200]), flush=True)
            continue
        try:
            sets = B.inputs(cs)
        except Exception as e:   # out of memory, say
            r["error"] = "inputs: %s" % e
            res.append(r)
            print("# %s: %s" % (k_, r["error"]), flush=True)
            continue
        kernels = {}
        for which, got in (("rule", rule.get(k_)), ("auto", auto.get(k_))):
            if not got:
                r[which + "_error"] = "no choice (worker failed)"
            elif "error" in got:
                r[which + "_error"] = got["error"]
            else:
                r[which + "_source"], r[which + "_detail"] = got["source"], got["detail"]
                r[which + "_name"] = got["name"]
                try:
                    kernels[which] = B.compile_text(got["text"], "<%s %s>" % (which, k_))
                except Exception as e:
                    r[which + "_error"] = "compile: %s" % e
        best = sweep_best(args.db, cs)
        if best:
            r["best_tune_us"] = best[0]
            try:
                kernels["best"] = B.compile_sets(best[1], best[2], "<best %s>" % k_)
                r["best_sets"] = " ".join(best[2])
            except Exception as e:
                r["best_error"] = "compile: %s" % e
        for which, k in kernels.items():
            try:
                why = B.check(k, cs, sets[0])
                if why:
                    r[which + "_error"] = "WRONG: " + why
                    continue
                r[which + "_us"] = B.time([B.weft_op(k, cs, s) for s in sets])
            except Exception as e:
                r[which + "_error"] = str(e)[:300]
        try:
            r["torch_us"] = B.time([B.torch_op(cs, s) for s in sets])
        except Exception as e:
            r["torch_error"] = str(e)[:300]
        for k in kernels.values():
            k.close()
        del sets
        B.torch.cuda.empty_cache()
        res.append(r)
        print("# %s" % line(r), flush=True)
    with open(os.path.join(args.out, "auto_rows.json"), "w") as f:
        json.dump(res, f, indent=1)
    table(res)
    print("# %d shapes in %.1f s; JSON: %s" % (len(res), time.time() - t0, os.path.join(args.out, "auto_rows.json")))
    return 0


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def flags(r):
    if r["tag"] == "limit":
        return "" if r.get("rule_refused") and r.get("auto_refused") else "NOT REFUSED: %s" % r.get("auto_detail")
    f = []
    a, b, t = r.get("auto_us"), r.get("best_us"), r.get("torch_us")
    if ratio(b, a) is not None and ratio(b, a) < 0.90:
        f.append("MISS best")
    if r["bytes"] >= 8e6 and ratio(t, a) is not None and ratio(t, a) < 1.0:
        f.append("MISS torch")
    # the rule (or auto) faster than the sweep's best by more than noise: the sweep's pruning cut
    # out what wins there, so its "best" is not the best at this shape
    if b is not None and min(x for x in (a, r.get("rule_us"), b) if x is not None) < 0.97 * b:
        f.append("BEATS sweep")
    if r.get("error"):
        f.append(r["error"])
    for w in ("rule", "auto", "best", "torch"):
        if r.get(w + "_error"):
            f.append("%s: %s" % (w, r[w + "_error"][:120]))
    return "; ".join(f)


def fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


def line(r):
    return "%s %s %.1f MB: rule %s us, auto %s us (%s), best %s us, torch %s us; auto/best %s, weft/torch %s %s" % (
        r["key"], r["tag"], r["bytes"] / MB, fmt(r.get("rule_us")), fmt(r.get("auto_us")), r.get("auto_source", "-"),
        fmt(r.get("best_us")), fmt(r.get("torch_us")), fmt(ratio(r.get("best_us"), r.get("auto_us")), "%.3f"),
        fmt(ratio(r.get("torch_us"), r.get("auto_us")), "%.2f"), flags(r))


def table(res):
    print()
    print("| variant | dtype | rows x cols | set | MB moved | rule us | auto us | auto source | best us (sweep) | "
          "torch us | auto/best | auto/rule | weft/torch | flags |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    miss = {}
    for r in res:
        f = flags(r)
        for name in ("MISS best", "MISS torch", "BEATS sweep", "NOT REFUSED"):
            if name in f:
                miss[name] = miss.get(name, 0) + 1
        print("| %s | %s | %dx%d | %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["variant"], r["dtype"], r["rows"], r["cols"], r["tag"], r["bytes"] / MB, fmt(r.get("rule_us")),
            fmt(r.get("auto_us")), r.get("auto_source", "-"), fmt(r.get("best_us")), fmt(r.get("torch_us")),
            fmt(ratio(r.get("best_us"), r.get("auto_us")), "%.3f"), fmt(ratio(r.get("rule_us"), r.get("auto_us")), "%.3f"),
            fmt(ratio(r.get("torch_us"), r.get("auto_us")), "%.2f"), f or ""))
    print()
    print("auto/best = best us / auto us, auto/rule = rule us / auto us, weft/torch = torch us / auto us (above 1: "
          "auto is faster).")
    print("targets: auto >= 0.90 of the sweep's best at every swept shape; >= 1.0x torch where >= 8 MB moves. "
          "misses: %s" % (", ".join("%s %d" % kv for kv in sorted(miss.items())) or "none"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="the tuning DB the sweeps filled (the sweep's best)")
    ap.add_argument("--table", default="tune/h200.tsv", help="the table auto reads (WEFT_AUTO_TABLE)")
    ap.add_argument("--variant", action="append", choices=list(grid.VARIANTS))
    ap.add_argument("--limit", type=int, default=0, help="first N shapes per variant")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=16, help="worker processes per choice (rule, auto)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/auto_rows"))
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--budget", type=int, default=0, help="seconds: no shape starts past it (0: none)")
    ap.add_argument("--choose", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--slice", help=argparse.SUPPRESS)
    ap.add_argument("--choose-out", help=argparse.SUPPRESS)
    ap.add_argument("--choose-db", help=argparse.SUPPRESS)
    ap.add_argument("--no-compile", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.choose:
        return choose_worker(args)
    if args.table != "none":
        args.table = os.path.abspath(args.table)
    if args.db:
        args.db = os.path.abspath(args.db)
    args.out = os.path.abspath(args.out)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
